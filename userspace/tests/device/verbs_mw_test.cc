// Memory windows, invalidation and SEND_WITH_INV on a live RDMA device, run
// inside a test-bed guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Mw*.*'
// As in verbs_rc_fixture.h, two RC QPs of the device under test are connected
// to each other through the device's own RoCE v2 GID.  QP "b" owns the
// memory and its windows (a type 2 window is bound through b, so remote
// accesses arriving on b may use it); QP "a" is the remote peer that reads,
// writes and invalidates through the windows' rkeys.
//
// What the cases expect is what the IBA (vol. 1, 10.6.7 and 9.4.1.1.3) and
// the libibverbs man pages (ibv_alloc_mw, ibv_bind_mw, ibv_post_send) say:
// - a bound window grants exactly its rights over exactly its range, whatever
//   the MR allows remotely; anything else is a remote access error
//   (IBV_WC_REM_ACCESS_ERR at the requester, whose QP goes to error);
// - a failed bind, LOCAL_INV of something that cannot be invalidated,
//   completes with IBV_WC_MW_BIND_ERR (the memory management error);
// - SEND_WITH_INV invalidates the rkey at the receiver, whose completion
//   carries IBV_WC_WITH_INV and the rkey; an rkey the receiver's QP may not
//   invalidate (a type 1 window, a registered MR) is an invalid request
//   (IBV_WC_REM_INV_REQ_ERR at the requester);
// - ibv_dereg_mr() fails while windows are bound to the MR.
#include <gtest/gtest.h>

#include <endian.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_mw_fixture.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

TEST_F(MwTest, DeviceReportsWindowsAndLimits)
{
	EXPECT_GT(dev_.max_mw, 0);
	EXPECT_TRUE(dev_.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	EXPECT_TRUE(dev_.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	EXPECT_TRUE(dev_.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
}

TEST_F(MwTest, AllocAndDeallocBothTypes)
{
	const long before = debugfs_count("mws");
	std::vector<Mw> mws;
	for (int i = 0; i < 8; i++) {
		mws.push_back(alloc(i % 2 ? Type::Two : Type::One));
		ASSERT_TRUE(mws.back()) << std::strerror(errno);
		EXPECT_NE(mws.back()->rkey, 0u);
		EXPECT_EQ(mws.back()->type,
			  i % 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
	}
	for (size_t i = 0; i < mws.size(); i++)
		for (size_t j = i + 1; j < mws.size(); j++)
			EXPECT_NE(mws[i]->rkey >> 8, mws[j]->rkey >> 8)
				<< "two windows share an rkey index";
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("mws"), before + 8);
	}
	mws.clear();
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("mws"), before);
	}
	errno = 0;
	EXPECT_EQ(ibv_alloc_mw(pd_.get(), ibv_mw_type(3)), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

// Remote WRITE, READ and FETCH_AND_ADD through a bound window, data checked.
class MwAccess : public Mws, public ::testing::WithParamInterface<Type> {};

TEST_P(MwAccess, WriteReadAtomicThroughWindow)
{
	Mw mw = alloc(GetParam());
	ASSERT_TRUE(mw) << std::strerror(errno);
	const uint32_t old_rkey = mw->rkey;
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	EXPECT_NE(mw->rkey, old_rkey) << "a bind takes a new key byte";
	EXPECT_EQ(mw->rkey >> 8, old_rkey >> 8);

	// WRITE 100 bytes at the window's last 100 bytes.
	const uint64_t at = win() + kWinLen - 100;
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, at, lmr_.get(),
			 local_.addr(), 100, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(arena_.data() + (at - arena_.addr()), 100, 0xa1,
			    "written bytes"));
	EXPECT_TRUE(all_are(arena_.data(), at - arena_.addr(), kSentinel,
			    "bytes before the write"));
	EXPECT_TRUE(all_are(arena_.data() + (at - arena_.addr()) + 100,
			    kPage, kSentinel, "bytes after the write"));

	// READ the window's first page back into a's page.
	std::memset(arena_.data() + kPage, 0x3c, 64);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_READ, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 64, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(local_.data(), 64, 0x3c, "read bytes"));

	// FETCH_AND_ADD on a word of the window.
	uint64_t word = 40;
	std::memcpy(arena_.data() + kPage + 8, &word, 8);
	ASSERT_TRUE(rdma(IBV_WR_ATOMIC_FETCH_AND_ADD, mw->rkey, win() + 8,
			 lmr_.get(), local_.addr(), 8, IBV_WC_SUCCESS, 2));
	uint64_t orig = 0;
	std::memcpy(&orig, local_.data(), 8);
	std::memcpy(&word, arena_.data() + kPage + 8, 8);
	EXPECT_EQ(orig, 40u);
	EXPECT_EQ(word, 42u);
}

