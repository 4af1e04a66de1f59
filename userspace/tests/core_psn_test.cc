// 24-bit PSN arithmetic (kernel/core/psn.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

extern "C" {
#include "kernel/core/psn.h"
}

namespace {

constexpr uint32_t kSpace = 1u << 24;
constexpr int64_t kHalf = 1 << 23;

// Bases where wrap-around bugs live: 0, the top, both sides of the half.
const uint32_t kBases[] = {0, 1, 2, kSpace - 1, kSpace - 2, kHalf - 1,
			   kHalf, kHalf + 1, 0x123456, 0xabcdef};

// The signed distance computed in 64-bit arithmetic, the obvious way.
int64_t ref_diff(uint32_t a, uint32_t b)
{
	int64_t d = (int64_t(a % kSpace) - int64_t(b % kSpace)) % kSpace;

	if (d < 0)
		d += kSpace;
	return d >= kHalf ? d - kSpace : d;
}

TEST(CorePsn, Constants)
{
	EXPECT_EQ(SROCE_PSN_MASK, kSpace - 1);
	EXPECT_EQ(SROCE_PSN_HALF, uint32_t(kHalf));
	EXPECT_EQ(SROCE_PSN_BITS, 24);
}

TEST(CorePsn, MaskAddSubWrap)
{
	EXPECT_EQ(sroce_psn_mask(0xff123456), 0x123456u);
	EXPECT_EQ(sroce_psn_add(0xffffff, 1), 0u);
	EXPECT_EQ(sroce_psn_add(0xfffffe, 5), 3u);
	EXPECT_EQ(sroce_psn_add(5, kSpace), 5u);
	EXPECT_EQ(sroce_psn_add(0x7fffff, 1), 0x800000u);
	EXPECT_EQ(sroce_psn_add(0xff000001, 0), 1u);	// input masked too
	EXPECT_EQ(sroce_psn_sub(0, 1), 0xffffffu);
	EXPECT_EQ(sroce_psn_sub(3, 5), 0xfffffeu);
	for (uint32_t b : kBases)
		for (uint32_t n : {0u, 1u, 100u, kSpace - 1, kSpace, 0xffffffffu}) {
			EXPECT_EQ(sroce_psn_add(b, n), (uint64_t(b) + n) % kSpace);
			EXPECT_EQ(sroce_psn_sub(sroce_psn_add(b, n), n), b);
		}
}

// Every distance from a few bases: all 2^24 of them.
TEST(CorePsn, DiffExhaustiveAroundBases)
{
	for (uint32_t b : {0u, kSpace - 1, uint32_t(kHalf)}) {
		for (uint32_t d = 0; d < kSpace; d++) {
			const uint32_t a = (b + d) & (kSpace - 1);
			const int got = sroce_psn_diff(a, b);

			if (got != ref_diff(a, b))
				FAIL() << "a " << a << " b " << b << " got " << got;
		}
	}
}

TEST(CorePsn, DiffRange)
{
	EXPECT_EQ(sroce_psn_diff(1, 0), 1);
	EXPECT_EQ(sroce_psn_diff(0, 1), -1);
	EXPECT_EQ(sroce_psn_diff(0, kSpace - 1), 1);	// wrapped forward
	EXPECT_EQ(sroce_psn_diff(kSpace - 1, 0), -1);
	EXPECT_EQ(sroce_psn_diff(kHalf - 1, 0), kHalf - 1);	// far ahead
	EXPECT_EQ(sroce_psn_diff(kHalf, 0), -kHalf);	// exactly half: behind
	EXPECT_EQ(sroce_psn_diff(0, kHalf), -kHalf);
	EXPECT_EQ(sroce_psn_diff(kHalf + 1, 0), -kHalf + 1);
	EXPECT_EQ(sroce_psn_diff(0xff000005, 0x00000003), 2); // high bits ignored
}

TEST(CorePsn, ComparisonsAroundTheWrap)
{
	for (uint32_t b : kBases) {
		SCOPED_TRACE(b);
		for (int64_t d = -kHalf - 3; d <= kHalf + 3; d++) {
			// skip the dense middle, keep the edges of the window
			if (d > -kHalf + 300 && d < -300)
				d = -300;
			if (d > 300 && d < kHalf - 300)
				d = kHalf - 300;
			const auto a = uint32_t((int64_t(b) + d + 2 * kSpace) % kSpace);
			const int64_t r = ref_diff(a, b);

			ASSERT_EQ(sroce_psn_before(a, b), r < 0) << d;
			ASSERT_EQ(sroce_psn_before_eq(a, b), r <= 0) << d;
			ASSERT_EQ(sroce_psn_after(a, b), r > 0) << d;
			ASSERT_EQ(sroce_psn_after_eq(a, b), r >= 0) << d;
			// antisymmetric everywhere except exactly half apart
			if (r != -kHalf) {
				ASSERT_EQ(sroce_psn_before(a, b),
					  sroce_psn_after(b, a)) << d;
			}
		}
	}
}

TEST(CorePsn, HalfDistanceIsBehindBothWays)
{
	for (uint32_t b : kBases) {
		const uint32_t a = sroce_psn_add(b, uint32_t(kHalf));

		EXPECT_TRUE(sroce_psn_before(a, b));
		EXPECT_TRUE(sroce_psn_before(b, a));
		EXPECT_FALSE(sroce_psn_after(a, b));
		EXPECT_FALSE(sroce_psn_after(b, a));
	}
}

TEST(CorePsn, RandomAgainstReference)
{
	std::mt19937 rng(24);

	for (int i = 0; i < 1000000; i++) {
		const uint32_t a = rng(), b = rng();

		ASSERT_EQ(sroce_psn_diff(a, b), ref_diff(a, b)) << a << " " << b;
	}
}

TEST(CorePsn, InRange)
{
	EXPECT_TRUE(sroce_psn_in_range(5, 5, 1));
	EXPECT_FALSE(sroce_psn_in_range(5, 5, 0));
	EXPECT_FALSE(sroce_psn_in_range(6, 5, 1));
	EXPECT_FALSE(sroce_psn_in_range(4, 5, 10));
	EXPECT_TRUE(sroce_psn_in_range(0, kSpace - 2, 3));	// wraps
	EXPECT_TRUE(sroce_psn_in_range(kSpace - 1, kSpace - 2, 3));
	EXPECT_FALSE(sroce_psn_in_range(1, kSpace - 2, 3));
	EXPECT_TRUE(sroce_psn_in_range(12345, 99, kSpace));	// whole space
	for (uint32_t b : kBases)
		for (uint32_t n : {1u, 2u, 1000u, uint32_t(kHalf)})
			for (int64_t d = -3; d < int64_t(n) + 3; d += (n > 10 ? n / 7 + 1 : 1)) {
				const auto p = uint32_t((int64_t(b) + d + kSpace) % kSpace);

				EXPECT_EQ(sroce_psn_in_range(p, b, n), d >= 0 && d < n)
					<< b << " " << n << " " << d;
			}
}

} // namespace
