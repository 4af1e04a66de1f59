// A live QP aimed at with hand-made RoCE v2 packets, for the device tests
// of the receive path's checks (verbs_addr_test.cc, verbs_malformed_test.cc),
// run inside a test-bed guest as root.
//
// The QP (RC, UC or UD: the test parameter) is in RTR with one receive
// posted, a 4 KiB buffer of kSentinel bytes.  An RC or UC QP's address
// vector names a made-up peer (.77 of the guest's /24, with a permanent
// neighbour entry, since nothing answers ARP for it), path MTU 1024 and
// expected PSN kPsn; a UD QP has Q_Key kQkey.  inject() sends packets
// built by roce_packet.cc through a raw IP socket from this guest itself,
// so their addresses are whatever the case wants: they go through the
// loopback device to the guest's own address.  spec() is the packet the
// QP would accept: a SEND ONLY of its transport with its number, its
// expected PSN (UD: its Q_Key) and kPayload bytes of kFill.
#ifndef SROCE_TESTS_VERBS_INJECT_FIXTURE_H
#define SROCE_TESTS_VERBS_INJECT_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "roce_packet.h"
#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {

// "Rc", "Uc", "Ud": the parameter's part of a case name.
inline std::string qp_type_name(const ::testing::TestParamInfo<ibv_qp_type> &i)
{
	return i.param == IBV_QPT_RC ? "Rc" : i.param == IBV_QPT_UC ? "Uc" : "Ud";
}

class Inject : public ::testing::TestWithParam<ibv_qp_type> {
protected:
	// how long nothing may complete once every packet was counted: the
	// other fixtures' quiet while (a second count or a late completion
	// of the same packets comes from work they queued, done by then);
	// a whole second made some 30 cases wait 25 s in all
	static constexpr auto kQuiet = std::chrono::milliseconds(300);
	static constexpr uint32_t kPsn = 0x5a5a5a;
	static constexpr uint32_t kLen = 4096;		// the receive buffer
	static constexpr uint32_t kPayload = 16;	// what spec() carries
	static constexpr uint8_t kFill = 0xa7;		// ... filled with this
	static constexpr uint32_t kQkey = 0x11111111;
	static constexpr uint32_t kPmtu = 1024;		// the path MTU
	static constexpr uint32_t kGrh = 40;		// UD: before the data
	static constexpr int kCount = 5;		// packets per kind

