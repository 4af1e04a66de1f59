// Re-registering memory regions: ibv_rereg_mr(3) (part of
// verbs_device_tests; the fixture is in verbs_mr_rereg_fixture.h, the
// conventions of the checks in verbs_rc_fixture.h).
//
// QP b owns the MR, QP a reaches it with RDMA WRITE and READ through the
// MR's rkey as it is after the re-registration (ibv_rereg_mr() updates
// lkey and rkey; whether they change is the driver's choice: sroce, which
// re-registers as "deregister followed by register", gives a new key).  A
// refused access ends a's QP in the error state, so it is each case's
// last step.
//
// rdma_rxe: its kernel driver has no rereg on 6.1 and changes only the PD
// and the access on 6.12, and rdma-core 44's rxe provider has no rereg_mr
// (libibverbs answers EOPNOTSUPP): the cases skip on it, saying so; sroce
// asserts every flag.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include "verbs_mr_rereg_fixture.h"

namespace sroce::test::rc {
namespace {

using namespace std::chrono_literals;

// The MR moves to another buffer: WRITE and READ through the new rkey reach
// the new buffer at its addresses, the old buffer is left alone and is no
// longer reachable, neither at its old addresses nor through the old key.
TEST_F(MrRereg, ChangeTranslationMovesTheRegion)
{
	ASSERT_NO_FATAL_FAILURE(SetUpPair());
	const long mrs = testing_sroce() ? debugfs_count("mrs") : -1;
	Buffer fresh = patterned(kLen, 2);
	const Buffer old_image = patterned(kLen, 1);
	uint8_t *const old_addr = mem_.buf.data();
	const uint32_t old_rkey = mem_.mr->rkey;

	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_TRANSLATION,
			nullptr, fresh.data(), kLen, 0);
	SKIP_IF_UNSUPPORTED("CHANGE_TRANSLATION");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->addr, fresh.data());
	EXPECT_EQ(mem_.mr->length, kLen);
	EXPECT_EQ(mem_.mr->pd, pd_.get());
	if (testing_sroce()) {
		EXPECT_EQ(debugfs_count("mrs"), mrs);
	}

	std::vector<uint8_t> want = fresh.image();
	ASSERT_TRUE(write(1, fresh.addr(100), mem_.mr->rkey, 3000));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 3000, want.begin() + 100);
	EXPECT_TRUE(same(fresh.data(), want.data(), kLen, "new region"));
	EXPECT_TRUE(same(old_addr, old_image.data(), kLen, "old buffer"));

	Region back(pd_.get(), kLen, kMrAll);
	ASSERT_TRUE(back) << std::strerror(errno);
	ASSERT_TRUE(read(2, back, fresh.addr(0), mem_.mr->rkey, kLen));
	EXPECT_TRUE(same(back.buf.data(), want.data(), kLen, "READ back"));

	// the old range through the new key: outside the region
	ASSERT_TRUE(write(3, reinterpret_cast<uintptr_t>(old_addr),
			  mem_.mr->rkey, 64, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(same(old_addr, old_image.data(), kLen, "old buffer"));
	EXPECT_TRUE(same(fresh.data(), want.data(), kLen, "new region"));
	if (old_rkey != mem_.mr->rkey) {
		// a second pair: a's QP is in the error state now
		End c, d;
		ASSERT_TRUE(pair(c, d));
		std::swap(a_, c);
		EXPECT_TRUE(write(4, reinterpret_cast<uintptr_t>(old_addr),
				  old_rkey, 64, IBV_WC_REM_ACCESS_ERR));
		std::swap(a_, c);
		EXPECT_TRUE(same(old_addr, old_image.data(), kLen,
				 "old buffer"));
	}
	// the MR goes before the buffer it now covers
	mem_.mr.reset();
}

// Access rights change both ways: REMOTE_READ taken away, REMOTE_WRITE
// given.
TEST_F(MrRereg, ChangeAccessGrantsAndRevokes)
{
	ASSERT_NO_FATAL_FAILURE(SetUpPair(IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_READ));
	Region back(pd_.get(), kLen, kMrAll);
	ASSERT_TRUE(back) << std::strerror(errno);
	ASSERT_TRUE(read(1, back, mem_.buf.addr(0), mem_.mr->rkey, 512));

	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			nullptr, 0,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	SKIP_IF_UNSUPPORTED("CHANGE_ACCESS");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->addr, mem_.buf.data());

	std::vector<uint8_t> want = mem_.buf.image();
	ASSERT_TRUE(write(2, mem_.buf.addr(8), mem_.mr->rkey, 1000));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 1000, want.begin() + 8);
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));

	ASSERT_TRUE(read(3, back, mem_.buf.addr(0), mem_.mr->rkey, 512,
			 IBV_WC_REM_ACCESS_ERR));
}

