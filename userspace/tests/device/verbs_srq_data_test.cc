// Shared receive queues, the data path (part of verbs_device_tests; the
// fixture and the expectations are in verbs_srq_fixture.h): several RC QPs
// and UD QPs receiving through one SRQ, refills, the limit event, and a QP
// in the error state among others.
#include <gtest/gtest.h>

#include "verbs_srq_fixture.h"

namespace sroce::test {
namespace {

using namespace srq;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// Data path.

// Message seq of a sender: its length and contents.
uint32_t msg_len(size_t sender, uint32_t seq)
{
	return (uint32_t(sender) * 977u + seq * 331u) % 3000u;
}

uint32_t msg_seed(size_t sender, uint32_t seq)
{
	return uint32_t(sender) << 16 | seq;
}

// Receive buffers: one kSlot-byte area per SRQ WQE, named by its wr_id.
constexpr uint32_t kSlot = 4096;

// Checks the receive completions of the senders' messages, in whatever
// order the QPs took the WQEs: per QP in sending order (RC), each posted
// wr_id completing once per posting, the data in that wr_id's buffer.
class RecvChecker {
public:
	RecvChecker(const std::vector<Qp> &receivers, const Region &bufs)
		: bufs_(bufs)
	{
		for (size_t i = 0; i < receivers.size(); i++)
			sender_of_[receivers[i]->qp_num] = i;
	}

	// wr_id was posted to the SRQ (again).
	void posted(uint64_t wr_id)
	{
		EXPECT_TRUE(outstanding_.insert(wr_id).second)
			<< "test bug: wr_id " << wr_id << " posted twice";
	}

	::testing::AssertionResult check(const ibv_wc &wc)
	{
		auto s = sender_of_.find(wc.qp_num);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    s == sender_of_.end())
			return ::testing::AssertionFailure()
			       << "bad receive completion " << wc_str(wc);
		if (!outstanding_.erase(wc.wr_id))
			return ::testing::AssertionFailure()
			       << wc_str(wc) << ": wr_id completed twice "
			       << "or never posted";
		const uint32_t seq = next_[s->second]++;
		const uint32_t len = msg_len(s->second, seq);
		if (wc.byte_len != len)
			return ::testing::AssertionFailure()
			       << wc_str(wc) << ": message " << seq
			       << " of sender " << s->second << " has " << len
			       << " bytes";
		const uint8_t *p = bufs_.at(wc.wr_id * kSlot);
		for (uint32_t i = 0; i < kSlot; i++) {
			const uint8_t want =
				i < len ? pat(msg_seed(s->second, seq), i)
					: kSentinel;
			if (p[i] != want)
				return ::testing::AssertionFailure()
				       << wc_str(wc) << ": byte " << i
				       << " of the buffer is wrong";
		}
		std::memset(bufs_.at(wc.wr_id * kSlot), kSentinel, kSlot);
		return ::testing::AssertionSuccess();
	}

