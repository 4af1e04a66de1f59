// The port counters of a live sroce device (its hw_counters, which
// "rdma statistic show link DEV/1" lists too), run inside a test-bed guest
// as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Stats*'
// QPs of the device under test talk to each other through its own IPv4
// RoCE v2 GID, so one device is both sender and receiver.  For a known
// traffic pattern the counters move by what it must cost:
// - N SENDs: rdma_sends and rdma_recvs by exactly N, sent_pkts and
//   rcvd_pkts by at least the packets of the messages, sent_bytes and
//   rcvd_bytes by at least their payload;
// - an RDMA WRITE with a bad R_Key: resp_remote_access_errors and
//   req_remote_access_errors by exactly one;
// - a SEND with no receive posted: send_rnr_err and rcvd_rnr_err;
// - a datagram to a QP number nobody has: rx_drop_no_qp by exactly one,
//   and debugfs's rx_drops, the sum over all devices, with it.
// The counters are sroce's; on another driver (rdma_rxe) the cases skip.
#include <gtest/gtest.h>

#include <endian.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

// After the last increment the counters may still be read from ib_core's
// cache (10 ms) or a late ACK may still arrive: wait this long before
// asserting that a count stays where it is.
const auto kSettle = slow(300ms);
constexpr uint32_t kNoQpn = 0xabcdef;	// above every QP number sroce gives
constexpr uint32_t kQkey = 0x11110000;

// Waits until hw_counter(name) - before reaches at least want, or kWait.
// Returns the last difference seen.
long wait_delta(const std::string &name, long before, long want)
{
	const auto deadline = Clock::now() + kWait;
	long d = hw_counter(name) - before;

	while (d < want && Clock::now() < deadline) {
		std::this_thread::sleep_for(5ms);
		d = hw_counter(name) - before;
	}
	return d;
}

// The counters of names, read now.
std::vector<long> snapshot(const std::vector<std::string> &names)
{
	std::vector<long> v;

	for (const auto &n : names)
		v.push_back(hw_counter(n));
	return v;
}

class Stats : public ::testing::Test {
protected:
	void SetUp() override
	{
		if (!testing_sroce())
			GTEST_SKIP() << not_sroce("sroce's port counters");
		std::string name;
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_, &name));
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		gid_index_ = ipv4_gid(ctx_.get(), gid_);
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID on " << name;
		ASSERT_GE(hw_counter("sent_pkts"), 0)
			<< "cannot read the hw_counters of " << name;
	}

	// Two RC ends of this device connected to each other.
	void pair(End &a, End &b)
	{
		ASSERT_TRUE(make_end(a, pd_.get()));
		ASSERT_TRUE(make_end(b, pd_.get()));
		ASSERT_TRUE(connect(a.qp.get(), b->qp_num, gid_, gid_index_));
		ASSERT_TRUE(connect(b.qp.get(), a->qp_num, gid_, gid_index_));
	}

	// A connected pair with a 64-byte source and destination registered.
	struct Small {
		End a, b;
		Buffer src{64}, dst{64};
		Mr smr, dmr;
	};

	void small_pair(Small &t)
	{
		ASSERT_NO_FATAL_FAILURE(pair(t.a, t.b));
		t.smr.reset(ibv_reg_mr(pd_.get(), t.src.data(), t.src.size(),
				       kMrAll));
		t.dmr.reset(ibv_reg_mr(pd_.get(), t.dst.data(), t.dst.size(),
				       kMrAll));
		ASSERT_TRUE(t.smr && t.dmr) << std::strerror(errno);
	}

	static int post_recv(ibv_qp *q, uint64_t id, ibv_sge sge)
	{
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return ibv_post_recv(q, &wr, &bad);
	}

	static int post_send(ibv_qp *q, uint64_t id, ibv_wr_opcode op,
			     ibv_sge sge, uint64_t raddr = 0, uint32_t rkey = 0)
	{
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		return ibv_post_send(q, &wr, &bad);
	}

	Context ctx_;
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
};

