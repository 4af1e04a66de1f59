// The service level of UD datagrams on a live RDMA device, over the
// guest's IPv4 and its IPv6 address, run inside a test-bed guest as root
// (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*UdL3*'
// RoCE v2 has no service level on the wire.  A receive completion's sl
// carries the packet's L3 type instead, as mlx5 reports it (2 RoCE v2 over
// IPv4, 1 over IPv6), through ibv_poll_cq() and ibv_wc_read_sl(); an
// address handle made from such a completion reaches its sender; and the
// sl of an address vector changes nothing on the wire
// (Documentation/admin-guide.md, "Device attributes": service level).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "verbs_ud_fixture.h"

namespace sroce::test::ud {
namespace {

constexpr uint32_t kLen = 64;
// DSCP 10 (AF11) and ECN 0: what every datagram of TransmitSlIsIgnored
// carries, whatever its address vector's sl.
constexpr uint8_t kTrafficClass = 0x28;

// The addresses and the traffic class (IPv4: the TOS) of the IP header in a
// received datagram's 40-byte GRH area.
struct Grh {
	int version;
	ibv_gid src, dst;
	uint8_t tclass;
};

Grh parse_grh(const uint8_t *g)
{
	Grh h{};

	if ((g[0] >> 4) == 6) {
		h.version = 6;
		h.tclass = uint8_t((g[0] & 0x0f) << 4 | g[1] >> 4);
		std::memcpy(h.src.raw, g + 8, 16);
		std::memcpy(h.dst.raw, g + 24, 16);
		return h;
	}
	// IPv4: 20 bytes of anything, then the IPv4 header
	h.version = g[20] >> 4;
	h.tclass = g[21];
	h.src.raw[10] = h.src.raw[11] = h.dst.raw[10] = h.dst.raw[11] = 0xff;
	std::memcpy(h.src.raw + 12, g + 32, 4);
	std::memcpy(h.dst.raw + 12, g + 36, 4);
	return h;
}

::testing::AssertionResult same_gid(const ibv_gid &got, const ibv_gid &want)
{
	char g[INET6_ADDRSTRLEN], w[INET6_ADDRSTRLEN];

	if (!std::memcmp(got.raw, want.raw, sizeof(got.raw)))
		return ::testing::AssertionSuccess();
	inet_ntop(AF_INET6, got.raw, g, sizeof(g));
	inet_ntop(AF_INET6, want.raw, w, sizeof(w));
	return ::testing::AssertionFailure() << g << ", want " << w;
}

// A second address of the guest's netdev, for the case's lifetime (the
// test bed gives each guest a /24 and a /64 of its own).
class ExtraAddress {
public:
	ExtraAddress(int family, const std::string &own)
	{
		const char *nd = std::getenv("SROCE_NETDEV");

		netdev_ = nd ? nd : "";
		ip_ = on_link(own, 79);
		prefix_ = family == AF_INET ? "/32" : "/128 nodad";
		added_ = !netdev_.empty() &&
			 !quiet_sh("ip addr add " + ip_ + prefix_ + " dev " + netdev_);
	}
	~ExtraAddress()
	{
		if (added_)
			quiet_sh("ip addr del " + ip_ + prefix_.substr(0, prefix_.find(' ')) +
			    " dev " + netdev_);
	}
	ExtraAddress(const ExtraAddress &) = delete;
	ExtraAddress &operator=(const ExtraAddress &) = delete;

	bool added() const { return added_; }
	const std::string &ip() const { return ip_; }

private:
	std::string netdev_, ip_, prefix_;
	bool added_ = false;
};

class UdL3 : public Datagram, public ::testing::WithParamInterface<int> {
protected:
	UdL3() { family_ = GetParam(); }

	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Datagram::SetUp());
		ASSERT_NO_FATAL_FAILURE(make_ud_pair(a_, b_));
	}

	// mlx5's L3 type of the fixture's address family
	uint8_t l3_sl() const { return family_ == AF_INET ? 2 : 1; }

	const char *own_ip() const
	{
		return std::getenv(family_ == AF_INET ? "SROCE_IP4" :
							"SROCE_IP6");
	}