// A window bound for zero bytes: valid, but no byte may be touched.
TEST_P(MwAccess, ZeroLengthBind)
{
	Mw mw = alloc(GetParam());
	ASSERT_TRUE(mw) << std::strerror(errno);
	if (GetParam() == Type::One) {
		// For type 1 a zero-length bind is an unbind (ibv_bind_mw(3)).
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
				 kRemoteAll));
		ASSERT_TRUE(bind(mw.get(), nullptr, 0, 0, 0));
	} else {
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), 0, kRemoteAll));
	}
	// Zero-length RDMA carries no valid rkey and always succeeds.
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 0, IBV_WC_SUCCESS));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 1, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

// Programs written for hardware pass IBV_ACCESS_LOCAL_WRITE among a
// window's rights; the bind succeeds and the window grants what it names.
TEST_P(MwAccess, LocalWriteAmongRightsIsIgnored)
{
	Mw mw = alloc(GetParam());
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
	std::memset(arena_.data() + kPage, 0x5d, 32);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_READ, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 32, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(local_.data(), 32, 0x5d, "read bytes"));
	// Local write is no remote right: a WRITE through it is refused.
	std::memset(arena_.data() + kPage, kSentinel, 32);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 16, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

INSTANTIATE_TEST_SUITE_P(Types, MwAccess,
			 ::testing::Values(Type::One, Type::Two),
			 [](const ::testing::TestParamInfo<Type> &i) {
				 return std::string(type_name(i.param));
			 });

// ---------------------------------------------------------------------
// Accesses a window refuses: REM_ACCESS_ERR, b's memory untouched.

enum class Refusal {
	OutsideWindow,	 // inside the MR, past the window's end
	BeforeWindow,	 // inside the MR, before the window
	MissingRight,	 // WRITE through a read-only window
	AtomicNotGranted, // FETCH_AND_ADD through a read/write window
	NeverBound,	 // the rkey alloc_mw returned
	StaleKey,	 // the rkey of the previous binding
	Unbound,	 // type 1 after a zero-length bind
	LocalInvalidated, // type 2 after LOCAL_INV through b
	RemoteInvalidated, // type 2 after a's SEND_WITH_INV
	Deallocated,	 // the window is gone
	OtherQp,	 // type 2 bound through another QP of the PD
};

struct RefusalCase {
	const char *name;
	Type type;
	Refusal what;
	ibv_wr_opcode op = IBV_WR_RDMA_WRITE;
};

class MwRefused : public Mws,
		  public ::testing::WithParamInterface<RefusalCase> {};