	void SetUp() override
	{
		const char *ip = std::getenv("SROCE_IP4");
		const char *nd = std::getenv("SROCE_NETDEV");

		ASSERT_TRUE(ip && *ip && nd && *nd)
			<< "SROCE_IP4, SROCE_NETDEV not set: run me in the "
			   "test bed";
		self_ = ip;
		netdev_ = nd;
		peer_ = on_link(self_, 77);
		ASSERT_TRUE(sock_.error().empty()) << sock_.error();
		neigh_.emplace(peer_, netdev_, "02:00:00:00:00:77");
		ASSERT_TRUE(neigh_->ok())
			<< "cannot add a neighbour entry for " << peer_;

		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_);
		cq_.reset(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_);
		ibv_qp_init_attr a{};
		a.send_cq = a.recv_cq = cq_.get();
		a.qp_type = GetParam();
		a.cap.max_send_wr = a.cap.max_recv_wr = 4;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		qp_.reset(ibv_create_qp(pd_.get(), &a));
		ASSERT_TRUE(qp_) << std::strerror(errno);
		buf_ = Buffer(kLen);
		mr_.reset(ibv_reg_mr(pd_.get(), buf_.data(), kLen,
				     IBV_ACCESS_LOCAL_WRITE));
		ASSERT_TRUE(mr_);
		if (ud())
			ASSERT_TRUE(ud_to_rtr());
		else
			ASSERT_NO_FATAL_FAILURE(connected_to_rtr(ip));
		ibv_sge sge{buf_.addr(), kLen, mr_->lkey};
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ASSERT_EQ(ibv_post_recv(qp_.get(), &wr, &bad), 0);
	}

	void TearDown() override { neigh_.reset(); }

	bool ud() const { return GetParam() == IBV_QPT_UD; }

	// The RC or UC QP's remote access flags.
	virtual int qp_access() const { return IBV_ACCESS_REMOTE_WRITE; }

	roce::Transport transport() const
	{
		return GetParam() == IBV_QPT_RC	  ? roce::Transport::RC :
		       GetParam() == IBV_QPT_UC ? roce::Transport::UC :
						  roce::Transport::UD;
	}

	// The opcode called name ("send-only", ...) of transport t.
	static uint8_t opcode(roce::Transport t, const char *name)
	{
		const std::optional<uint8_t> op = roce::opcode_by_name(t, name);

		EXPECT_TRUE(op) << name;
		return op.value_or(0xff);
	}

	// The packet the QP accepts (see the top of the file).
	roce::Spec spec() const
	{
		roce::Spec s;

		s.opcode = opcode(transport(), "send-only");
		s.qpn = qp_->qp_num;
		s.psn = kPsn;
		s.len = kPayload;
		s.fill = kFill;
		s.qkey = kQkey;
		return s;
	}

	// count packets s from src to dst (IPv4 addresses).
	void inject(const std::string &src, const std::string &dst,
		    const roce::Spec &s, int count = 1)
	{
		const std::optional<roce::Addr> a = roce::parse_addr(src),
						b = roce::parse_addr(dst);

		ASSERT_TRUE(a && b) << src << " -> " << dst;
		for (int i = 0; i < count; i++) {
			const std::string err =
				sock_.send(roce::build(*a, *b, s, rng_), *b);
			ASSERT_EQ(err, "") << src << " -> " << dst;
		}
	}

	// count packets s from the peer to the QP's address.
	void inject(const roce::Spec &s, int count = 1)
	{
		inject(peer_, self_, s, count);
	}

	// The rx_drops count of reason reaches at least want within kWait.
	static long wait_drops(const std::string &reason, long want)
	{
		const auto deadline = Clock::now() + kWait;
		long n;

		while ((n = rx_drops(reason)) < want && Clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		return n;
	}

	// The drops of reason before a case's packets, in debugfs's rx_drops
	// and in the port's rx_drop_<reason>.
	struct Drops {
		std::string reason;
		long debugfs, port;
	};

	static Drops drops(const std::string &reason)
	{
		Drops d{reason, rx_drops(reason), hw_counter("rx_drop_" + reason)};

		EXPECT_GE(d.debugfs, 0) << "cannot read the rx_drops counters";
		EXPECT_GE(d.port, 0) << "no hw counter rx_drop_" << reason;
		return d;
	}

	// Exactly n more drops of d.reason, in both places, and the receive
	// untouched a quiet while later (which a late or second count of the
	// same packets would also have shown by then).
	void expect_dropped(const Drops &d, long n)
	{
		EXPECT_EQ(wait_drops(d.reason, d.debugfs + n), d.debugfs + n)
			<< d.reason;
		expect_untouched();
		EXPECT_EQ(rx_drops(d.reason), d.debugfs + n) << d.reason;
		EXPECT_EQ(hw_counter("rx_drop_" + d.reason), d.port + n)
			<< "rx_drop_" << d.reason;
		// for the log: what the case's packets were counted as
		std::printf("%s: rx_drops %ld -> %ld, rx_drop_%s %ld -> %ld\n",
			    d.reason.c_str(), d.debugfs, rx_drops(d.reason),
			    d.reason.c_str(), d.port,
			    hw_counter("rx_drop_" + d.reason));
	}

	// Nothing completed and the buffer holds what it was posted with.
	void expect_untouched()
	{
		const std::optional<ibv_wc> wc = next_wc(cq_.get(), slow(kQuiet));
		EXPECT_FALSE(wc) << "completed: " << wc_str(*wc);
		EXPECT_TRUE(all_are(buf_.data(), kLen, kSentinel, "buffer"));
	}

	// spec() from the peer to the QP's own address completes the receive
	// with its payload: the QP is alive and still expects kPsn.
	void expect_accepts_the_peer()
	{
		const uint32_t at = ud() ? kGrh : 0;

		ASSERT_NO_FATAL_FAILURE(inject(spec()));
		const std::optional<ibv_wc> wc = next_wc(cq_.get());
		ASSERT_TRUE(wc) << "the peer's packet did not complete the receive";
		EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
		EXPECT_EQ(wc->wr_id, 1u);
		EXPECT_EQ(wc->opcode, IBV_WC_RECV);
		EXPECT_EQ(wc->byte_len, at + kPayload);
		EXPECT_TRUE(all_are(buf_.data() + at, kPayload, kFill, "payload"));
		EXPECT_TRUE(all_are(buf_.data() + at + kPayload,
				    kLen - at - kPayload, kSentinel,
				    "after the payload"));
	}

	// The next async event of type want about this QP within kWait;
	// events of other types (COMM_EST, port events) are passed over.
	bool wait_qp_event(ibv_event_type want)
	{
		const auto deadline = Clock::now() + kWait;

		for (;;) {
			const auto left =
				std::chrono::duration_cast<std::chrono::milliseconds>(
					deadline - Clock::now());
			pollfd pfd = {ctx_->async_fd, POLLIN, 0};
			if (left.count() <= 0 ||
			    poll(&pfd, 1, int(left.count())) <= 0)
				return false;
			ibv_async_event ev{};
			if (ibv_get_async_event(ctx_.get(), &ev))
				return false;
			const bool hit = ev.event_type == want &&
					 ev.element.qp == qp_.get();
			ibv_ack_async_event(&ev);
			if (hit)
				return true;
		}
	}

	std::string self_, peer_, netdev_;
	std::optional<PermanentNeighbour> neigh_;
	Context ctx_;
	Pd pd_;
	Cq cq_;
	Qp qp_;
	Buffer buf_;
	Mr mr_;
	roce::RawSocket sock_{AF_INET};
	std::mt19937 rng_{std::random_device{}()};

private:
	void connected_to_rtr(const char *ip)
	{
		ibv_gid own{};
		const int sgid = ipv4_gid(ctx_.get(), own, ip);
		ASSERT_GE(sgid, 0) << "no RoCE v2 GID for " << self_;
		ibv_gid dgid = own;
		ASSERT_EQ(inet_pton(AF_INET, peer_.c_str(), dgid.raw + 12), 1);

		Link l;
		l.mtu = IBV_MTU_1024;
		l.access = qp_access();
		l.rq_psn = kPsn;
		ASSERT_TRUE(to_init(qp_.get(), l));
		ASSERT_TRUE(to_rtr(qp_.get(), 0x123, dgid, sgid, l));
	}

	::testing::AssertionResult ud_to_rtr()
	{
		ibv_qp_attr a{};

		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = kQkey;
		::testing::AssertionResult r =
			modify(qp_.get(), a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY,
			       "RESET->INIT");
		if (!r)
			return r;
		a = {};
		a.qp_state = IBV_QPS_RTR;
		return modify(qp_.get(), a, IBV_QP_STATE, "INIT->RTR");
	}
};

} // namespace sroce::test

#endif