// The MR moves to another PD: b's QP (in the fixture's PD) reaches it only
// while it is in that PD.
TEST_F(MrRereg, ChangePdMovesTheRegionBetweenPds)
{
	ASSERT_TRUE(pair(a_, b_));
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	mem_ = Region(other.get(), kLen, kMrAll, 1);
	ASSERT_TRUE(mem_) << std::strerror(errno);

	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pd_.get(),
			nullptr, 0, 0);
	SKIP_IF_UNSUPPORTED("CHANGE_PD");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pd_.get());
	// to the PD it is in: nothing to do, and no error
	const uint32_t rkey = mem_.mr->rkey;
	ASSERT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pd_.get(),
			nullptr, 0, 0), 0)
		<< std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pd_.get());
	EXPECT_EQ(mem_.mr->rkey, rkey);
	std::vector<uint8_t> want = mem_.buf.image();
	ASSERT_TRUE(write(1, mem_.buf.addr(0), mem_.mr->rkey, 2048));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 2048, want.begin());
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));

	// The PD it leaves can go once the MR is gone from it.
	ASSERT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, other.get(),
			nullptr, 0, 0), 0)
		<< std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, other.get());
	ASSERT_TRUE(write(2, mem_.buf.addr(0), mem_.mr->rkey, 64,
			  IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
	ASSERT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pd_.get(),
			nullptr, 0, 0), 0);
	EXPECT_EQ(ibv_dealloc_pd(other.release()), 0);
}

// All three at once: a new buffer in another PD, read-only for the peer.
TEST_F(MrRereg, AllFlagsAtOnce)
{
	ASSERT_TRUE(pair(a_, b_));
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	// from another PD than b's QP, into its PD
	mem_ = Region(other.get(), kLen, kMrAll, 1);
	ASSERT_TRUE(mem_) << std::strerror(errno);
	Buffer fresh = patterned(kLen, 5);

	const int r0 = rereg(mem_.mr.get(),
			     IBV_REREG_MR_CHANGE_TRANSLATION |
				     IBV_REREG_MR_CHANGE_PD |
				     IBV_REREG_MR_CHANGE_ACCESS,
			     pd_.get(), fresh.data(), kLen,
			     IBV_ACCESS_REMOTE_READ);
	SKIP_IF_UNSUPPORTED("with all flags");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->addr, fresh.data());
	Region back(pd_.get(), kLen, kMrAll);
	ASSERT_TRUE(back) << std::strerror(errno);
	ASSERT_TRUE(read(1, back, fresh.addr(4096), mem_.mr->rkey, 4096));
	EXPECT_TRUE(same(back.buf.data(), fresh.data() + 4096, 4096,
			 "READ of the new region"));
	const std::vector<uint8_t> want = fresh.image();
	ASSERT_TRUE(write(2, fresh.addr(0), mem_.mr->rkey, 64,
			  IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(same(fresh.data(), want.data(), kLen, "new region"));
	mem_.mr.reset();
	EXPECT_EQ(ibv_dealloc_pd(other.release()), 0);
}

// Bad requests fail and leave the MR as it was (it still works).  What
// libibverbs refuses itself is IBV_REREG_MR_ERR_INPUT, what the kernel
// refuses IBV_REREG_MR_ERR_CMD; errno says why.
TEST_F(MrRereg, BadRequestsFailWithTheRightErrno)
{
	ASSERT_NO_FATAL_FAILURE(SetUpPair());
	ibv_mr *const mr = mem_.mr.get();
	int e = 0;

	// a flag libibverbs does not know; a translation without a length
	// or an address; access bits without CHANGE_ACCESS
	EXPECT_EQ(rereg(mr, 1 << 3, nullptr, nullptr, 0, 0, &e),
		  IBV_REREG_MR_ERR_INPUT);
	EXPECT_EQ(e, EINVAL);
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
			mem_.buf.data(), 0, 0, &e),
		  IBV_REREG_MR_ERR_INPUT);
	EXPECT_EQ(e, EINVAL);
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr,
			kLen, 0, &e),
		  IBV_REREG_MR_ERR_INPUT);
	EXPECT_EQ(e, EINVAL);
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_PD, pd_.get(), nullptr, 0,
			IBV_ACCESS_REMOTE_READ, &e),
		  IBV_REREG_MR_ERR_INPUT);
	EXPECT_EQ(e, EINVAL);

	// no flag at all (ib_core)
	EXPECT_EQ(rereg(mr, 0, nullptr, nullptr, 0, 0, &e),
		  IBV_REREG_MR_ERR_CMD);
	SKIP_IF_UNSUPPORTED("");
	EXPECT_EQ(e, EINVAL);
	// remote write without local write; an unknown access bit (ib_core)
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			IBV_ACCESS_REMOTE_WRITE, &e),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(e, EINVAL);
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
			IBV_ACCESS_LOCAL_WRITE | (1 << 30), &e),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(e, EINVAL);
	// a PD handle that names nothing, and one that names the MR
	ibv_pd bogus = *pd_;
	bogus.handle = 0x7ffffff0;
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_PD, &bogus, nullptr, 0, 0, &e),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(e, ENOENT);
	bogus.handle = mr->handle;
	EXPECT_EQ(rereg(mr, IBV_REREG_MR_CHANGE_PD, &bogus, nullptr, 0, 0, &e),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(e, EINVAL);
	EXPECT_EQ(mr->pd, pd_.get());

	// memory that is not there to pin (the driver's ib_umem_get())
	void *hole = mmap(nullptr, kLen, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(hole, MAP_FAILED);
	const int r = rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, hole,
			    kLen, 0, &e);
	munmap(hole, kLen);
	if (!unsupported_) {
		EXPECT_EQ(r, IBV_REREG_MR_ERR_CMD);
		EXPECT_EQ(e, EFAULT);
		EXPECT_EQ(mr->addr, mem_.buf.data());
	}

	// the MR as it was
	std::vector<uint8_t> want = mem_.buf.image();
	ASSERT_TRUE(write(1, mem_.buf.addr(16), mr->rkey, 100));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 100, want.begin() + 16);
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
}

