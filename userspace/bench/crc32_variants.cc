// CRC-32 primitives for core_bench (see crc32_variants.h).
//
// The math behind the tables.  The reflected CRC register r after a byte b
// is T0[(r ^ b) & 0xff] ^ (r >> 8), where T0[x] is x shifted out bit by bit
// through the polynomial (the bitwise loop applied to x).  The CRC is linear
// over GF(2), so the contribution of a byte does not depend on the others:
// a byte x followed by k zero bytes leaves Tk[x] in the register, with
// Tk[x] = T0[T(k-1)[x] & 0xff] ^ (T(k-1)[x] >> 8) (one more zero byte).
// For an 8-byte block d0..d7 and a register r, XOR r into d0..d3 (the
// register meets the first four bytes), then the register after the block
// is the XOR of T7[d0'], T6[d1'], ..., T0[d7]: byte j is followed by 7 - j
// more bytes of the block.
#include "crc32_variants.h"
#include "core_test_util.h"

#include <array>
#include <climits>

#ifdef SROCE_BENCH_HAVE_ZLIB
#include <zlib.h>
#endif

namespace sroce_bench {

namespace {

constexpr uint32_t kPoly = 0xedb88320u;

constexpr uint32_t shift_byte(uint32_t c)
{
	for (int k = 0; k < 8; k++)
		c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
	return c;
}

using Table = std::array<uint32_t, 256>;

constexpr std::array<Table, 8> make_tables()
{
	std::array<Table, 8> t{};

	for (uint32_t x = 0; x < 256; x++)
		t[0][x] = shift_byte(x);
	for (size_t k = 1; k < 8; k++)
		for (uint32_t x = 0; x < 256; x++)
			t[k][x] = t[0][t[k - 1][x] & 0xff] ^ (t[k - 1][x] >> 8);
	return t;
}

constexpr std::array<Table, 8> kTables = make_tables();

static_assert(kTables[0][1] == 0x77073096u, "T0[1] of CRC-32");
static_assert(kTables[0][128] == kPoly, "T0[0x80] is the polynomial");

// Little-endian load, byte by byte: any alignment, any host; one mov on x86.
inline uint32_t load_le32(const uint8_t *p)
{
	return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
	       uint32_t{p[3]} << 24;
}

#ifdef SROCE_BENCH_HAVE_ZLIB
uint32_t crc32_zlib_le(uint32_t crc, const uint8_t *p, size_t len)
{
	// zlib: crc32(c, p, n) == ~crc32_le(~c, p, n).  It also takes uInt
	// lengths, so feed very long buffers in pieces.
	uLong z = static_cast<uint32_t>(~crc);

	while (len > UINT_MAX) {
		z = ::crc32(z, p, UINT_MAX);
		p += UINT_MAX;
		len -= UINT_MAX;
	}
	z = ::crc32(z, p, static_cast<uInt>(len));
	return ~static_cast<uint32_t>(z);
}
#endif

} // namespace

// the unit tests' reference, the definition every variant is checked against
uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	return sroce_test::crc32_bitwise(crc, p, len);
}

uint32_t crc32_sarwate(uint32_t crc, const uint8_t *p, size_t len)
{
	const Table &t0 = kTables[0];

	for (size_t i = 0; i < len; i++)
		crc = t0[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

uint32_t crc32_slice8(uint32_t crc, const uint8_t *p, size_t len)
{
	const auto &t = kTables;

	for (; len >= 8; p += 8, len -= 8) {
		const uint32_t lo = crc ^ load_le32(p);
		const uint32_t hi = load_le32(p + 4);

		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
		      t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
		      t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
	for (; len; p++, len--)
		crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
	return crc;
}

#ifdef SROCE_BENCH_HAVE_ZLIB
const Crc32Fn crc32_zlib = crc32_zlib_le;
#else
const Crc32Fn crc32_zlib = nullptr;
#endif

std::span<const Crc32Variant> crc32_variants()
{
	static const Crc32Variant v[] = {
		{"bitwise", crc32_bitwise},
		{"sarwate", crc32_sarwate},
		{"slice8", crc32_slice8},
#ifdef SROCE_BENCH_HAVE_ZLIB
		{"zlib", crc32_zlib_le},
#endif
	};
	return v;
}

} // namespace sroce_bench
