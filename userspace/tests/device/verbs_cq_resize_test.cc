// Resizing completion queues: ibv_resize_cq(3) (part of verbs_device_tests;
// the fixture and the conventions of the checks are in verbs_rc_fixture.h).
//
// The CQ under test is mostly the receive CQ of QP b, which SENDs from QP
// a fill with completions that stay there, unpolled, while the CQ is
// resized.  When a's send completions are all in, so are b's receive
// completions: a responder posts the receive completion before it sends
// the ACK that completes the SEND at the requester (sroce and rdma_rxe
// alike), so the number pending is known exactly without polling.
//
// ibv_resize_cq(3): the CQ holds at least cqe entries afterwards (cq->cqe
// is the actual size), cqe must be at least the number of unpolled
// entries; rdma_rxe refuses fewer, and so does sroce (EINVAL), as it
// refuses a size of 0 or beyond max_cqe.  The completions pending survive
// in order, and new ones land behind them.
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <thread>

#include "verbs_rc_fixture.h"

namespace sroce::test {
namespace {

using namespace rc;
using namespace std::chrono_literals;

class CqResize : public Rc {
protected:
	// n SENDs of 64 bytes from a to b, wr_ids first..first+n-1 on both
	// sides, in batches that a's send CQ holds; returns once a has all
	// its send completions, so that b's receive CQ then holds the n
	// receive completions.
	void deliver(End &a, End &b, uint32_t first, uint32_t n)
	{
		if (!rbuf_) {
			rbuf_ = Region(pd_.get(), 64 * 1024, kMrAll);
			sbuf_ = Region(pd_.get(), 64 * 1024, kMrAll, 7);
			ASSERT_TRUE(rbuf_ && sbuf_) << std::strerror(errno);
		}
		for (uint32_t i = first; i < first + n; i++) {
			ibv_sge rs = rbuf_.sge(64 * (i % 1024), 64);
			ASSERT_EQ(post_recv(b.qp.get(), i, &rs, 1), 0) << i;
		}
		for (uint32_t i = first; i < first + n;) {
			std::vector<Want> sends;
			for (; i < first + n && sends.size() < 16; i++) {
				ibv_sge s = sbuf_.sge(64 * (i % 1024), 64);
				ASSERT_EQ(post(a.qp.get(), {send_wr(i, &s, 1)}),
					  0) << i;
				sends.push_back(ok(i, IBV_WC_SEND, a.qp.get()));
			}
			ASSERT_TRUE(completes(a.scq.get(), sends));
		}
	}

	// The receive completions first..first+n-1 of b, in order.
	std::vector<Want> receives(const End &b, uint32_t first, uint32_t n)
	{
		std::vector<Want> w;
		for (uint32_t i = first; i < first + n; i++)
			w.push_back(ok(i, IBV_WC_RECV, b.qp.get(), 64u));
		return w;
	}

	Region rbuf_, sbuf_;
};

Caps caps(int cqe, uint32_t wr = 128)
{
	Caps c;
	c.cqe = cqe;
	c.send_wr = wr;
	c.recv_wr = wr;
	return c;
}

// 20 completions wait in a CQ of 32; after growing it to 200, 100 more
// arrive behind them (more than the old size could hold) and all 120 are
// polled in order, each once.
TEST_F(CqResize, GrowKeepsPendingCompletionsInOrder)
{
	End a, b;
	ASSERT_TRUE(pair(a, b, caps(32)));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 0, 20));
	const long rings = testing_sroce() ? debugfs_count("rings") : -1;

	ASSERT_EQ(ibv_resize_cq(b.rcq.get(), 200), 0);
	EXPECT_GE(b.rcq->cqe, 200);
	// the old ring is freed: as many rings as before
	if (testing_sroce()) {
		EXPECT_EQ(debugfs_count("rings"), rings);
	}

	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 20, 100));
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 0, 120)));
	EXPECT_TRUE(quiet(b.rcq.get()));
	EXPECT_TRUE(same(rbuf_.buf.data(), sbuf_.buf.data(), 120 * 64,
			 "received data"));
}

// 40 completions wait in a CQ of 256, which shrinks to exactly 40: they are
// all still there, in order, and the CQ takes new ones afterwards.
TEST_F(CqResize, ShrinkKeepsPendingCompletionsInOrder)
{
	End a, b;
	ASSERT_TRUE(pair(a, b, caps(256)));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 0, 40));

	ASSERT_EQ(ibv_resize_cq(b.rcq.get(), 40), 0);
	EXPECT_GE(b.rcq->cqe, 40);
	// A shrink may leave the size as it was (ibv_resize_cq(3)); sroce
	// rounds up to a power of two and does shrink.
	if (testing_sroce()) {
		EXPECT_EQ(b.rcq->cqe, 64);
	}

	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 0, 40)));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 40, 30));
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 40, 30)));
	EXPECT_TRUE(quiet(b.rcq.get()));
}

// Fewer entries than completions pending: EINVAL, and nothing changes; as
// many as are pending: fine.  Then shrinking an empty CQ to 1.
TEST_F(CqResize, ShrinkBelowThePendingCompletionsFailsWithEinval)
{
	End a, b;
	ASSERT_TRUE(pair(a, b, caps(64)));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 0, 20));
	const int cqe = b.rcq->cqe;

	for (int n : {1, 10, 19}) {
		SCOPED_TRACE(n);
		EXPECT_EQ(ibv_resize_cq(b.rcq.get(), n), EINVAL);
		EXPECT_EQ(b.rcq->cqe, cqe);
	}
	ASSERT_EQ(ibv_resize_cq(b.rcq.get(), 20), 0);
	EXPECT_GE(b.rcq->cqe, 20);
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 0, 20)));

	ASSERT_EQ(ibv_resize_cq(b.rcq.get(), 1), 0);
	EXPECT_GE(b.rcq->cqe, 1);
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 20, 1));
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 20, 1)));
}

