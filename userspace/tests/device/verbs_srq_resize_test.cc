// Resizing shared receive queues: ibv_modify_srq() with IBV_SRQ_MAX_WR
// (part of verbs_device_tests; the fixture and the expectations are in
// verbs_srq_fixture.h).  Growing keeps every posted WQE in order;
// shrinking below what is posted, to 0 or above max_srq_wr fails with
// EINVAL and changes nothing; ibv_query_srq() reports at least what was
// asked; a resize while QPs receive through the SRQ loses, duplicates and
// corrupts nothing; resizes leave no object behind.
#include <gtest/gtest.h>

#include <atomic>

#include "verbs_srq_fixture.h"

namespace sroce::test {
namespace {

using namespace srq;
using namespace std::chrono_literals;

// Receive buffers: one kArea-byte area per SRQ WQE, named by its wr_id.
constexpr uint32_t kArea = 2048;

uint32_t msg_len(size_t sender, uint32_t seq)
{
	return 1 + (uint32_t(sender) * 577u + seq * 131u) % (kArea - 1);
}

uint32_t msg_seed(size_t sender, uint32_t seq)
{
	return uint32_t(sender) << 20 | seq | 0x80000u;
}

// The debugfs object counts on sroce; empty elsewhere.
std::map<std::string, long> counts()
{
	return testing_sroce() ? debugfs_counts() : std::map<std::string, long>{};
}

class SrqResize : public Srqs {
protected:
	// Posts WQE id with the receive area of that id.
	int post_area(const Region &bufs, uint64_t id)
	{
		ibv_sge sg = bufs.sge(size_t(id) * kArea, kArea);
		return post_srq(id, &sg, 1);
	}

	int resize(uint32_t max_wr, int extra_mask = 0, uint32_t limit = 0)
	{
		ibv_srq_attr a{};
		a.max_wr = max_wr;
		a.srq_limit = limit;
		return ibv_modify_srq(srq_.get(), &a,
				      IBV_SRQ_MAX_WR | extra_mask);
	}

	ibv_srq_attr query()
	{
		ibv_srq_attr a{};
		EXPECT_EQ(ibv_query_srq(srq_.get(), &a), 0);
		return a;
	}

	// Message seq of sender s into area seq of src.
	ibv_sge stage(const Region &src, size_t s, uint32_t seq)
	{
		const uint32_t len = msg_len(s, seq);
		uint8_t *p = src.at(size_t(seq) * kArea);
		for (uint32_t i = 0; i < len; i++)
			p[i] = pat(msg_seed(s, seq), i);
		return src.sge(size_t(seq) * kArea, len);
	}

	// Receive completion wc is message seq of sender s, landed in the
	// area of its wr_id (which is then refilled with the sentinel).
	::testing::AssertionResult check(const ibv_wc &wc, const Region &bufs,
					 size_t s, uint32_t seq)
	{
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.qp_num != receivers_[s]->qp_num)
			return ::testing::AssertionFailure()
			       << "bad receive completion " << wc_str(wc)
			       << " for sender " << s;
		const uint32_t len = msg_len(s, seq);
		if (wc.byte_len != len)
			return ::testing::AssertionFailure()
			       << wc_str(wc) << ": message " << seq << " of "
			       << len << " bytes";
		uint8_t *p = bufs.at(size_t(wc.wr_id) * kArea);
		for (uint32_t i = 0; i < kArea; i++) {
			const uint8_t want = i < len ? pat(msg_seed(s, seq), i)
						     : kSentinel;
			if (p[i] != want)
				return ::testing::AssertionFailure()
				       << wc_str(wc) << ": byte " << i
				       << " of message " << seq << " is wrong";
		}
		std::memset(p, kSentinel, kArea);
		return ::testing::AssertionSuccess();
	}

