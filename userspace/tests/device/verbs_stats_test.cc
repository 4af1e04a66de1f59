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
//   and debugfs's rx_drops, the sum over all devices, with it;
// - per-QP counters ("rdma statistic qp", ib_core's counter API): N SENDs
//   between QPs bound to counters, automatically and by hand, counted in
//   their counters exactly, and in the port's once.
// The counters are sroce's; on another driver (rdma_rxe) the cases skip.
#include <gtest/gtest.h>

#include <endian.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
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
		ASSERT_NO_FATAL_FAILURE(
			open_with_ipv4_gid(ctx_, pd_, gid_, gid_index_, &name));
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
				     uint32_t(kSize), smr->lkey},
				    IBV_SEND_SIGNALED),
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
			    IBV_SEND_SIGNALED, uintptr_t(dst.data()),
			    dmr->rkey ^ 0x5a5a0000),
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
			    {uintptr_t(src.data()), 64, smr->lkey},
			    IBV_SEND_SIGNALED),
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
	ASSERT_TRUE(ud_to_rts(qp.get(), kQkey));
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

// What a command prints on stdout; rc its exit status.
std::string command_output(const std::string &cmd, int &rc)
{
	std::unique_ptr<FILE, int (*)(FILE *)> p(popen(cmd.c_str(), "r"),
						 pclose);
	std::string out;
	char buf[4096];
	size_t n;

	rc = -1;
	if (!p)
		return out;
	while ((n = fread(buf, 1, sizeof(buf), p.get())) > 0)
		out.append(buf, n);
	rc = pclose(p.release());
	return out;
}

int rdma_cmd(const std::string &args)
{
	int rc;
	std::cout << "rdma " << args << "\n"
		  << command_output("rdma " + args + " 2>&1", rc);
	return rc;
}

// One counter of "rdma -j statistic qp show": its number, its QPs and its
// counts by name.
struct QpCounter {
	long cntn = -1;
	std::vector<uint32_t> qpns;
	std::map<std::string, long> counts;
};

// The counters of the device under test's port; the JSON is flat objects
// whose QP list ("lqpn") holds numbers or ranges ("17-18").
std::vector<QpCounter> qp_counters()
{
	const std::string dev = test_device_name();
	int rc;
	const std::string out = command_output(
		"rdma -j statistic qp show link " + dev + "/1", rc);
	std::vector<QpCounter> v;
	static const std::regex obj(R"(\{[^{}]*\})");
	static const std::regex num(R"re("([a-z_-]+)":([0-9]+))re");
	static const std::regex lqpn(R"re("lqpn":\[([^\]]*)\])re");
	static const std::regex qpn(R"re("?([0-9]+)(-([0-9]+))?"?)re");

	std::cout << "rdma -j statistic qp show link " << dev << "/1: " << out;
	for (std::sregex_iterator o(out.begin(), out.end(), obj), end; o != end;
	     ++o) {
		const std::string text = o->str();
		QpCounter c;
		for (std::sregex_iterator m(text.begin(), text.end(), num);
		     m != end; ++m)
			c.counts[(*m)[1]] = std::stol((*m)[2]);
		if (c.counts.count("cntn"))
			c.cntn = c.counts["cntn"];
		std::smatch l;
		if (std::regex_search(text, l, lqpn)) {
			const std::string list = l[1];
			for (std::sregex_iterator q(list.begin(), list.end(),
						    qpn);
			     q != end; ++q) {
				uint32_t lo = std::stoul((*q)[1]);
				uint32_t hi = (*q)[3].matched ?
						      std::stoul((*q)[3]) : lo;
				for (uint32_t n = lo; n <= hi; n++)
					c.qpns.push_back(n);
			}
		}
		v.push_back(c);
	}
	return v;
}

// The counter qpn is bound to, if any (cntn -1 if none).
QpCounter counter_of(uint32_t qpn)
{
	for (const auto &c : qp_counters())
		for (uint32_t q : c.qpns)
			if (q == qpn)
				return c;
	return {};
}

// Counters bound automatically (auto mode by QP type), by hand (bind,
// unbind) and the port's counts, which ib_core makes the device's plus the
// counters' plus those of counters gone: every SEND in them exactly once.
class StatsQpCounters : public Stats {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Stats::SetUp());
		if (IsSkipped())
			return;
		link_ = test_device_name() + "/1";
		ASSERT_EQ(rdma_cmd("statistic qp set link " + link_ +
				   " auto type on"),
			  0);
		auto_on_ = true;
	}

	void TearDown() override
	{
		if (auto_on_) {
			EXPECT_EQ(rdma_cmd("statistic qp set link " + link_ +
					   " auto off"),
				  0);
		}
	}

	// n SENDs of size bytes from a to b, all completed.
	void sends(End &a, End &b, int n, size_t size)
	{
		Buffer src(size * n), dst(size * n);
		Mr smr(ibv_reg_mr(pd_.get(), src.data(), src.size(), kMrAll));
		Mr dmr(ibv_reg_mr(pd_.get(), dst.data(), dst.size(), kMrAll));
		ASSERT_TRUE(smr && dmr) << std::strerror(errno);
		for (int i = 0; i < n; i++)
			ASSERT_EQ(post_recv(b.qp.get(), i,
					    {uintptr_t(dst.data() + i * size),
					     uint32_t(size), dmr->lkey}),
				  0);
		for (int i = 0; i < n; i++)
			ASSERT_EQ(post_send(a.qp.get(), i, IBV_WR_SEND,
					    {uintptr_t(src.data() + i * size),
					     uint32_t(size), smr->lkey},
					    IBV_SEND_SIGNALED),
				  0);
		for (int i = 0; i < n; i++) {
			ASSERT_TRUE(completes(a.scq.get(), i, IBV_WC_SUCCESS,
					      IBV_WC_SEND));
			ASSERT_TRUE(completes(b.rcq.get(), i, IBV_WC_SUCCESS,
					      IBV_WC_RECV));
		}
		// the last ACKs, past ib_core's cache of the counters
		std::this_thread::sleep_for(kSettle);
	}

	std::string link_;
	bool auto_on_ = false;
};

