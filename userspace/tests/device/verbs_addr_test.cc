// The address check of connected QPs on a live RDMA device, run inside a
// test-bed guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Addr*'
// An RC or a UC QP in RTR whose address vector names a made-up peer (.77 of
// the guest's /24, with a permanent neighbour entry, since nothing answers
// ARP for it) has one receive posted.  selftests/lib/roce_send.py then sends
// it RoCE v2 SEND ONLY packets with a valid ICRC, the QP's number and its
// expected PSN, from this guest itself: raw IP packets, so their addresses
// are whatever the case wants.  Only the one from the peer to the QP's own
// address may complete the receive; every other is dropped, counted under
// its reason in rx_drops, and leaves the receive WQE and its buffer alone.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kQuiet = 1s;
constexpr uint32_t kPsn = 0x5a5a5a;
constexpr uint32_t kLen = 64;		// the receive buffer
constexpr uint32_t kPayload = 16;	// what roce_send.py sends
constexpr uint8_t kFill = 0xa7;		// ... filled with this
constexpr int kCount = 5;		// packets per refused kind

int sh(const std::string &cmd)
{
	return std::system((cmd + " >/dev/null 2>&1").c_str());
}

// The guest's IPv4 address with its last byte replaced: the test bed gives
// the guests a /24 of their own.
std::string on_link(const std::string &ip4, int last)
{
	return ip4.substr(0, ip4.rfind('.') + 1) + std::to_string(last);
}

class Addr : public ::testing::TestWithParam<ibv_qp_type> {
protected:
	void SetUp() override
	{
		const char *ip = std::getenv("SROCE_IP4");
		const char *nd = std::getenv("SROCE_NETDEV");
		const char *src = std::getenv("SROCE_SRC");

		ASSERT_TRUE(ip && *ip && nd && *nd && src && *src)
			<< "SROCE_IP4, SROCE_NETDEV, SROCE_SRC not set: run me "
			   "in the test bed";
		self_ = ip;
		netdev_ = nd;
		tool_ = std::string("python3 -S ") + src +
			"/selftests/lib/roce_send.py";
		peer_ = on_link(self_, 77);
		ASSERT_EQ(sh("ip neigh replace " + peer_ +
			     " lladdr 02:00:00:00:00:77 nud permanent dev " +
			     netdev_),
			  0);
		neigh_ = true;

		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_);
		ibv_gid own{};
		const int sgid = ipv4_gid(ctx_.get(), own, ip);
		ASSERT_GE(sgid, 0) << "no RoCE v2 GID for " << self_;
		ibv_gid dgid = own;
		ASSERT_EQ(inet_pton(AF_INET, peer_.c_str(), dgid.raw + 12), 1);

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