TEST_P(MwRefused, RemoteAccessError)
{
	const RefusalCase &c = GetParam();
	Mw mw = alloc(c.type);
	ASSERT_TRUE(mw) << std::strerror(errno);
	const unsigned rights =
		c.what == Refusal::MissingRight ? unsigned(IBV_ACCESS_REMOTE_READ) :
		c.what == Refusal::AtomicNotGranted ?
			unsigned(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) :
			unsigned(kRemoteAll);
	uint64_t at = win();
	uint32_t rkey = mw->rkey;
	End c2, d2;

	switch (c.what) {
	case Refusal::NeverBound:
		break;
	case Refusal::OtherQp: {
		// Bound through c2 (same PD, connected to d2): b may not use it.
		ASSERT_TRUE(pair(c2, d2));
		ASSERT_EQ(post_bind(c2.qp.get(), mw.get(), mr_.get(), win(),
				    kWinLen, rights),
			  0);
		ASSERT_TRUE(completes(c2.scq.get(), 7, IBV_WC_SUCCESS,
				      IBV_WC_BIND_MW));
		rkey = mw->rkey;
		break;
	}
	default:
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, rights));
		rkey = mw->rkey;
		break;
	}
	switch (c.what) {
	case Refusal::OutsideWindow:
		at = win() + kWinLen - 8;	// 8 bytes in, 8 past the end
		break;
	case Refusal::BeforeWindow:
		at = win() - 8;
		break;
	case Refusal::StaleKey:
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
				 rights));
		ASSERT_NE(mw->rkey, rkey);
		break;
	case Refusal::Unbound:
		ASSERT_TRUE(bind(mw.get(), nullptr, 0, 0, 0));
		rkey = mw->rkey;
		break;
	case Refusal::LocalInvalidated:
		ASSERT_TRUE(local_inv(b_.qp.get(), b_.scq.get(), rkey,
				      IBV_WC_SUCCESS));
		break;
	case Refusal::RemoteInvalidated: {
		ASSERT_EQ(send_inv(rkey, lmr_.get(), local_.addr(), 16,
				   mr_.get(), arena_.addr(3 * kPage)),
			  0);
		ASSERT_TRUE(completes(a_.scq.get(), 21, IBV_WC_SUCCESS,
				      IBV_WC_SEND));
		const std::optional<ibv_wc> wc = next_wc(b_.rcq.get());
		ASSERT_TRUE(wc);
		EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
		EXPECT_EQ(wc->opcode, IBV_WC_RECV) << wc_str(*wc);
		EXPECT_EQ(wc->byte_len, 16u);
		EXPECT_EQ(wc->wc_flags & ~unsigned(IBV_WC_GRH),
			  unsigned(IBV_WC_WITH_INV))
			<< wc_str(*wc);
		EXPECT_EQ(wc->invalidated_rkey, rkey) << wc_str(*wc);
		// the SEND's payload is where the receive said
		std::memset(arena_.data() + 3 * kPage, kSentinel, 16);
		break;
	}
	case Refusal::Deallocated:
		mw.reset();
		break;
	default:
		break;
	}

	const uint32_t len = c.op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 16;
	ASSERT_TRUE(rdma(c.op, rkey, at, lmr_.get(), local_.addr(), len,
			 IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

INSTANTIATE_TEST_SUITE_P(
	Windows, MwRefused,
	::testing::Values(
		RefusalCase{"Type1OutsideWindow", Type::One,
			    Refusal::OutsideWindow},
		RefusalCase{"Type2OutsideWindow", Type::Two,
			    Refusal::OutsideWindow},
		RefusalCase{"Type1ReadBeforeWindow", Type::One,
			    Refusal::BeforeWindow, IBV_WR_RDMA_READ},
		RefusalCase{"Type2ReadBeforeWindow", Type::Two,
			    Refusal::BeforeWindow, IBV_WR_RDMA_READ},
		RefusalCase{"Type1WriteToReadOnly", Type::One,
			    Refusal::MissingRight},
		RefusalCase{"Type2WriteToReadOnly", Type::Two,
			    Refusal::MissingRight},
		RefusalCase{"Type1AtomicNotGranted", Type::One,
			    Refusal::AtomicNotGranted,
			    IBV_WR_ATOMIC_FETCH_AND_ADD},
		RefusalCase{"Type2AtomicNotGranted", Type::Two,
			    Refusal::AtomicNotGranted,
			    IBV_WR_ATOMIC_FETCH_AND_ADD},
		RefusalCase{"Type1NeverBound", Type::One, Refusal::NeverBound},
		RefusalCase{"Type2NeverBound", Type::Two, Refusal::NeverBound},
		RefusalCase{"Type1StaleKey", Type::One, Refusal::StaleKey},
		RefusalCase{"Type1Unbound", Type::One, Refusal::Unbound},
		RefusalCase{"Type1UnboundRead", Type::One, Refusal::Unbound,
			    IBV_WR_RDMA_READ},
		RefusalCase{"Type2LocalInvalidated", Type::Two,
			    Refusal::LocalInvalidated},
		RefusalCase{"Type2LocalInvalidatedRead", Type::Two,
			    Refusal::LocalInvalidated, IBV_WR_RDMA_READ},
		RefusalCase{"Type2RemoteInvalidated", Type::Two,
			    Refusal::RemoteInvalidated},
		RefusalCase{"Type1Deallocated", Type::One,
			    Refusal::Deallocated},
		RefusalCase{"Type2Deallocated", Type::Two,
			    Refusal::Deallocated},
		RefusalCase{"Type2BoundThroughOtherQp", Type::Two,
			    Refusal::OtherQp}),
	[](const ::testing::TestParamInfo<RefusalCase> &i) {
		return std::string(i.param.name);
	});

// ---------------------------------------------------------------------
// Binds the device refuses: IBV_WC_MW_BIND_ERR, the window stays unusable.

enum class BadBind {
	MrWithoutBindRight,
	BeyondMr,
	BeforeMr,
	WriteOnReadOnlyMr,	// remote write needs an MR with local write
	AtomicOnReadOnlyMr,
	ZeroBased,		// type 1 only: o10-36.2.2
	Type2AlreadyBound,
	Type2OtherPdMr,
	Type2OtherPdQp,		// the QP's PD is not the window's
	Type2KeyIndexChanged,
};

struct BadBindCase {
	const char *name;
	Type type;
	BadBind what;
};

class MwBadBind : public Mws,
		  public ::testing::WithParamInterface<BadBindCase> {};

TEST_P(MwBadBind, CompletesWithBindError)
{
	const BadBindCase &c = GetParam();
	Mw mw = alloc(c.type);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ibv_mr *mr = mr_.get();
	uint64_t addr = win(), len = kWinLen;
	unsigned rights = kRemoteAll;
	Mr plain, ro;
	Pd other;
	End c2, d2;

	// The bad bind goes through a pair of its own, which it puts in the
	// error state; a and b stay connected to show the window's state.
	if (c.what != BadBind::Type2OtherPdQp) {
		ASSERT_TRUE(pair(c2, d2));
	}
	switch (c.what) {
	case BadBind::MrWithoutBindRight:
		plain.reset(ibv_reg_mr(pd_.get(), arena_.data(), arena_.size(),
				       IBV_ACCESS_LOCAL_WRITE | kRemoteAll));
		ASSERT_TRUE(plain) << std::strerror(errno);
		mr = plain.get();
		break;
	case BadBind::BeyondMr:
		addr = arena_.addr(3 * kPage);
		break;
	case BadBind::BeforeMr:
		addr = arena_.addr() - kPage;
		len = 2 * kPage;
		break;
	case BadBind::WriteOnReadOnlyMr:
	case BadBind::AtomicOnReadOnlyMr:
		ro.reset(ibv_reg_mr(pd_.get(), arena_.data(), arena_.size(),
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND));
		ASSERT_TRUE(ro) << std::strerror(errno);
		mr = ro.get();
		rights = c.what == BadBind::WriteOnReadOnlyMr ?
				 IBV_ACCESS_REMOTE_WRITE :
				 IBV_ACCESS_REMOTE_ATOMIC;
		break;
	case BadBind::ZeroBased:
		rights |= IBV_ACCESS_ZERO_BASED;
		break;
	case BadBind::Type2AlreadyBound:
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
				 kRemoteAll));
		break;
	case BadBind::Type2OtherPdMr:
		other.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(other) << std::strerror(errno);
		plain.reset(ibv_reg_mr(other.get(), arena_.data(),
				       arena_.size(),
				       IBV_ACCESS_LOCAL_WRITE | kRemoteAll |
					       IBV_ACCESS_MW_BIND));
		ASSERT_TRUE(plain) << std::strerror(errno);
		mr = plain.get();
		break;
	case BadBind::Type2OtherPdQp: {
		// c2's QP lives in another PD than the window and the MR.
		other.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(other) << std::strerror(errno);
		ASSERT_TRUE(make_end(c2, other.get(), caps()));
		ASSERT_TRUE(connect(c2.qp.get(), a_->qp_num, gid_, gid_index_));
		break;
	}
	default:
		break;
	}

	ibv_qp *qp = c2.qp.get();
	if (c.what == BadBind::Type2KeyIndexChanged) {
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = 7;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw.get();
		wr.bind_mw.rkey = mw->rkey ^ 0x100;
		wr.bind_mw.bind_info = {mr, addr, len, rights};
		ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
	} else {
		ASSERT_EQ(post_bind(qp, mw.get(), mr, addr, len, rights), 0);
	}
	EXPECT_TRUE(completes(c2.scq.get(), 7, IBV_WC_MW_BIND_ERR,
			      IBV_WC_BIND_MW));

	// Whatever key the failed bind would have given, the window refuses.
	if (c.what != BadBind::Type2AlreadyBound) {
		ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
				 local_.addr(), 16, IBV_WC_REM_ACCESS_ERR));
		EXPECT_TRUE(arena_untouched());
	}
	// The MR is free of the window: the failed bind took nothing.
	if (plain) {
		EXPECT_EQ(ibv_dereg_mr(plain.release()), 0);
	}
	if (ro) {
		EXPECT_EQ(ibv_dereg_mr(ro.release()), 0);
	}
}

