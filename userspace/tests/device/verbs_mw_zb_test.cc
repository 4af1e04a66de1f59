// Zero-based memory windows on a live RDMA device, run inside a test-bed
// guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='MwsZeroBased.*'
// A type 2 window bound with IBV_ACCESS_ZERO_BASED is addressed by offsets
// from its first byte, not by the MR's addresses (IBTA 10.6.7.2); type 1
// windows cannot be zero-based (o10-36.2.2), which verbs_mw_test.cc's
// MwBadBind checks.  The fixtures are verbs_mw_fixture.h's.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "test_env.h"
#include "verbs_mw_fixture.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using MwsZeroBased = Mws;

TEST_F(MwsZeroBased, OffsetsAddressTheWindow)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
			 kRemoteAll | IBV_ACCESS_ZERO_BASED));
	uint8_t *const w = arena_.data() + kPage;	// the window's byte 0

	// WRITE 100 bytes at offset 300: they land at win() + 300.
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, 300, lmr_.get(),
			 local_.addr(), 100, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(w + 300, 100, 0xa1, "written bytes"));
	EXPECT_TRUE(all_are(arena_.data(), kPage + 300, kSentinel,
			    "bytes before the write"));
	EXPECT_TRUE(all_are(w + 400, 3 * kPage - 400, kSentinel,
			    "bytes after the write"));

	// READ the window's last 64 bytes, at offset kWinLen - 64.
	std::memset(w + kWinLen - 64, 0x3c, 64);
	ASSERT_TRUE(rdma(IBV_WR_RDMA_READ, mw->rkey, kWinLen - 64, lmr_.get(),
			 local_.addr(), 64, IBV_WC_SUCCESS));
	EXPECT_TRUE(all_are(local_.data(), 64, 0x3c, "read bytes"));

	// FETCH_AND_ADD on the word at offset 8.
	uint64_t word = 40;
	std::memcpy(w + 8, &word, 8);
	ASSERT_TRUE(rdma(IBV_WR_ATOMIC_FETCH_AND_ADD, mw->rkey, 8, lmr_.get(),
			 local_.addr(), 8, IBV_WC_SUCCESS, 2));
	uint64_t orig = 0;
	std::memcpy(&orig, local_.data(), 8);
	std::memcpy(&word, w + 8, 8);
	EXPECT_EQ(orig, 40u);
	EXPECT_EQ(word, 42u);
}

// Offsets past the window's end are refused, although the MR goes on.
TEST_F(MwsZeroBased, OffsetPastTheEndIsRefused)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
			 kRemoteAll | IBV_ACCESS_ZERO_BASED));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, kWinLen - 8, lmr_.get(),
			 local_.addr(), 16, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

// The MR's own address of the window is no offset inside it.
TEST_F(MwsZeroBased, TheMrAddressIsRefused)
{
	Mw mw = alloc(Type::Two);
	ASSERT_TRUE(mw) << std::strerror(errno);
	ASSERT_TRUE(bind(mw.get(), mr_.get(), win(), kWinLen,
			 kRemoteAll | IBV_ACCESS_ZERO_BASED));
	ASSERT_TRUE(rdma(IBV_WR_RDMA_WRITE, mw->rkey, win(), lmr_.get(),
			 local_.addr(), 16, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(arena_untouched());
}

} // namespace
} // namespace sroce::test