TEST_F(StatsQpCounters, AutoAndManualBindCountPerQp)
{
	constexpr int kN = 16;	// within make_end()'s queues
	constexpr size_t kSize = 64;
	const long sends_before = hw_counter("rdma_sends");
	const long recvs_before = hw_counter("rdma_recvs");

	// auto mode: both RC QPs of this process in one counter
	End a, b;
	ASSERT_NO_FATAL_FAILURE(pair(a, b));
	ASSERT_NO_FATAL_FAILURE(sends(a, b, kN, kSize));
	QpCounter ca = counter_of(a->qp_num);
	ASSERT_GE(ca.cntn, 0) << "QP " << a->qp_num << " bound to no counter";
	EXPECT_EQ(counter_of(b->qp_num).cntn, ca.cntn)
		<< "auto type: one counter for both RC QPs";
	EXPECT_EQ(ca.counts["rdma_sends"], kN);
	EXPECT_EQ(ca.counts["rdma_recvs"], kN);
	// a SEND each way (and b's ACKs, coalesced or not)
	EXPECT_GE(ca.counts["sent_pkts"], kN);
	EXPECT_GE(ca.counts["rcvd_pkts"], kN);
	EXPECT_GE(ca.counts["sent_bytes"], long(kN * kSize));
	EXPECT_GE(ca.counts["rcvd_bytes"], long(kN * kSize));
	EXPECT_EQ(ca.counts["sent_pkts"], ca.counts["rcvd_pkts"])
		<< "both ends on this device";
	EXPECT_EQ(ca.counts.count("rx_drop_no_qp"), 0u)
		<< "a counter lists only counters with a per-QP meaning";
	// the port counts each SEND once, counter included
	EXPECT_EQ(hw_counter("rdma_sends") - sends_before, kN);
	EXPECT_EQ(hw_counter("rdma_recvs") - recvs_before, kN);

	// by hand: a new pair after auto off, c bound alone
	ASSERT_EQ(rdma_cmd("statistic qp set link " + link_ + " auto off"),
		  0);
	auto_on_ = false;
	End c, d;
	ASSERT_NO_FATAL_FAILURE(pair(c, d));
	EXPECT_LT(counter_of(c->qp_num).cntn, 0) << "bound with auto off";
	ASSERT_EQ(rdma_cmd("statistic qp bind link " + link_ + " lqpn " +
			   std::to_string(c->qp_num)),
		  0);
	ASSERT_NO_FATAL_FAILURE(sends(c, d, kN, kSize));
	QpCounter cc = counter_of(c->qp_num);
	ASSERT_GE(cc.cntn, 0) << "QP " << c->qp_num << " not bound";
	EXPECT_NE(cc.cntn, ca.cntn);
	EXPECT_EQ(cc.qpns.size(), 1u);
	EXPECT_EQ(counter_of(d->qp_num).cntn, -1) << "d was not bound";
	EXPECT_EQ(cc.counts["rdma_sends"], kN);
	EXPECT_EQ(cc.counts["rdma_recvs"], 0);
	EXPECT_GE(cc.counts["sent_pkts"], kN);
	EXPECT_EQ(hw_counter("rdma_sends") - sends_before, 2 * kN);
	EXPECT_EQ(hw_counter("rdma_recvs") - recvs_before, 2 * kN);

	// unbound, c's counter is gone; its counts stay in the port's
	ASSERT_EQ(rdma_cmd("statistic qp unbind link " + link_ + " cntn " +
			   std::to_string(cc.cntn) + " lqpn " +
			   std::to_string(c->qp_num)),
		  0);
	EXPECT_EQ(counter_of(c->qp_num).cntn, -1) << "still bound";
	ASSERT_NO_FATAL_FAILURE(sends(c, d, kN, kSize));
	EXPECT_EQ(hw_counter("rdma_sends") - sends_before, 3 * kN);
	EXPECT_EQ(hw_counter("rdma_recvs") - recvs_before, 3 * kN);
	// a's counter did not move meanwhile
	EXPECT_EQ(counter_of(a->qp_num).counts["rdma_sends"], kN);
}

} // namespace
} // namespace sroce::test