INSTANTIATE_TEST_SUITE_P(
	Binds, MwBadBind,
	::testing::Values(
		BadBindCase{"Type1MrWithoutBindRight", Type::One,
			    BadBind::MrWithoutBindRight},
		BadBindCase{"Type2MrWithoutBindRight", Type::Two,
			    BadBind::MrWithoutBindRight},
		BadBindCase{"Type1BeyondMr", Type::One, BadBind::BeyondMr},
		BadBindCase{"Type2BeyondMr", Type::Two, BadBind::BeyondMr},
		BadBindCase{"Type2BeforeMr", Type::Two, BadBind::BeforeMr},
		BadBindCase{"Type1RemoteWriteOnReadOnlyMr", Type::One,
			    BadBind::WriteOnReadOnlyMr},
		BadBindCase{"Type2RemoteAtomicOnReadOnlyMr", Type::Two,
			    BadBind::AtomicOnReadOnlyMr},
		BadBindCase{"Type1ZeroBased", Type::One, BadBind::ZeroBased},
		BadBindCase{"Type2AlreadyBound", Type::Two,
			    BadBind::Type2AlreadyBound},
		BadBindCase{"Type2OtherPdMr", Type::Two,
			    BadBind::Type2OtherPdMr},
		BadBindCase{"Type2OtherPdQp", Type::Two,
			    BadBind::Type2OtherPdQp},
		BadBindCase{"Type2KeyIndexChanged", Type::Two,
			    BadBind::Type2KeyIndexChanged}),
	[](const ::testing::TestParamInfo<BadBindCase> &i) {
		return std::string(i.param.name);
	});

