// The fixtures of the UD and UC data-path cases (part of
// verbs_device_tests), shared by verbs_ud_test.cc, verbs_ud_sl_test.cc,
// verbs_ud_route_test.cc and the parent-domain cases of
// verbs_pdomain_objects_test.cc.
// Run inside a test-bed guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Ud*:Uc*'
// Two QPs of the device under test, in this one process, exchange traffic
// through one of the device's own RoCE v2 GIDs (same-host loopback): that
// of the guest's IPv4 address (SROCE_IP4), or of its IPv6 one (SROCE_IP6)
// where a fixture asks for it.
#ifndef SROCE_TESTS_VERBS_UD_FIXTURE_H
#define SROCE_TESTS_VERBS_UD_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/ip.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test::ud {

using namespace std::chrono_literals;

inline const auto kQuiet = slow(300ms);
inline constexpr uint32_t kQkey = 0x11223344;
inline constexpr uint32_t kGrh = 40;

// A registered buffer of n bytes, filled with b.
struct Region {
	Region(ibv_pd *pd, size_t n, uint8_t b) : mem(n ? n : 1, b)
	{
		mr.reset(ibv_reg_mr(pd, mem.data(), mem.size(),
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE));
	}
	ibv_sge sge(uint32_t off, uint32_t len)
	{
		return {reinterpret_cast<uintptr_t>(mem.data()) + off, len,
			mr->lkey};
	}
	std::vector<uint8_t> mem;
	Mr mr;
};

// Base of the UD and UC cases: device, PD, the own IPv4-mapped GID, one
// CQ per direction.
class Datagram : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_);
		if (family_ == AF_INET6) {
			const char *ip6 = std::getenv("SROCE_IP6");
			ASSERT_TRUE(ip6 && *ip6)
				<< "SROCE_IP6 not set: run me in the test bed";
			ASSERT_TRUE(gid_of_ip(ip6, gid_)) << ip6;
			gid_index_ = roce_v2_gid_index(ctx_.get(), gid_);
			ASSERT_GE(gid_index_, 0)
				<< "no RoCE v2 GID for " << ip6;
		} else {
			gid_index_ = ipv4_gid(ctx_.get(), gid_,
					      std::getenv("SROCE_IP4"));
			ASSERT_GE(gid_index_, 0)
				<< "no IPv4 RoCE v2 GID on the device";
		}
		scq_.reset(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
		rcq_.reset(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
		ASSERT_TRUE(scq_ && rcq_);
	}

	// A QP of the fixture's CQs in pd_, or in pd if given.
	Qp make_qp(ibv_qp_type type, uint32_t max_recv = 16,
		   ibv_pd *pd = nullptr)
	{
		ibv_qp_init_attr a{};
		a.send_cq = scq_.get();
		a.recv_cq = rcq_.get();
		a.qp_type = type;
		a.sq_sig_all = 1;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = max_recv;
		a.cap.max_send_sge = 2;
		a.cap.max_recv_sge = 2;
		return Qp(ibv_create_qp(pd ? pd : pd_.get(), &a));
	}

	// RESET -> INIT -> RTR -> RTS for a UD QP with qkey.
	::testing::AssertionResult ud_ready(ibv_qp *qp, uint32_t qkey = kQkey)
	{
		return ud_to_rts(qp, qkey, 0x123);
	}

	// Two UD QPs of the fixture's device, both in RTS.
	void make_ud_pair(Qp &a, Qp &b)
	{
		a = make_qp(IBV_QPT_UD);
		b = make_qp(IBV_QPT_UD);
		ASSERT_TRUE(a && b) << std::strerror(errno);
		ASSERT_TRUE(ud_ready(a.get()));
		ASSERT_TRUE(ud_ready(b.get()));
	}

	// An AH to dgid from the fixture's GID, or from the one at sgid_index.
	Ah make_ah(ibv_pd *pd, const ibv_gid &dgid, int sgid_index = -1)
	{
		ibv_ah_attr a = ah_attr(dgid, sgid_index < 0 ? gid_index_ :
							       sgid_index);
		return Ah(ibv_create_ah(pd, &a));
	}

	static int post_ud(ibv_qp *qp, uint64_t id, ibv_sge sge, ibv_ah *ah,
			   uint32_t dqpn, uint32_t qkey,
			   ibv_wr_opcode op = IBV_WR_SEND, uint32_t imm = 0)
	{
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.imm_data = htobe32(imm);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = dqpn;
		wr.wr.ud.remote_qkey = qkey;
		return ibv_post_send(qp, &wr, &bad);
	}

	uint32_t port_mtu() const { return 128u << port_.active_mtu; }

	// AF_INET or AF_INET6: which of the guest's addresses (SROCE_IP4,
	// SROCE_IP6) the fixture's GID is; a derived fixture sets it before
	// SetUp().
	int family_ = AF_INET;
	Context ctx_;
	Pd pd_;
	ibv_port_attr port_{};
	ibv_gid gid_{};
	int gid_index_ = -1;
	Cq scq_, rcq_;
};