	// n messages from sender 0, each into the next WQE of the SRQ: with a
	// single receiving QP the WQEs are taken in posting order, so message
	// i lands in the WQE with wr_id first + i.
	void send_in_order(const Region &bufs, uint32_t first, uint32_t n)
	{
		Region src(pd_.get(), size_t(n) * kArea);
		ASSERT_TRUE(src) << std::strerror(errno);
		for (uint32_t i = 0; i < n;) {
			uint32_t batch = 0;
			for (; i < n && batch < 32; i++, batch++) {
				ibv_sge sg = stage(src, 0, i);
				ASSERT_EQ(send(0, i, &sg), 0) << i;
			}
			ASSERT_TRUE(sends_done(0, batch));
		}
		const auto got = poll_n(rcq_.get(), n);
		ASSERT_EQ(got.size(), n);
		for (uint32_t i = 0; i < n; i++) {
			ASSERT_EQ(got[i].wr_id, first + i)
				<< "WQE taken out of order: " << wc_str(got[i]);
			ASSERT_TRUE(check(got[i], bufs, 0, i));
		}
		EXPECT_TRUE(quiet(rcq_.get()));
	}
};

// 8 WQEs fill an SRQ of 8; it grows to 64 and 40 more go in behind them
// (more than the old ring held); 48 messages then take all 48 in order.
TEST_F(SrqResize, GrowKeepsPostedWqesInOrder)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(1));
	Region bufs(pd_.get(), 64 * size_t(kArea));
	ASSERT_TRUE(bufs) << std::strerror(errno);
	uint32_t id = 0;
	for (; id < g.max_wr; id++)
		ASSERT_EQ(post_area(bufs, id), 0) << id;
	EXPECT_EQ(post_area(bufs, 63), ENOMEM) << "the SRQ should be full";
	const long rings = testing_sroce() ? debugfs_count("rings") : -1;

	ASSERT_EQ(resize(64), 0);
	const ibv_srq_attr q = query();
	EXPECT_GE(q.max_wr, 64u);
	EXPECT_EQ(q.max_sge, g.max_sge);
	EXPECT_EQ(q.srq_limit, 0u);
	// the old ring is gone: as many rings as before
	if (testing_sroce()) {
		EXPECT_EQ(debugfs_count("rings"), rings);
	}

	for (; id < 48; id++)
		ASSERT_EQ(post_area(bufs, id), 0) << id;
	ASSERT_NO_FATAL_FAILURE(send_in_order(bufs, 0, 48));
}

// 20 WQEs in an SRQ of 64: shrinking to 19 (below what is posted), to 0
// or above max_srq_wr fails with EINVAL and changes nothing; shrinking to
// exactly 20 works, and the smaller ring is full after the rest of its
// capacity; every WQE is still taken, in order.
TEST_F(SrqResize, ShrinkBelowPostedOrBeyondTheLimitsFails)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(64, 1, &g), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(1));
	Region bufs(pd_.get(), 64 * size_t(kArea));
	ASSERT_TRUE(bufs) << std::strerror(errno);
	uint32_t id = 0;
	for (; id < 20; id++)
		ASSERT_EQ(post_area(bufs, id), 0) << id;

	// rdma_rxe accepts 19: it compares the rounded-up size (testing.md)
	EXPECT_EQ(resize(19), EINVAL);
	EXPECT_EQ(resize(1), EINVAL);
	EXPECT_EQ(resize(0), EINVAL);
	EXPECT_EQ(resize(dev_.max_srq_wr + 1), EINVAL);
	EXPECT_EQ(resize(UINT32_MAX), EINVAL);
	EXPECT_EQ(query().max_wr, g.max_wr);

	ASSERT_EQ(resize(20), 0);
	const uint32_t now = query().max_wr;
	EXPECT_GE(now, 20u);
	EXPECT_LT(now, g.max_wr) << "the SRQ did not shrink";
	for (; id < now; id++)
		ASSERT_EQ(post_area(bufs, id), 0) << id;
	EXPECT_EQ(post_area(bufs, 63), ENOMEM) << "the SRQ should be full";
	ASSERT_NO_FATAL_FAILURE(send_in_order(bufs, 0, now));
}

// IBV_SRQ_LIMIT with IBV_SRQ_MAX_WR: both apply, or (a limit above the
// new capacity) neither; growing to max_srq_wr works.
TEST_F(SrqResize, ResizeWithLimitInOneCall)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(1));
	Region bufs(pd_.get(), 64 * size_t(kArea));
	ASSERT_TRUE(bufs) << std::strerror(errno);
	for (uint32_t id = 0; id < 6; id++)
		ASSERT_EQ(post_area(bufs, id), 0) << id;

	ASSERT_EQ(resize(32, IBV_SRQ_LIMIT, 4), 0);
	ibv_srq_attr q = query();
	EXPECT_GE(q.max_wr, 32u);
	EXPECT_EQ(q.srq_limit, 4u);
	const uint32_t size = q.max_wr;

	EXPECT_EQ(resize(16, IBV_SRQ_LIMIT, size + 100), EINVAL);
	q = query();
	EXPECT_EQ(q.max_wr, size);
	EXPECT_EQ(q.srq_limit, 4u);

	// 6 posted, limit 4: the third message leaves 3, below the limit.
	ASSERT_NO_FATAL_FAILURE(send_in_order(bufs, 0, 3));
	EXPECT_TRUE(srq_event(srq_.get()));
	EXPECT_EQ(srq_limit(), 0u);

	ASSERT_EQ(resize(dev_.max_srq_wr), 0);
	EXPECT_GE(query().max_wr, uint32_t(dev_.max_srq_wr));
}