// Three packets per message at the 1024-byte path MTU of connect().
TEST_F(Stats, SendsAreCountedAsMessagesPacketsAndBytes)
{
	constexpr int kN = 16;
	constexpr size_t kSize = 2500;
	constexpr long kPkts = 3;
	End a, b;
	ASSERT_NO_FATAL_FAILURE(pair(a, b));
	Buffer src(kSize * kN), dst(kSize * kN);
	Mr smr(ibv_reg_mr(pd_.get(), src.data(), src.size(), kMrAll));
	Mr dmr(ibv_reg_mr(pd_.get(), dst.data(), dst.size(), kMrAll));
	ASSERT_TRUE(smr && dmr) << std::strerror(errno);

	const std::vector<std::string> names = {
		"rdma_sends", "rdma_recvs", "sent_pkts",
		"rcvd_pkts",  "sent_bytes", "rcvd_bytes"};
	const std::vector<long> before = snapshot(names);
	for (int i = 0; i < kN; i++)
		ASSERT_EQ(post_recv(b.qp.get(), i,
				    {uintptr_t(dst.data() + i * kSize),
				     uint32_t(kSize), dmr->lkey}),
			  0);
	for (int i = 0; i < kN; i++)
		ASSERT_EQ(post_send(a.qp.get(), i, IBV_WR_SEND,
				    {uintptr_t(src.data() + i * kSize),
				     uint32_t(kSize), smr->lkey}),
			  0);
	for (int i = 0; i < kN; i++) {
		ASSERT_TRUE(completes(a.scq.get(), i, IBV_WC_SUCCESS,
				      IBV_WC_SEND));
		ASSERT_TRUE(completes(b.rcq.get(), i, IBV_WC_SUCCESS,
				      IBV_WC_RECV));
	}

	EXPECT_GE(wait_delta("rdma_sends", before[0], kN), kN);
	EXPECT_GE(wait_delta("rdma_recvs", before[1], kN), kN);
	std::this_thread::sleep_for(kSettle);
	const std::vector<long> after = snapshot(names);
	for (size_t i = 0; i < names.size(); i++)
		std::cout << names[i] << ": " << before[i] << " -> "
			  << after[i] << "\n";
	// messages, not packets: one each way per SEND
	EXPECT_EQ(after[0] - before[0], kN) << "rdma_sends";
	EXPECT_EQ(after[1] - before[1], kN) << "rdma_recvs";
	EXPECT_GE(after[2] - before[2], kN * kPkts) << "sent_pkts";
	EXPECT_GE(after[3] - before[3], kN * kPkts) << "rcvd_pkts";
	EXPECT_GE(after[4] - before[4], long(kN * kSize)) << "sent_bytes";
	EXPECT_GE(after[5] - before[5], long(kN * kSize)) << "rcvd_bytes";
}

// The responder refuses the WRITE with a remote access error NAK: counted
// on both sides of the exchange, which here are the same device.
TEST_F(Stats, BadRkeyWriteCountsRemoteAccessErrors)
{
	Small t;
	ASSERT_NO_FATAL_FAILURE(small_pair(t));
	auto &[a, b, src, dst, smr, dmr] = t;

	const long req = hw_counter("req_remote_access_errors");
	const long resp = hw_counter("resp_remote_access_errors");
	const long sends = hw_counter("rdma_sends");
	ASSERT_GE(req, 0);
	ASSERT_GE(resp, 0);
	ASSERT_EQ(post_send(a.qp.get(), 1, IBV_WR_RDMA_WRITE,
			    {uintptr_t(src.data()), 64, smr->lkey},
			    uintptr_t(dst.data()), dmr->rkey ^ 0x5a5a0000),
		  0);
	ASSERT_TRUE(completes(a.scq.get(), 1, IBV_WC_REM_ACCESS_ERR,
			      IBV_WC_RDMA_WRITE));

	EXPECT_GE(wait_delta("req_remote_access_errors", req, 1), 1);
	std::this_thread::sleep_for(kSettle);
	EXPECT_EQ(hw_counter("req_remote_access_errors") - req, 1);
	EXPECT_EQ(hw_counter("resp_remote_access_errors") - resp, 1);
	EXPECT_EQ(hw_counter("rdma_sends") - sends, 0) << "a WRITE is no SEND";
}