// Re-registrations of every kind leave no MR behind: the object counts are
// back once the MR is gone.
TEST_F(MrRereg, RereggedMrLeavesNothingBehind)
{
	const auto before = debugfs_counts();
	{
		Pd other(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(other) << std::strerror(errno);
		Buffer second = patterned(kLen, 4);
		Region r(pd_.get(), kLen, kMrAll);
		ASSERT_TRUE(r) << std::strerror(errno);
		const int r0 = rereg(r.mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
				nullptr, 0, IBV_ACCESS_LOCAL_WRITE);
		SKIP_IF_UNSUPPORTED("CHANGE_ACCESS");
		ASSERT_EQ(r0, 0) << std::strerror(errno);
		ASSERT_EQ(rereg(r.mr.get(), IBV_REREG_MR_CHANGE_TRANSLATION,
				nullptr, second.data(), 4096, 0), 0);
		ASSERT_EQ(rereg(r.mr.get(), IBV_REREG_MR_CHANGE_PD, other.get(),
				nullptr, 0, 0), 0);
		ASSERT_EQ(rereg(r.mr.get(),
				IBV_REREG_MR_CHANGE_TRANSLATION |
					IBV_REREG_MR_CHANGE_PD,
				pd_.get(), r.buf.data(), kLen, 0), 0);
		if (testing_sroce()) {
			EXPECT_EQ(debugfs_count("mrs"), before.at("mrs") + 1);
		}
		r.mr.reset();
		EXPECT_EQ(ibv_dealloc_pd(other.release()), 0);
	}
	EXPECT_EQ(debugfs_counts(), before);
}

// A memory window bound to the MR makes the re-registration fail, as it
// makes deregistration fail (IBA 10.6.7.2.2, 11.2.8.x); once the window is
// gone it succeeds.  Only on sroce: rdma_rxe does not check.
TEST_F(MrRereg, BoundWindowFailsWithEbusy)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("refusal of rereg with bound windows");
	ASSERT_NO_FATAL_FAILURE(SetUpPair(kMrAll | IBV_ACCESS_MW_BIND));
	Mw mw(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_1));
	ASSERT_TRUE(mw) << std::strerror(errno);
	ibv_mw_bind bind{};
	bind.wr_id = 7;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = mem_.mr.get();
	bind.bind_info.addr = mem_.buf.addr(0);
	bind.bind_info.length = 4096;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(ibv_bind_mw(b_.qp.get(), mw.get(), &bind), 0);
	ASSERT_TRUE(completes(b_.scq.get(), {ok(7, IBV_WC_BIND_MW, b_.qp.get())}));

	int e = 0;
	EXPECT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			nullptr, 0, IBV_ACCESS_LOCAL_WRITE, &e),
		  IBV_REREG_MR_ERR_CMD);
	EXPECT_EQ(e, EBUSY);
	// the window and the MR still work
	ASSERT_TRUE(write(1, mem_.buf.addr(0), mw->rkey, 64));
	ASSERT_TRUE(write(2, mem_.buf.addr(4096), mem_.mr->rkey, 64));

	mw.reset();
	EXPECT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_ACCESS, nullptr,
			nullptr, 0, IBV_ACCESS_LOCAL_WRITE, &e), 0)
		<< std::strerror(e);
	ASSERT_TRUE(write(3, mem_.buf.addr(0), mem_.mr->rkey, 64,
			  IBV_WC_REM_ACCESS_ERR));
}

} // namespace
} // namespace sroce::test::rc
