// CRC-32 while copying, and its shift (kernel/core/crc32.c), against the
// tests' own table-driven and bitwise CRC-32 (core_test_util.cc), which are
// checked against the standard check value in core_icrc_test.cc.
#include <gtest/gtest.h>

#include <random>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/crc32.h"
}

namespace {

using sroce_test::Bytes;

Bytes random_bytes(std::mt19937 &rng, size_t n)
{
	Bytes b(n);

	for (auto &x : b)
		x = static_cast<uint8_t>(rng());
	return b;
}

// Every length up to a few blocks past the 8-byte loop and some large ones,
// at every alignment of source and destination: the bytes arrive unchanged,
// the bytes around them are untouched, the state is crc32_le()'s.
TEST(CoreCrc32, CopyIsMemcpyAndCrc32)
{
	std::mt19937 rng(11);
	std::vector<size_t> lens;

	for (size_t n = 0; n <= 70; n++)
		lens.push_back(n);
	for (size_t n : {255, 256, 1023, 1024, 4093, 4096, 65536})
		lens.push_back(n);
	for (size_t len : lens) {
		for (size_t so = 0; so < 8; so += (len > 70 ? 3 : 1)) {
			const size_t dofs = (so * 5) % 8;
			const Bytes src = random_bytes(rng, len + so);
			Bytes dst(len + dofs + 8, 0xa5);
			const uint32_t seed = static_cast<uint32_t>(rng());

			const uint32_t got = sroce_crc32_copy(seed, dst.data() + dofs,
							      src.data() + so, len);
			ASSERT_EQ(got, sroce_test::crc32_table(seed, src.data() + so, len))
				<< len << " " << so;
			ASSERT_TRUE(std::equal(src.begin() + so, src.end(),
					       dst.begin() + dofs)) << len << " " << so;
			for (size_t i = 0; i < dofs; i++)
				ASSERT_EQ(dst[i], 0xa5);
			for (size_t i = dofs + len; i < dst.size(); i++)
				ASSERT_EQ(dst[i], 0xa5);
		}
	}
}

// A copy in pieces continues the state like crc32_le() does.
TEST(CoreCrc32, CopyInPiecesContinues)
{
	std::mt19937 rng(12);
	const Bytes src = random_bytes(rng, 9000);

	for (int round = 0; round < 50; round++) {
		Bytes dst(src.size());
		uint32_t crc = 0;
		size_t done = 0;

		while (done < src.size()) {
			const size_t n = std::min<size_t>(src.size() - done, rng() % 1500);

			crc = sroce_crc32_copy(crc, dst.data() + done, src.data() + done, n);
			done += n;
		}
		ASSERT_EQ(dst, src);
		ASSERT_EQ(crc, sroce_test::crc32_table(0, src.data(), src.size()));
	}
}

// shift(c, n) is c followed by n zero bytes.
TEST(CoreCrc32, ShiftIsZeroBytes)
{
	std::mt19937 rng(13);
	const Bytes zeros(70000, 0);

	for (size_t n = 0; n <= 300; n++) {
		const uint32_t c = static_cast<uint32_t>(rng());

		ASSERT_EQ(sroce_crc32_shift(c, n),
			  sroce_test::crc32_bitwise(c, zeros.data(), n)) << n;
	}
	for (size_t n : {1020, 1024, 4095, 4096, 65535, 65536, 69999}) {
		const uint32_t c = static_cast<uint32_t>(rng());

		ASSERT_EQ(sroce_crc32_shift(c, n),
			  sroce_test::crc32_table(c, zeros.data(), n)) << n;
	}
	EXPECT_EQ(sroce_crc32_shift(0, 12345), 0u);
}

// Lengths no test can feed as zeros: shifts compose, up to 2^64 - 1 bytes.
TEST(CoreCrc32, ShiftsCompose)
{
	std::mt19937_64 rng(14);

	for (int round = 0; round < 200; round++) {
		const uint32_t c = static_cast<uint32_t>(rng());
		const uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);

		if (a + b < a)
			continue;
		ASSERT_EQ(sroce_crc32_shift(sroce_crc32_shift(c, a), b),
			  sroce_crc32_shift(c, a + b)) << a << " " << b;
	}
	const uint64_t max = ~uint64_t{0};
	EXPECT_EQ(sroce_crc32_shift(sroce_crc32_shift(7, max - 5), 5),
		  sroce_crc32_shift(7, max));
}

// What the transmit path relies on: crc(s, A B) = shift(crc(s, A), |B|) ^
// crc(0, B), with B's CRC taken while copying it.
TEST(CoreCrc32, JoinsAfterTheFact)
{
	std::mt19937 rng(15);

	for (int round = 0; round < 100; round++) {
		const Bytes a = random_bytes(rng, rng() % 200);
		const Bytes b = random_bytes(rng, rng() % 5000);
		const uint32_t s = static_cast<uint32_t>(rng());
		Bytes whole = a, copy(b.size());

		whole.insert(whole.end(), b.begin(), b.end());
		const uint32_t cb = sroce_crc32_copy(0, copy.data(), b.data(), b.size());
		const uint32_t ca = sroce_test::crc32_table(s, a.data(), a.size());
		ASSERT_EQ(sroce_crc32_shift(ca, b.size()) ^ cb,
			  sroce_test::crc32_table(s, whole.data(), whole.size()));
	}
}

} // namespace