// Without a receive WQE the responder answers with an RNR NAK and the
// requester waits and retries (rnr_retry 7: for ever) until one is posted.
TEST_F(Stats, SendWithoutReceiveCountsRnrNaks)
{
	Small t;
	ASSERT_NO_FATAL_FAILURE(small_pair(t));
	auto &[a, b, src, dst, smr, dmr] = t;

	const long sent = hw_counter("send_rnr_err");
	const long rcvd = hw_counter("rcvd_rnr_err");
	ASSERT_EQ(post_send(a.qp.get(), 1, IBV_WR_SEND,
			    {uintptr_t(src.data()), 64, smr->lkey}),
		  0);
	EXPECT_GE(wait_delta("send_rnr_err", sent, 1), 1);
	EXPECT_GE(wait_delta("rcvd_rnr_err", rcvd, 1), 1);
	ASSERT_EQ(post_recv(b.qp.get(), 2, {uintptr_t(dst.data()), 64,
					    dmr->lkey}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(), 1, IBV_WC_SUCCESS, IBV_WC_SEND));
	ASSERT_TRUE(completes(b.rcq.get(), 2, IBV_WC_SUCCESS, IBV_WC_RECV));
}

// A UD datagram to a QP number the device does not have reaches the device
// (rcvd_pkts) and is dropped there as no_qp, once; debugfs's module-wide
// sum moves with it.
TEST_F(Stats, DatagramToNoQpIsDroppedOnTheDevice)
{
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	ibv_qp_init_attr ia{};
	ia.send_cq = cq.get();
	ia.recv_cq = cq.get();
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	Qp qp(ibv_create_qp(pd_.get(), &ia));
	ASSERT_TRUE(qp) << std::strerror(errno);
	ibv_qp_attr at{};
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = kQkey;
	ASSERT_TRUE(modify(qp.get(), at,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_QKEY,
			   "INIT"));
	at = {};
	at.qp_state = IBV_QPS_RTR;
	ASSERT_TRUE(modify(qp.get(), at, IBV_QP_STATE, "RTR"));
	at.qp_state = IBV_QPS_RTS;
	ASSERT_TRUE(modify(qp.get(), at, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS"));
	ibv_ah_attr aa = ah_attr(gid_, gid_index_);
	Ah ah(ibv_create_ah(pd_.get(), &aa));
	ASSERT_TRUE(ah) << std::strerror(errno);
	Buffer src(32);
	Mr mr(ibv_reg_mr(pd_.get(), src.data(), src.size(), kMrAll));
	ASSERT_TRUE(mr) << std::strerror(errno);

	const long drops = hw_counter("rx_drop_no_qp");
	const long rcvd = hw_counter("rcvd_pkts");
	const long module = rx_drops("no_qp");
	ASSERT_GE(drops, 0);
	ASSERT_GE(module, 0) << "cannot read the rx_drops counters";
	ibv_sge sge{uintptr_t(src.data()), 32, mr->lkey};
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah.get();
	wr.wr.ud.remote_qpn = kNoQpn;
	wr.wr.ud.remote_qkey = kQkey;
	ASSERT_EQ(ibv_post_send(qp.get(), &wr, &bad), 0);
	ASSERT_TRUE(completes(cq.get(), 7, IBV_WC_SUCCESS, IBV_WC_SEND));

	EXPECT_GE(wait_delta("rx_drop_no_qp", drops, 1), 1);
	std::this_thread::sleep_for(kSettle);
	EXPECT_EQ(hw_counter("rx_drop_no_qp") - drops, 1);
	EXPECT_GE(hw_counter("rcvd_pkts") - rcvd, 1);
	EXPECT_EQ(rx_drops("no_qp") - module, 1) << "debugfs rx_drops no_qp";
}

} // namespace
} // namespace sroce::test