// ---------------------------------------------------------------------
// Posting rules, deallocation, invalidation of what cannot be invalidated.

TEST_F(Mws, PostingRefusesTheWrongBindPath)
{
	Mw one = alloc(Type::One), two = alloc(Type::Two);
	ASSERT_TRUE(one && two) << std::strerror(errno);
	// A type 1 window is bound by ibv_bind_mw() only...
	ibv_send_wr wr{}, *bad = nullptr;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = one.get();
	wr.bind_mw.rkey = ibv_inc_rkey(one->rkey);
	wr.bind_mw.bind_info = {mr_.get(), win(), kWinLen, kRemoteAll};
	EXPECT_EQ(ibv_post_send(b_.qp.get(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	// ...and a type 2 window never by it (libibverbs refuses that).
	ibv_mw_bind mb{};
	mb.bind_info = wr.bind_mw.bind_info;
	EXPECT_EQ(ibv_bind_mw(b_.qp.get(), two.get(), &mb), EINVAL);
	// An MR of another PD is refused before posting (ibv_bind_mw(3)).
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	Mr omr(ibv_reg_mr(other.get(), arena_.data(), arena_.size(),
			  IBV_ACCESS_MW_BIND));
	ASSERT_TRUE(omr) << std::strerror(errno);
	mb.bind_info.mr = omr.get();
	EXPECT_EQ(ibv_bind_mw(b_.qp.get(), one.get(), &mb), EPERM);
	// Nothing was posted.
	ibv_wc wc{};
	EXPECT_EQ(ibv_poll_cq(b_.scq.get(), 1, &wc), 0);
}

// The window outlives the MR's other users: the MR still works directly.
TEST_F(Mws, MrKeyStillWorksNextToWindows)
{
	Mw mw = alloc(Type::One);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kPage,
			 IBV_ACCESS_REMOTE_READ));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mr_->rkey, arena_.addr(), lmr_.get(),
			 local_.addr(), 32, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(arena_.data(), 32, 0xa1, "written through the MR"));
}

// LOCAL_INV of a type 1 window or of a registered MR: nothing to
// invalidate, a memory management error.
TEST_F(Mws, LocalInvOfType1WindowFails)
{
	Mw mw = alloc(Type::One);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	EXPECT_TRUE(local_inv(b_.qp.get(), b_.scq.get(), mw->rkey,
			      IBV_WC_MW_BIND_ERR));
}