	// kLen bytes of seed from qp over ah to QP dqpn, received into dst
	// (GRH area first) by the receive WQE posted on to; the receive
	// completion, or nothing.  The send must succeed.
	std::optional<ibv_wc> datagram(ibv_qp *qp, ibv_ah *ah, ibv_qp *to,
				       Region &dst, uint8_t seed)
	{
		Region src(pd_.get(), kLen, seed);

		EXPECT_EQ(post_recv(to, 1, dst.sge(0, kGrh + kLen)), 0);
		EXPECT_EQ(post_ud(qp, 2, src.sge(0, kLen), ah, to->qp_num,
				  kQkey),
			  0);
		const auto s = next_wc(scq_.get());
		EXPECT_TRUE(s) << "no send completion";
		if (s) {
			EXPECT_EQ(s->status, IBV_WC_SUCCESS) << wc_str(*s);
		}
		auto r = next_wc(rcq_.get());
		EXPECT_TRUE(r) << "no receive completion";
		if (!r)
			return r;
		EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
		EXPECT_EQ(r->qp_num, to->qp_num);
		EXPECT_EQ(r->src_qp, qp->qp_num);
		EXPECT_TRUE(r->wc_flags & IBV_WC_GRH) << wc_str(*r);
		EXPECT_EQ(r->byte_len, kGrh + kLen);
		EXPECT_EQ(std::memcmp(dst.mem.data() + kGrh, src.mem.data(), kLen),
			  0)
			<< "payload";
		return r;
	}

	Qp a_, b_;
};

std::string family_name(const ::testing::TestParamInfo<int> &i)
{
	return i.param == AF_INET ? "Ipv4" : "Ipv6";
}

// ibv_poll_cq(): a datagram's receive completion has the L3 type in sl.
TEST_P(UdL3, ReceiveSlIsTheL3Type)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("the RoCE L3 type in wc.sl");
	Ah ah = make_ah(pd_.get(), gid_);
	ASSERT_TRUE(ah) << std::strerror(errno);
	Region dst(pd_.get(), kGrh + kLen, 0xee);

	for (int i = 0; i < 3; i++) {
		const auto r = datagram(a_.get(), ah.get(), b_.get(), dst,
					uint8_t(i));
		ASSERT_TRUE(r);
		EXPECT_EQ(r->sl, l3_sl()) << wc_str(*r);
		EXPECT_EQ(parse_grh(dst.mem.data()).version,
			  family_ == AF_INET ? 4 : 6);
	}
}