	uint32_t received(size_t sender) const
	{
		auto it = next_.find(sender);
		return it == next_.end() ? 0 : it->second;
	}

private:
	const Region &bufs_;
	std::map<uint32_t, size_t> sender_of_;
	std::map<size_t, uint32_t> next_;
	std::set<uint64_t> outstanding_;
};

// Fills message seq of a sender into its area of src.
ibv_sge stage(const Region &src, size_t sender, uint32_t seq)
{
	const uint32_t len = msg_len(sender, seq);
	uint8_t *p = src.at(sender * kSlot);
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(msg_seed(sender, seq), i);
	return src.sge(sender * kSlot, len);
}

TEST_F(Srqs, SeveralQpsReceiveThroughOneSrq)
{
	constexpr size_t kQps = 3;
	constexpr uint32_t kEach = 12;
	ASSERT_EQ(make_srq(kQps * kEach), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(kQps));
	Region bufs(pd_.get(), kQps * kEach * kSlot);
	ASSERT_TRUE(bufs) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < kQps * kEach; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	// One message at a time per sender (its source area is reused), the
	// senders interleaved so that the QPs take WQEs alternately.
	Region src(pd_.get(), kQps * kSlot);
	ASSERT_TRUE(src) << std::strerror(errno);
	for (uint32_t seq = 0; seq < kEach; seq++) {
		for (size_t s = 0; s < kQps; s++) {
			ibv_sge sg = stage(src, s, seq);
			ASSERT_EQ(send(s, seq, &sg), 0);
		}
		for (size_t s = 0; s < kQps; s++)
			ASSERT_TRUE(sends_done(s, 1));
	}
	const auto got = poll_n(rcq_.get(), kQps * kEach);
	ASSERT_EQ(got.size(), kQps * kEach);
	for (const ibv_wc &wc : got)
		ASSERT_TRUE(rx.check(wc));
	for (size_t s = 0; s < kQps; s++)
		EXPECT_EQ(rx.received(s), kEach) << "sender " << s;
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, ManyMessagesThroughASmallSrqWithRefills)
{
	// Many more messages than the SRQ holds: the receivers meet an empty
	// SRQ (RNR, retried for ever) and the WQEs are refilled as they
	// complete, while the receiving QPs' engines take them concurrently.
	constexpr size_t kQps = 3;
	constexpr uint32_t kEach = 100;
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(kQps));
	const uint32_t slots = g.max_wr;
	Region bufs(pd_.get(), size_t(slots) * kSlot);
	Region src(pd_.get(), kQps * kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < slots; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	std::vector<uint32_t> sent(kQps, 0);
	size_t total = 0;
	const auto deadline = Clock::now() + 4 * kWait;
	while (total < kQps * kEach && Clock::now() < deadline) {
		for (size_t s = 0; s < kQps; s++) {
			if (sent[s] == kEach || sent[s] != rx.received(s))
				continue;
			ibv_sge sg = stage(src, s, sent[s]);
			ASSERT_EQ(send(s, sent[s], &sg), 0);
			sent[s]++;
		}
		ibv_wc wc[8];
		const int k = ibv_poll_cq(rcq_.get(), 8, wc);
		ASSERT_GE(k, 0);
		for (int i = 0; i < k; i++) {
			ASSERT_TRUE(rx.check(wc[i]));
			// The used WQE goes back with the same wr_id.
			ibv_sge sg = bufs.sge(wc[i].wr_id * kSlot, kSlot);
			ASSERT_EQ(post_srq(wc[i].wr_id, &sg, 1), 0);
			rx.posted(wc[i].wr_id);
		}
		total += size_t(k);
		if (!k)
			std::this_thread::sleep_for(50us);
	}
	ASSERT_EQ(total, kQps * kEach);
	for (size_t s = 0; s < kQps; s++)
		EXPECT_TRUE(sends_done(s, kEach));
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, LimitEventFiresOnceUntilRearmed)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_EQ(g.max_wr, 8u) << "the test assumes an exact capacity";
	ASSERT_NO_FATAL_FAILURE(make_pairs(1));
	Region bufs(pd_.get(), size_t(g.max_wr) * kSlot);
	Region src(pd_.get(), kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	uint32_t seq = 0, next_id = 0;
	auto post_n = [&](uint32_t n) {
		for (uint32_t i = 0; i < n; i++, next_id++) {
			ibv_sge sg = bufs.sge((next_id % g.max_wr) * kSlot,
					      kSlot);
			ASSERT_EQ(post_srq(next_id % g.max_wr, &sg, 1), 0);
			rx.posted(next_id % g.max_wr);
		}
	};
	auto deliver = [&](uint32_t n) {
		for (uint32_t i = 0; i < n; i++, seq++) {
			ibv_sge sg = stage(src, 0, seq);
			ASSERT_EQ(send(0, seq, &sg), 0);
			ASSERT_TRUE(sends_done(0, 1));
			const auto wc = poll_n(rcq_.get(), 1);
			ASSERT_EQ(wc.size(), 1u);
			ASSERT_TRUE(rx.check(wc[0]));
		}
	};

	post_n(8);
	ibv_srq_attr a{};
	a.srq_limit = 4;
	ASSERT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	// 4 taken, 4 left: not below the limit.
	ASSERT_NO_FATAL_FAILURE(deliver(4));
	EXPECT_TRUE(no_event());
	EXPECT_EQ(srq_limit(), 4u) << "still armed";
	// The fifth leaves 3: one event, and the SRQ is disarmed.
	ASSERT_NO_FATAL_FAILURE(deliver(1));
	EXPECT_TRUE(srq_event(srq_.get()));
	EXPECT_EQ(srq_limit(), 0u) << "disarmed by the event";
	ASSERT_NO_FATAL_FAILURE(deliver(2));
	EXPECT_TRUE(no_event()) << "no second event without re-arming";

	// Refill to 8 and re-arm: the same again.
	post_n(7);
	a.srq_limit = 4;
	ASSERT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	ASSERT_NO_FATAL_FAILURE(deliver(4));
	EXPECT_TRUE(no_event());
	ASSERT_NO_FATAL_FAILURE(deliver(1));
	EXPECT_TRUE(srq_event(srq_.get()));
	EXPECT_TRUE(no_event());
}

TEST_F(Srqs, ErrorStateLeavesTheSrqsWqesForTheOtherQps)
{
	ASSERT_EQ(make_srq(8), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(2));
	Region bufs(pd_.get(), 8 * kSlot);
	Region src(pd_.get(), 2 * kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < 4; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	// The first receiver goes to the error state: LAST_WQE_REACHED for
	// it, and no flush of the SRQ's WQEs, which are not its own.
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	ASSERT_TRUE(modify(receivers_[0].get(), a, IBV_QP_STATE, "->ERR"));
	const auto ev = next_event(ctx_.get(), slow(10s));
	ASSERT_TRUE(ev && ev->event_type == IBV_EVENT_QP_LAST_WQE_REACHED)
		<< "want QP_LAST_WQE_REACHED, got " << event_str(ev);
	EXPECT_EQ(ev->element.qp, receivers_[0].get());
	EXPECT_TRUE(quiet(rcq_.get()));
	EXPECT_TRUE(no_event()) << "LAST_WQE_REACHED once";

	// All four WQEs are still there for the second receiver, in order.
	for (uint32_t seq = 0; seq < 4; seq++) {
		ibv_sge sg = stage(src, 1, seq);
		ASSERT_EQ(send(1, seq, &sg), 0);
		ASSERT_TRUE(sends_done(1, 1));
		const auto wc = poll_n(rcq_.get(), 1);
		ASSERT_EQ(wc.size(), 1u);
		EXPECT_EQ(wc[0].wr_id, seq);
		ASSERT_TRUE(rx.check(wc[0]));
	}
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, UdQpsReceiveDatagramsThroughTheSrq)
{
	// Datagrams carry the 40-byte GRH area before the payload.
	constexpr uint32_t kGrh = 40, kQkey = 0x1234;
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(4, 1, &g), 0);
	ASSERT_EQ(g.max_wr, 4u) << "the test assumes an exact capacity";
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";

	auto ud_qp = [&](ibv_cq *cq, bool on_srq) {
		// receivers outlive this test's CQ (TearDown destroys them)
		ibv_qp_init_attr a{};
		a.send_cq = on_srq ? rcq_.get() : cq;
		a.recv_cq = on_srq ? rcq_.get() : cq;
		a.srq = on_srq ? srq_.get() : nullptr;
		a.qp_type = IBV_QPT_UD;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = on_srq ? 0 : 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		Qp qp(ibv_create_qp(pd_.get(), &a));
		if (!qp)
			return qp;
		if (!ud_to_rts(qp.get(), kQkey))
			return Qp();
		return qp;
	};
	Cq scq(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(scq) << std::strerror(errno);
	Qp tx = ud_qp(scq.get(), false);
	ASSERT_TRUE(tx) << std::strerror(errno);
	for (int i = 0; i < 2; i++) {
		receivers_.push_back(ud_qp(scq.get(), true));
		ASSERT_TRUE(receivers_.back()) << std::strerror(errno);
	}
	ibv_ah_attr aa = ah_attr(gid_, gid_index_);
	Ah ah(ibv_create_ah(pd_.get(), &aa));
	ASSERT_TRUE(ah) << "ibv_create_ah: " << std::strerror(errno);

	Region bufs(pd_.get(), 8 * kSlot), src(pd_.get(), kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	uint64_t next_id = 0;
	auto post_one = [&] {
		ibv_sge sg = bufs.sge((next_id % 8) * kSlot, kSlot);
		return post_srq(next_id++, &sg, 1);
	};
	// A datagram of len bytes (seed seq) to receiver r.
	auto datagram = [&](size_t r, uint32_t seq, uint32_t len) {
		for (uint32_t i = 0; i < len; i++)
			src.at(0)[i] = pat(seq, i);
		ibv_sge sg = src.sge(0, len);
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = seq;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah.get();
		wr.wr.ud.remote_qpn = receivers_[r]->qp_num;
		wr.wr.ud.remote_qkey = kQkey;
		if (ibv_post_send(tx.get(), &wr, &bad))
			return ::testing::AssertionFailure() << "post_send";
		const auto wc = poll_n(scq.get(), 1);
		if (wc.size() != 1 || wc[0].status != IBV_WC_SUCCESS)
			return ::testing::AssertionFailure()
			       << "no send completion";
		return ::testing::AssertionSuccess();
	};
	auto received = [&](size_t r, uint64_t id, uint32_t seq, uint32_t len) {
		const auto wc = poll_n(rcq_.get(), 1);
		if (wc.size() != 1)
			return ::testing::AssertionFailure()
			       << "no receive completion";
		const ibv_wc &w = wc[0];
		if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_RECV ||
		    w.wr_id != id || w.byte_len != kGrh + len ||
		    w.qp_num != receivers_[r]->qp_num ||
		    w.src_qp != tx->qp_num)
			return ::testing::AssertionFailure()
			       << wc_str(w) << ", src_qp " << w.src_qp
			       << ": want wr_id " << id << ", byte_len "
			       << kGrh + len << ", qp_num "
			       << receivers_[r]->qp_num << ", src_qp "
			       << tx->qp_num;
		const uint8_t *p = bufs.at((id % 8) * kSlot) + kGrh;
		for (uint32_t i = 0; i < len; i++)
			if (p[i] != pat(seq, i))
				return ::testing::AssertionFailure()
				       << "byte " << i << " of the payload";
		return ::testing::AssertionSuccess();
	};

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(post_one(), 0);
	// The SRQ's WQEs in order, whichever QP receives.
	ASSERT_TRUE(datagram(0, 1, 100));
	ASSERT_TRUE(received(0, 0, 1, 100));
	ASSERT_TRUE(datagram(1, 2, 1000));
	ASSERT_TRUE(received(1, 1, 2, 1000));
	ASSERT_TRUE(datagram(0, 3, 0));
	ASSERT_TRUE(received(0, 2, 3, 0));

	// An empty SRQ drops the datagram (counted), and the QP carries on.
	const long drops = rx_drops("no_recv_wqe");
	ASSERT_TRUE(datagram(1, 4, 10));
	EXPECT_TRUE(quiet(rcq_.get()));
	if (drops >= 0) {
		EXPECT_EQ(rx_drops("no_recv_wqe"), drops + 1);
	}
	ASSERT_EQ(post_one(), 0);
	ASSERT_TRUE(datagram(1, 5, 20));
	ASSERT_TRUE(received(1, 3, 5, 20));
	EXPECT_TRUE(quiet(rcq_.get()));
}

} // namespace
} // namespace sroce::test