TEST_F(Mws, LocalInvOfRegisteredMrFails)
{
	EXPECT_TRUE(local_inv(b_.qp.get(), b_.scq.get(), mr_->rkey,
			      IBV_WC_MW_BIND_ERR));
	// the MR stays valid
	End c2, d2;
	ASSERT_TRUE(pair(c2, d2));
	ibv_sge sge{local_.addr(), 8, lmr_->lkey};
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = arena_.addr();
	wr.wr.rdma.rkey = mr_->rkey;
	ASSERT_EQ(ibv_post_send(c2.qp.get(), &wr, &bad), 0);
	EXPECT_TRUE(completes(c2.scq.get(), 3, IBV_WC_SUCCESS,
			      IBV_WC_RDMA_WRITE));
}

// SEND_WITH_INV of an rkey b may not invalidate: invalid request.
class MwBadSendInv : public Mws,
		     public ::testing::WithParamInterface<const char *> {};

TEST_P(MwBadSendInv, IsAnInvalidRequest)
{
	const std::string what = GetParam();
	Mw mw = alloc(what == "Type1Window" ? Type::One : Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	uint32_t key = mr_->rkey;
	if (what == "Type1Window") {
		ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
				 kRemoteAll));
		key = mw->rkey;
	} else if (what == "UnboundType2Window") {
		key = mw->rkey;
	}
	ASSERT_EQ(send_inv(key, lmr_.get(), local_.addr(), 16, mr_.get(),
			   arena_.addr(3 * kPage)),
		  0);
	EXPECT_TRUE(completes(a_.scq.get(), 21, IBV_WC_REM_INV_REQ_ERR,
			      IBV_WC_SEND));
	const std::optional<ibv_wc> wc = next_wc(b_.rcq.get());
	ASSERT_TRUE(wc);
	EXPECT_EQ(wc->wr_id, 20u);
	EXPECT_NE(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
}

INSTANTIATE_TEST_SUITE_P(Keys, MwBadSendInv,
			 ::testing::Values("Type1Window", "UnboundType2Window",
					   "RegisteredMr"),
			 [](const ::testing::TestParamInfo<const char *> &i) {
				 return std::string(i.param);
			 });

// A fenced LOCAL_INV waits for the READ before it: the READ through the
// window completes, then the window is invalid.
TEST_F(Mws, FencedLocalInvAfterRead)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	// bound through b, invalidated by a: the PD is what matters locally
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen, kRemoteAll));
	std::memset(arena_.data() + kPage, 0x77, 512);
	ASSERT_EQ(post_rdma(IBV_WR_RDMA_READ, mw->rkey, win(), lmr_.get(),
			    local_.addr(), 512, 1),
		  0);
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = 9;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	wr.invalidate_rkey = mw->rkey;
	ASSERT_EQ(ibv_post_send(a_.qp.get(), &wr, &bad), 0);
	EXPECT_TRUE(completes(a_.scq.get(), 1, IBV_WC_SUCCESS,
			      IBV_WC_RDMA_READ));
	EXPECT_TRUE(completes(a_.scq.get(), 9, IBV_WC_SUCCESS,
			      IBV_WC_LOCAL_INV));
	EXPECT_TRUE(all_are(local_.data(), 512, 0x77, "read bytes"));
	std::memset(arena_.data() + kPage, kSentinel, 512);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

// ---------------------------------------------------------------------
// The same operations through the extended send API: ibv_wr_bind_mw(),
// ibv_wr_local_inv() and ibv_wr_send_inv() on QPs created with them.

class MwsEx : public Mws {
protected:
	void SetUp() override
	{
		ex_qps_ = true;
		Mws::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		ax_ = ibv_qp_to_qp_ex(a_.qp.get());
		bx_ = ibv_qp_to_qp_ex(b_.qp.get());
		ASSERT_NE(ax_, nullptr);
		ASSERT_NE(bx_, nullptr);
	}