		Link l;
		l.access = IBV_ACCESS_REMOTE_WRITE;
		l.rq_psn = kPsn;
		ASSERT_TRUE(to_init(qp_.get(), l));
		ASSERT_TRUE(to_rtr(qp_.get(), 0x123, dgid, sgid, l));
		ibv_sge sge{buf_.addr(), kLen, mr_->lkey};
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ASSERT_EQ(ibv_post_recv(qp_.get(), &wr, &bad), 0);
	}

	void TearDown() override
	{
		if (neigh_)
			sh("ip neigh del " + peer_ + " dev " + netdev_);
	}

	// count SEND ONLY packets for the QP from src to dst, with psn.
	void send(const std::string &src, const std::string &dst, int count,
		  uint32_t psn = kPsn)
	{
		const std::string cmd =
			tool_ + " -n " + std::to_string(count) + " -q " +
			std::to_string(qp_->qp_num) + " -p " +
			std::to_string(psn) + " -t " +
			(GetParam() == IBV_QPT_UC ? "uc" : "rc") + " -f " +
			std::to_string(kFill) + " valid " + src + " " + dst;
		ASSERT_EQ(sh(cmd), 0) << cmd;
	}

	// The rx_drops count of reason reaches at least want within kWait.
	static long wait_drops(const std::string &reason, long want)
	{
		const auto deadline = Clock::now() + kWait;
		long n;

		while ((n = rx_drops(reason)) < want && Clock::now() < deadline)
			std::this_thread::sleep_for(10ms);
		return n;
	}

	// Nothing completed and the buffer holds what it was posted with.
	void expect_untouched()
	{
		const std::optional<ibv_wc> wc = next_wc(cq_.get(), kQuiet);
		EXPECT_FALSE(wc) << "completed: " << wc_str(*wc);
		EXPECT_TRUE(all_are(buf_.data(), kLen, kSentinel, "buffer"));
	}

	// A packet from the peer to the QP's own address completes the
	// receive: the path the refused packets took works.
	void expect_accepts_the_peer()
	{
		ASSERT_NO_FATAL_FAILURE(send(peer_, self_, 1));
		const std::optional<ibv_wc> wc = next_wc(cq_.get());
		ASSERT_TRUE(wc) << "the peer's packet did not complete the receive";
		EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
		EXPECT_EQ(wc->wr_id, 1u);
		EXPECT_EQ(wc->opcode, IBV_WC_RECV);
		EXPECT_EQ(wc->byte_len, kPayload);
		EXPECT_TRUE(all_are(buf_.data(), kPayload, kFill, "payload"));
		EXPECT_TRUE(all_are(buf_.data() + kPayload, kLen - kPayload,
				    kSentinel, "after the payload"));
	}

	std::string self_, peer_, netdev_, tool_;
	bool neigh_ = false;
	Context ctx_;
	Pd pd_;
	Cq cq_;
	Qp qp_;
	Buffer buf_;
	Mr mr_;
};

// This guest sends from its own address, not the peer's: the case of
// hdr_check()'s check_addr() in rdma_rxe.  For UC, one more packet starts a
// message at another PSN, which a UC responder would resynchronise to.
TEST_P(Addr, RefusesPacketsFromAnotherSource)
{
	const long before = rx_drops("bad_src_addr");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";
	int sent = kCount;

	ASSERT_NO_FATAL_FAILURE(send(self_, self_, kCount));
	if (GetParam() == IBV_QPT_UC) {
		ASSERT_NO_FATAL_FAILURE(send(self_, self_, 1, kPsn + 100));
		sent++;
	}
	EXPECT_EQ(wait_drops("bad_src_addr", before + sent), before + sent);
	expect_untouched();
	expect_accepts_the_peer();
}

// From the peer, but to another address of this guest.
TEST_P(Addr, RefusesPacketsToAnotherOwnAddress)
{
	const std::string other = on_link(self_, 78);
	struct Cleanup {
		std::string del;
		~Cleanup() { sh(del); }
	} cleanup{"ip addr del " + other + "/32 dev " + netdev_};
	ASSERT_EQ(sh("ip addr add " + other + "/32 dev " + netdev_), 0);
	const long before = rx_drops("bad_dst_addr");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";

	ASSERT_NO_FATAL_FAILURE(send(peer_, other, kCount));
	EXPECT_EQ(wait_drops("bad_dst_addr", before + kCount), before + kCount);
	expect_untouched();
	expect_accepts_the_peer();
}

// From the peer, to the subnet's broadcast address (which the packets also
// take to the other guest on the wire, whose count grows too: at least).
TEST_P(Addr, RefusesBroadcasts)
{
	const long before = rx_drops("bcast");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";

	ASSERT_NO_FATAL_FAILURE(send(peer_, on_link(self_, 255), kCount));
	EXPECT_GE(wait_drops("bcast", before + kCount), before + kCount);
	expect_untouched();
	expect_accepts_the_peer();
}

INSTANTIATE_TEST_SUITE_P(Connected, Addr,
			 ::testing::Values(IBV_QPT_RC, IBV_QPT_UC),
			 [](const auto &info) {
				 return info.param == IBV_QPT_RC ? "Rc" : "Uc";
			 });

} // namespace
} // namespace sroce::test