// ---------------------------------------------------------------------
// UD

class Ud : public Datagram {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Datagram::SetUp());
		ASSERT_NO_FATAL_FAILURE(make_ud_pair(a_, b_));
		ah_ = make_ah(pd_.get(), gid_);
		ASSERT_TRUE(ah_) << "ibv_create_ah: " << std::strerror(errno);
	}

	// Sends len bytes from a to b and checks both completions, the GRH
	// area and the payload.
	void exchange(uint32_t len, ibv_wr_opcode op = IBV_WR_SEND)
	{
		Region src(pd_.get(), len, 0), dst(pd_.get(), kGrh + len, 0xee);
		for (uint32_t i = 0; i < len; i++)
			src.mem[i] = uint8_t(i * 7 + len);
		ASSERT_EQ(post_recv(b_.get(), 7, dst.sge(0, kGrh + len)), 0);
		ASSERT_EQ(post_ud(a_.get(), 9, src.sge(0, len), ah_.get(),
				  b_->qp_num, kQkey, op, 0xabcd0000 | len),
			  0);
		auto s = next_wc(scq_.get());
		ASSERT_TRUE(s) << "no send completion";
		EXPECT_EQ(s->status, IBV_WC_SUCCESS) << wc_str(*s);
		EXPECT_EQ(s->wr_id, 9u);
		EXPECT_EQ(s->opcode, IBV_WC_SEND);
		auto r = next_wc(rcq_.get());
		ASSERT_TRUE(r) << "no receive completion";
		ASSERT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
		EXPECT_EQ(r->wr_id, 7u);
		EXPECT_EQ(r->opcode, IBV_WC_RECV);
		EXPECT_EQ(r->byte_len, kGrh + len);
		EXPECT_EQ(r->qp_num, b_->qp_num);
		EXPECT_EQ(r->src_qp, a_->qp_num);
		EXPECT_TRUE(r->wc_flags & IBV_WC_GRH) << wc_str(*r);
		if (op == IBV_WR_SEND_WITH_IMM) {
			EXPECT_TRUE(r->wc_flags & IBV_WC_WITH_IMM);
			EXPECT_EQ(be32toh(r->imm_data), 0xabcd0000 | len);
		} else {
			EXPECT_FALSE(r->wc_flags & IBV_WC_WITH_IMM);
		}
		// IPv4: 20 bytes of anything, then the IPv4 header
		iphdr ip;
		std::memcpy(&ip, dst.mem.data() + 20, sizeof(ip));
		EXPECT_EQ(ip.version, 4);
		EXPECT_EQ(ip.protocol, IPPROTO_UDP);
		EXPECT_EQ(std::memcmp(&ip.saddr, gid_.raw + 12, 4), 0);
		EXPECT_EQ(std::memcmp(&ip.daddr, gid_.raw + 12, 4), 0);
		EXPECT_EQ(ntohs(ip.tot_len), 20 + 8 + 12 + 8 +
			  (op == IBV_WR_SEND_WITH_IMM ? 4 : 0) +
			  ((len + 3) & ~3u) + 4);
		EXPECT_EQ(std::memcmp(dst.mem.data() + kGrh, src.mem.data(), len),
			  0) << "payload";
		// the sender's address comes back out of the GRH
		ibv_ah_attr back{};
		EXPECT_EQ(ibv_init_ah_from_wc(ctx_.get(), 1, &*r,
					      reinterpret_cast<ibv_grh *>(
						      dst.mem.data()),
					      &back),
			  0);
		EXPECT_EQ(std::memcmp(back.grh.dgid.raw, gid_.raw, 16), 0);
	}

	Qp a_, b_;
	Ah ah_;
};

} // namespace sroce::test::ud

#endif