// Sizes outside [1, max_cqe], garbage included: EINVAL, the CQ unchanged
// and still working.
TEST_F(CqResize, SizesOutsideTheLimitsFailWithEinval)
{
	End a, b;
	ASSERT_TRUE(pair(a, b, caps(64)));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 0, 5));
	const int cqe = b.rcq->cqe;

	for (int n : {0, -1, -64, INT_MIN, dev_.max_cqe + 1, INT_MAX}) {
		SCOPED_TRACE(n);
		EXPECT_EQ(ibv_resize_cq(b.rcq.get(), n), EINVAL);
		EXPECT_EQ(b.rcq->cqe, cqe);
	}
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 5, 5));
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 0, 10)));
}

// An armed CQ stays armed across a resize: the next completion raises the
// event.
TEST_F(CqResize, ArmingSurvivesTheResize)
{
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);
	End a, b;
	ASSERT_TRUE(make_end(a, pd_.get(), caps(32)));
	ASSERT_TRUE(make_end(b, pd_.get(), caps(32), nullptr, ch.get()));
	ASSERT_TRUE(connect(a.qp.get(), b->qp_num, gid_, gid_index_,
			    with_mtu({})));
	ASSERT_TRUE(connect(b.qp.get(), a->qp_num, gid_, gid_index_,
			    with_mtu({})));

	ASSERT_EQ(ibv_req_notify_cq(b.rcq.get(), 0), 0);
	ASSERT_EQ(ibv_resize_cq(b.rcq.get(), 512), 0);
	EXPECT_TRUE(no_cq_event(ch.get(), kQuiet));
	ASSERT_NO_FATAL_FAILURE(deliver(a, b, 0, 3));
	EXPECT_TRUE(cq_event(ch.get(), b.rcq.get()));
	EXPECT_TRUE(completes(b.rcq.get(), receives(b, 0, 3)));
}

// A CQ resized over and over by another thread while RDMA WRITEs keep
// completing into it and are polled: every completion arrives once, in
// order, successful; every resize succeeds (never more completions pending
// than the smallest size: the SQ holds 32).
TEST_F(CqResize, ResizeWhileTrafficCompletes)
{
	constexpr uint32_t kDepth = 32, kTotal = 3000;
	End a, b;
	ASSERT_TRUE(pair(a, b, caps(64, kDepth)));
	ASSERT_GE(a.cap.max_send_wr, kDepth);
	Region src(pd_.get(), 4096, kMrAll, 3), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	std::atomic<bool> stop{false};
	std::atomic<int> resized{0}, failed{0};
	// stopped and joined however the case ends
	struct Joiner {
		std::atomic<bool> &stop;
		std::thread t;
		~Joiner()
		{
			stop = true;
			if (t.joinable())
				t.join();
		}
	} resizer{stop, std::thread([&] {
		static constexpr int kSizes[] = {int(kDepth), 4096, 64, 1000,
						 33, 128};
		for (size_t i = 0; !stop.load(); i++) {
			const int r = ibv_resize_cq(
				a.scq.get(), kSizes[i % std::size(kSizes)]);
			(r ? failed : resized)++;
			if (r && failed == 1)
				ADD_FAILURE() << "ibv_resize_cq: " << err_str(r);
			std::this_thread::sleep_for(1ms);
		}
	})};

	uint32_t posted = 0, done = 0;
	const auto deadline = Clock::now() + slow(120s);
	while (done < kTotal && Clock::now() < deadline) {
		while (posted < kTotal && posted - done < kDepth) {
			ibv_sge s = src.sge(posted % 64 * 64, 64);
			const int r = post(a.qp.get(),
					   {rdma_wr(posted, IBV_WR_RDMA_WRITE,
						    &s, 1,
						    dst.buf.addr(posted % 64 * 64),
						    dst.mr->rkey)});
			ASSERT_EQ(r, 0) << "post " << posted;
			posted++;
		}
		ibv_wc wc[8];
		const int k = ibv_poll_cq(a.scq.get(), 8, wc);
		ASSERT_GE(k, 0);
		for (int i = 0; i < k; i++, done++)
			ASSERT_TRUE(matches(wc[i], ok(done, IBV_WC_RDMA_WRITE,
						      a.qp.get())))
				<< "completion " << done;
		if (!k)
			std::this_thread::sleep_for(kRcNap);
	}
	stop = true;
	resizer.t.join();
	EXPECT_EQ(done, kTotal);
	EXPECT_EQ(failed.load(), 0);
	EXPECT_GT(resized.load(), 10) << "the resizes hardly overlapped";
	EXPECT_TRUE(quiet(a.scq.get()));
	EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), 4096, "WRITE target"));
}

// Many resizes of one CQ leave no ring behind: the object counts are back
// once the CQ is gone.
TEST_F(CqResize, ResizesLeaveNothingBehind)
{
	const auto before = debugfs_counts();
	{
		Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(cq) << std::strerror(errno);
		for (int n : {17, 4096, 1, std::min(dev_.max_cqe, 100000), 2,
			      64})
			ASSERT_EQ(ibv_resize_cq(cq.get(), n), 0) << n;
		EXPECT_GE(cq->cqe, 64);
		ibv_wc wc[4];
		EXPECT_EQ(ibv_poll_cq(cq.get(), 4, wc), 0);
		EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	}
	EXPECT_EQ(debugfs_counts(), before);
}

} // namespace
} // namespace sroce::test