// ibv_wc_read_sl() on an extended CQ reads the same.
TEST_P(UdL3, ExtendedCqReadsTheL3TypeSl)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("the RoCE L3 type in wc.sl");
	ibv_cq_init_attr_ex ca{};
	ca.cqe = 16;
	ca.wc_flags = IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_SRC_QP |
		      IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_BYTE_LEN;
	CqEx xcq(ibv_create_cq_ex(ctx_.get(), &ca));
	ASSERT_TRUE(xcq) << std::strerror(errno);
	ibv_qp_init_attr qa{};
	qa.send_cq = scq_.get();
	qa.recv_cq = ibv_cq_ex_to_cq(xcq.get());
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	Qp c(ibv_create_qp(pd_.get(), &qa));
	ASSERT_TRUE(c) << std::strerror(errno);
	ASSERT_TRUE(ud_ready(c.get()));
	Ah ah = make_ah(pd_.get(), gid_);
	ASSERT_TRUE(ah);
	Region src(pd_.get(), kLen, 3), dst(pd_.get(), kGrh + kLen, 0);

	ASSERT_EQ(post_recv(c.get(), 5, dst.sge(0, kGrh + kLen)), 0);
	ASSERT_EQ(post_ud(a_.get(), 6, src.sge(0, kLen), ah.get(), c->qp_num,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	ibv_poll_cq_attr pa{};
	int r = ENOENT;
	const auto deadline = Clock::now() + kWait;
	while ((r = ibv_start_poll(xcq.get(), &pa)) == ENOENT &&
	       Clock::now() < deadline)
		std::this_thread::sleep_for(kNap);
	ASSERT_EQ(r, 0) << "no receive completion";
	EXPECT_EQ(xcq->wr_id, 5u);
	EXPECT_EQ(xcq->status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_wc_read_sl(xcq.get()), l3_sl());
	EXPECT_EQ(ibv_wc_read_src_qp(xcq.get()), a_->qp_num);
	EXPECT_EQ(ibv_wc_read_qp_num(xcq.get()), c->qp_num);
	EXPECT_EQ(ibv_wc_read_byte_len(xcq.get()), kGrh + kLen);
	ibv_end_poll(xcq.get());
}

// The sender uses a second address of the guest, so that the address
// handle made from the completion must take the GRH's source, not the
// receiver's own address: the reply reaches the sender's QP at that
// address, from the receiver's.  The address handle carries the
// completion's sl, which sending ignores.
TEST_P(UdL3, AhFromCompletionRepliesToTheSender)
{
	ASSERT_TRUE(own_ip());
	ExtraAddress extra(family_, own_ip());
	ASSERT_TRUE(extra.added()) << "cannot add " << extra.ip();
	const int xi = wait_gid_index(ctx_.get(), extra.ip());
	ASSERT_GE(xi, 0) << "no RoCE v2 GID for " << extra.ip();
	ibv_gid xgid;
	ASSERT_TRUE(gid_of_ip(extra.ip(), xgid));
	Ah to_b = make_ah(pd_.get(), gid_, xi);
	ASSERT_TRUE(to_b) << std::strerror(errno);
	Region at_b(pd_.get(), kGrh + kLen, 0), at_a(pd_.get(), kGrh + kLen, 0);

	const auto r = datagram(a_.get(), to_b.get(), b_.get(), at_b, 0x10);
	ASSERT_TRUE(r);
	Grh g = parse_grh(at_b.mem.data());
	EXPECT_TRUE(same_gid(g.src, xgid)) << "GRH source";
	EXPECT_TRUE(same_gid(g.dst, gid_)) << "GRH destination";

	auto *grh = reinterpret_cast<ibv_grh *>(at_b.mem.data());
	ibv_wc wc = *r;
	ibv_ah_attr back{};
	ASSERT_EQ(ibv_init_ah_from_wc(ctx_.get(), 1, &wc, grh, &back), 0);
	EXPECT_EQ(back.is_global, 1);
	EXPECT_TRUE(same_gid(back.grh.dgid, xgid)) << "AH destination";
	EXPECT_EQ(back.grh.sgid_index, gid_index_) << "AH source GID";
	EXPECT_EQ(back.sl, wc.sl);
	Ah reply(ibv_create_ah_from_wc(pd_.get(), &wc, grh, 1));
	ASSERT_TRUE(reply) << "ibv_create_ah_from_wc: " << std::strerror(errno);

	const auto r2 = datagram(b_.get(), reply.get(), a_.get(), at_a, 0x20);
	ASSERT_TRUE(r2);
	g = parse_grh(at_a.mem.data());
	EXPECT_EQ(g.version, family_ == AF_INET ? 4 : 6);
	EXPECT_TRUE(same_gid(g.src, gid_)) << "reply's source";
	EXPECT_TRUE(same_gid(g.dst, xgid)) << "reply's destination";
}

// The sl of an address handle or a QP's address vector is accepted and
// changes nothing that is sent: every datagram carries the address
// vector's traffic class, whatever the sl.
TEST_P(UdL3, TransmitSlIsIgnored)
{
	Region dst(pd_.get(), kGrh + kLen, 0);

	for (uint8_t sl : {0, 1, 2, 7, 15}) {
		SCOPED_TRACE(int(sl));
		ibv_ah_attr aa = ah_attr(gid_, gid_index_);
		aa.sl = sl;
		aa.grh.traffic_class = kTrafficClass;
		Ah ah(ibv_create_ah(pd_.get(), &aa));
		ASSERT_TRUE(ah) << "sl refused: " << std::strerror(errno);
		const auto r = datagram(a_.get(), ah.get(), b_.get(), dst, sl);
		ASSERT_TRUE(r);
		const Grh g = parse_grh(dst.mem.data());
		EXPECT_EQ(g.tclass, kTrafficClass);
		EXPECT_TRUE(same_gid(g.src, gid_));
		EXPECT_TRUE(same_gid(g.dst, gid_));
	}

	Qp rc = make_qp(IBV_QPT_RC);
	ASSERT_TRUE(rc) << std::strerror(errno);
	ASSERT_TRUE(to_init(rc.get()));
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rc->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr = ah_attr(gid_, gid_index_);
	a.ah_attr.sl = 15;
	EXPECT_TRUE(modify(rc.get(), a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER,
			   "INIT->RTR with sl 15"));
	ibv_qp_attr got{};
	ibv_qp_init_attr gi{};
	ASSERT_EQ(ibv_query_qp(rc.get(), &got, IBV_QP_AV, &gi), 0);
	EXPECT_EQ(got.ah_attr.sl, 15) << "kept as given";
}

INSTANTIATE_TEST_SUITE_P(Ud, UdL3, ::testing::Values(AF_INET, AF_INET6),
			 family_name);

} // namespace
} // namespace sroce::test::ud
