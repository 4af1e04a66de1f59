// Memory windows and the life of what they depend on - the MR, the window
// itself, the QP a type 2 window is bound through, the process - on a live
// RDMA device, run inside a test-bed guest as root (part of
// verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Mw*.*'
// The fixtures are verbs_mw_fixture.h's (see verbs_mw_test.cc for the
// rules the cases follow).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>

#include "test_env.h"
#include "verbs_mw_fixture.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

// What the child of ExitWithBoundWindowsReleasesEverything does: its own
// context, two windows, then an MR they are bound to through a QP connected
// to itself, then _exit() without destroying anything.  Returns the failing
// step on failure.
int bind_and_exit(MwTest &t)
{
	Context c = open_device(test_device_name());
	if (!c)
		return 1;
	Pd pd(ibv_alloc_pd(c.get()));
	Buffer buf(kPage);
	if (!pd || !buf.data())
		return 2;
	// Windows first: if ib_core destroys the newest objects first, the MR
	// comes before its windows and must wait for them.
	Mw one(ibv_alloc_mw(pd.get(), IBV_MW_TYPE_1));
	Mw two(ibv_alloc_mw(pd.get(), IBV_MW_TYPE_2));
	Mr mr(ibv_reg_mr(pd.get(), buf.data(), kPage,
			 IBV_ACCESS_LOCAL_WRITE | kRemoteAll | IBV_ACCESS_MW_BIND));
	Cq cq(ibv_create_cq(c.get(), 8, nullptr, nullptr, 0));
	if (!mr || !cq)
		return 3;
	ibv_qp_init_attr a{};
	a.send_cq = a.recv_cq = cq.get();
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	Qp qp(ibv_create_qp(pd.get(), &a));
	if (!qp || !t.connect_to(qp.get(), qp->qp_num))
		return 4;
	if (!one || !two ||
	    post_bind(qp.get(), one.get(), mr.get(), buf.addr(), kPage,
		      kRemoteAll) ||
	    post_bind(qp.get(), two.get(), mr.get(), buf.addr(), 64,
		      IBV_ACCESS_REMOTE_READ))
		return 5;
	for (int i = 0; i < 2; i++) {
		const std::optional<ibv_wc> wc = next_wc(cq.get());
		if (!wc || wc->status != IBV_WC_SUCCESS)
			return 6;
	}
	// Deliberately skip every destructor: the kernel must clean up.
	_exit(0);
}

// A process that exits with windows bound to an MR leaves nothing behind:
// ib_core destroys its objects in its own order, and the MR can only go
// once the windows are gone.
TEST_F(MwTest, ExitWithBoundWindowsReleasesEverything)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("debugfs object counts");
	const long mws = debugfs_count("mws"), mrs = debugfs_count("mrs");
	ASSERT_GE(mws, 0);
	ASSERT_GE(mrs, 0);
	const pid_t pid = fork();
	ASSERT_GE(pid, 0) << std::strerror(errno);
	if (pid == 0)
		_exit(bind_and_exit(*this));
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid) << std::strerror(errno);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0) << "the child failed at step "
				      << WEXITSTATUS(st);
	const auto deadline = Clock::now() + kWait;
	while ((debugfs_count("mws") != mws || debugfs_count("mrs") != mrs) &&
	       Clock::now() < deadline)
		std::this_thread::sleep_for(10ms);
	EXPECT_EQ(debugfs_count("mws"), mws);
	EXPECT_EQ(debugfs_count("mrs"), mrs);
}

TEST_F(Mws, DeregOfMrWithBoundWindowFailsUntilDealloc)
{
	Mr mr(ibv_reg_mr(pd_.get(), arena_.data(), arena_.size(),
			 IBV_ACCESS_LOCAL_WRITE | kRemoteAll |
				 IBV_ACCESS_MW_BIND));
	ASSERT_TRUE(mr) << std::strerror(errno);
	Mw one = alloc(Type::One), two = alloc(Type::Two);
	ASSERT_TRUE(one && two) << std::strerror(errno);
	ASSERT_TRUE(bind(one.get(), mr.get(), win(), kWinLen, kRemoteAll));
	ASSERT_TRUE(bind(two.get(), mr.get(), win(), kPage, kRemoteAll));

	EXPECT_NE(ibv_dereg_mr(mr.get()), 0) << "two windows are bound";
	// Deallocating a bound window unbinds it.
	ASSERT_EQ(ibv_dealloc_mw(one.release()), 0);
	EXPECT_NE(ibv_dereg_mr(mr.get()), 0) << "one window is bound";
	ASSERT_EQ(ibv_dealloc_mw(two.release()), 0);
	EXPECT_EQ(ibv_dereg_mr(mr.release()), 0);
}

TEST_F(Mws, DeallocOfBoundWindowRevokesAccess)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	const uint32_t rkey = mw->rkey;
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS));
	std::memset(arena_.data() + kPage, kSentinel, 8);
	ASSERT_EQ(ibv_dealloc_mw(mw.release()), 0);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

// An invalidated type 2 window can be bound again, with a new key byte.
TEST_F(Mws, Type2RebindAfterInvalidation)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	const uint32_t first = mw->rkey;
	ASSERT_TRUE(local_inv(b_.qp.get(), b_.scq.get(), first,
			      IBV_WC_SUCCESS));
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kPage,
			 IBV_ACCESS_REMOTE_WRITE));
	ASSERT_NE(mw->rkey, first);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(arena_.data() + kPage, 8, 0xa1, "written bytes"));
	// the first key stays dead
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, first, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
}

// A type 2 window is bound through one QP (IBA 10.6.7.2.1): once that QP
// is destroyed, the QP that gets its number next must not inherit the
// window.  sroce hands out the lowest free number, so the next QP created
// has b's.
TEST_F(Mws, Type2WindowDoesNotPassToAQpReusingTheNumber)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	// the window works through b
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS));
	std::memset(arena_.data() + kPage, kSentinel, 8);

	const uint32_t b_num = b_->qp_num;
	b_.qp.reset();	// before its CQs
	b_ = End();
	End c;
	ASSERT_TRUE(make_end(c, pd_.get(), caps()));
	if (c->qp_num != b_num) {
		ASSERT_FALSE(testing_sroce())
			<< "sroce gave the new QP " << c->qp_num
			<< ", not the freed " << b_num;
		GTEST_SKIP() << not_sroce("reusing a QP number at once");
	}
	// A fresh requester too, so that the new pair's PSNs agree.
	a_.qp.reset();
	a_ = End();
	ASSERT_TRUE(make_end(a_, pd_.get(), caps()));
	ASSERT_TRUE(connect_to(a_.qp.get(), c->qp_num));
	ASSERT_TRUE(connect_to(c.qp.get(), a_->qp_num));
	// the new pair works, through the MR's own key
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mr_->rkey, arena_.addr(),
			 lmr_.get(), local_.addr(), 8, IBV_WC_SUCCESS));
	std::memset(arena_.data(), kSentinel, 8);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

} // namespace
} // namespace sroce::test