	// Binds mw through b with ibv_wr_bind_mw() under the next key byte.
	::testing::AssertionResult wr_bind(ibv_mw *mw, uint64_t addr,
					   uint64_t len, unsigned access)
	{
		const ibv_mw_bind_info info{ mr_.get(), addr, len, access };
		const uint32_t key = ibv_inc_rkey(mw->rkey);

		ibv_wr_start(bx_);
		bx_->wr_id = 7;
		bx_->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(bx_, mw, key, &info);
		const int r = ibv_wr_complete(bx_);
		if (r)
			return ::testing::AssertionFailure()
			       << "ibv_wr_complete: " << std::strerror(r);
		mw->rkey = key;
		return completes(b_.scq.get(), 7, IBV_WC_SUCCESS,
				 IBV_WC_BIND_MW);
	}

	ibv_qp_ex *ax_ = nullptr;
	ibv_qp_ex *bx_ = nullptr;
};

TEST_F(MwsEx, BindThenLocalInvalidate)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(wr_bind(mw.get(), win(), kWinLen, kRemoteAll));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win() + 8, lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(arena_.data() + kPage + 8, 8, 0xa1,
			    "written bytes"));
	std::memset(arena_.data() + kPage + 8, kSentinel, 8);

	ibv_wr_start(bx_);
	bx_->wr_id = 9;
	bx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(bx_, mw->rkey);
	ASSERT_EQ(ibv_wr_complete(bx_), 0);
	ASSERT_TRUE(completes(b_.scq.get(), 9, IBV_WC_SUCCESS,
			      IBV_WC_LOCAL_INV));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

TEST_F(MwsEx, SendWithInvalidateRevokesTheWindow)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(wr_bind(mw.get(), win(), kWinLen, kRemoteAll));
	const uint32_t key = mw->rkey;
	ibv_sge rsge{ arena_.addr(3 * kPage), 16, mr_->lkey };
	ibv_recv_wr rwr{}, *rbad = nullptr;
	rwr.wr_id = 20;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ASSERT_EQ(ibv_post_recv(b_.qp.get(), &rwr, &rbad), 0);

	ibv_wr_start(ax_);
	ax_->wr_id = 21;
	ax_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(ax_, key);
	ibv_wr_set_sge(ax_, lmr_->lkey, local_.addr(), 16);
	ASSERT_EQ(ibv_wr_complete(ax_), 0);
	ASSERT_TRUE(completes(a_.scq.get(), 21, IBV_WC_SUCCESS, IBV_WC_SEND));
	const std::optional<ibv_wc> wc = next_wc(b_.rcq.get());
	ASSERT_TRUE(wc);
	EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
	EXPECT_EQ(wc->wr_id, 20u) << wc_str(*wc);
	EXPECT_EQ(wc->byte_len, 16u) << wc_str(*wc);
	EXPECT_EQ(wc->wc_flags & ~unsigned(IBV_WC_GRH),
		  unsigned(IBV_WC_WITH_INV))
		<< wc_str(*wc);
	EXPECT_EQ(wc->invalidated_rkey, key) << wc_str(*wc);
	EXPECT_TRUE(all_are(arena_.data() + 3 * kPage, 16, 0xa1,
			    "the SEND's payload"));
	std::memset(arena_.data() + 3 * kPage, kSentinel, 16);

	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, key, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

// ibv_wr_bind_mw() binds type 2 windows only (type 1: ibv_bind_mw()); a
// refused bind discards its batch and leaves the QP working.
TEST_F(MwsEx, BindOfType1WindowFailsTheBatch)
{
	Mw mw1 = alloc(Type::One), mw2 = alloc(Type::Two);
	ASSERT_TRUE(mw1 && mw2) << std::strerror(errno);
	const ibv_mw_bind_info info{ mr_.get(), win(), kWinLen, kRemoteAll };
	ibv_wr_start(bx_);
	bx_->wr_id = 7;
	bx_->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(bx_, mw2.get(), ibv_inc_rkey(mw2->rkey), &info);
	ibv_wr_bind_mw(bx_, mw1.get(), ibv_inc_rkey(mw1->rkey), &info);
	EXPECT_EQ(ibv_wr_complete(bx_), EINVAL);
	ibv_wc wc{};
	EXPECT_EQ(ibv_poll_cq(b_.scq.get(), 1, &wc), 0)
		<< "a discarded batch completed: " << wc_str(wc);
	ASSERT_TRUE(wr_bind(mw2.get(), win(), kWinLen, kRemoteAll));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw2->rkey, win(), lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS));
}

} // namespace
} // namespace sroce::test