// Three QPs receive 300 messages each through an SRQ kept 16 WQEs full by
// refills, while another thread resizes it between 16 and 512 over and
// over: every message arrives exactly once, in order per QP, with its
// data, and every resize succeeds (none asks for less than is posted).
TEST_F(SrqResize, ResizeWhileQpsReceive)
{
	constexpr size_t kQps = 3;
	constexpr uint32_t kEach = 300;
	constexpr uint32_t kPool = 16;
	ASSERT_EQ(make_srq(kPool), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(kQps));
	Region bufs(pd_.get(), size_t(kPool) * kArea);
	std::vector<Region> srcs;
	for (size_t s = 0; s < kQps; s++) {
		srcs.emplace_back(pd_.get(), size_t(kEach) * kArea);
		ASSERT_TRUE(srcs.back()) << std::strerror(errno);
	}
	ASSERT_TRUE(bufs) << std::strerror(errno);
	std::set<uint64_t> posted;
	for (uint32_t id = 0; id < kPool; id++) {
		ASSERT_EQ(post_area(bufs, id), 0) << id;
		posted.insert(id);
	}

	std::atomic<bool> stop{false};
	std::atomic<int> resizes{0}, failed{0}, last_err{0};
	std::thread resizer([&] {
		static constexpr uint32_t kSizes[] = {512, 16, 64, 17, 256, 32};
		for (size_t i = 0; !stop.load(); i++) {
			const int r = resize(kSizes[i % std::size(kSizes)]);
			if (r) {
				failed++;
				last_err = r;
			}
			resizes++;
			std::this_thread::sleep_for(200us);
		}
	});

	std::vector<uint32_t> sent(kQps, 0), got(kQps, 0);
	std::map<uint32_t, size_t> sender_of;
	for (size_t s = 0; s < kQps; s++)
		sender_of[receivers_[s]->qp_num] = s;
	size_t total = 0;
	const auto deadline = Clock::now() + 4 * kWait;
	while (total < kQps * kEach && Clock::now() < deadline &&
	       !HasFatalFailure()) {
		// up to 4 messages of each sender in flight
		for (size_t s = 0; s < kQps; s++)
			while (sent[s] < kEach && sent[s] - got[s] < 4) {
				ibv_sge sg = stage(srcs[s], s, sent[s]);
				ASSERT_EQ(send(s, sent[s], &sg), 0);
				sent[s]++;
			}
		ibv_wc wc[16];
		const int k = ibv_poll_cq(rcq_.get(), 16, wc);
		ASSERT_GE(k, 0);
		for (int i = 0; i < k; i++) {
			auto it = sender_of.find(wc[i].qp_num);
			ASSERT_NE(it, sender_of.end()) << wc_str(wc[i]);
			ASSERT_EQ(posted.erase(wc[i].wr_id), 1u)
				<< wc_str(wc[i]) << ": WQE taken twice or "
				<< "never posted";
			ASSERT_TRUE(check(wc[i], bufs, it->second,
					  got[it->second]++));
			ASSERT_EQ(post_area(bufs, wc[i].wr_id), 0);
			posted.insert(wc[i].wr_id);
		}
		total += size_t(k);
		// the senders' CQs: 4 in flight each, so never full
		for (size_t s = 0; s < kQps; s++) {
			ibv_wc sw[8];
			const int n = ibv_poll_cq(senders_[s].scq.get(), 8, sw);
			ASSERT_GE(n, 0);
			for (int j = 0; j < n; j++)
				ASSERT_EQ(sw[j].status, IBV_WC_SUCCESS)
					<< wc_str(sw[j]);
		}
		if (!k)
			std::this_thread::sleep_for(50us);
	}
	stop = true;
	resizer.join();
	ASSERT_EQ(total, kQps * kEach);
	for (size_t s = 0; s < kQps; s++)
		EXPECT_EQ(got[s], kEach) << "sender " << s;
	EXPECT_EQ(failed.load(), 0) << "last error " << last_err.load();
	EXPECT_GT(resizes.load(), 10) << "too few resizes during the traffic";
	EXPECT_EQ(posted.size(), kPool);
	EXPECT_TRUE(quiet(rcq_.get()));
	EXPECT_GE(query().max_wr, kPool);
}

// 200 resizes of an SRQ with WQEs posted, then its destruction: no ring,
// mapping or SRQ is left behind, and the rings do not pile up meanwhile.
TEST_F(SrqResize, ManyResizesLeaveNothingBehind)
{
	const auto before = counts();
	{
		ibv_srq_attr g{};
		ASSERT_EQ(make_srq(4, 1, &g), 0);
		Region bufs(pd_.get(), 4 * size_t(kArea));
		ASSERT_TRUE(bufs) << std::strerror(errno);
		for (uint32_t id = 0; id < 4; id++)
			ASSERT_EQ(post_area(bufs, id), 0) << id;
		const long rings =
			testing_sroce() ? debugfs_count("rings") : -1;
		for (uint32_t i = 0; i < 200; i++) {
			const uint32_t want = 4u << (i % 9);
			ASSERT_EQ(resize(want), 0) << want;
			ASSERT_GE(query().max_wr, want);
		}
		if (testing_sroce()) {
			EXPECT_EQ(debugfs_count("rings"), rings);
		}
		// refused ones leave nothing either
		for (uint32_t i = 0; i < 20; i++)
			ASSERT_EQ(resize(3), EINVAL);
		srq_.reset();
	}
	EXPECT_EQ(counts(), before);
}

} // namespace
} // namespace sroce::test
