// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CRC-32 while copying, and its shift (see crc32.h).
 *
 * The register is reflected: bit 31 holds the coefficient of x^0, bit 0
 * that of x^31, and a byte enters at the low end.  Slice-by-8: the register
 * after a byte b is T0[(r ^ b) & 0xff] ^ (r >> 8); a byte followed by k more
 * bytes of the same 8-byte block contributes Tk[byte], with
 * Tk[x] = T0[T(k-1)[x] & 0xff] ^ (T(k-1)[x] >> 8), so a whole block is eight
 * lookups once the register is folded into its first four bytes.
 */
#include "crc32.h"

#define SROCE_CRC32_POLY	0xedb88320u

static u32 sroce_crc32_tab[8][256];
/* x^(32 * 2^k) modulo the polynomial: a shift by 4 * 2^k bytes */
static u32 sroce_crc32_pow[64];

/* The register after one bit of zero: a multiplication by x. */
static u32 sroce_crc32_step(u32 r)
{
	return (r >> 1) ^ (SROCE_CRC32_POLY & -(r & 1));
}

/* a * b modulo the polynomial, both reflected. */
static u32 sroce_crc32_mul(u32 a, u32 b)
{
	u32 r = 0;
	int i;

	for (i = 31; i >= 0; i--) {
		r ^= b & -((a >> i) & 1);
		b = sroce_crc32_step(b);
	}
	return r;
}

void sroce_crc32_init(void)
{
	u32 x, c;
	int k;

	for (x = 0; x < 256; x++) {
		c = x;
		for (k = 0; k < 8; k++)
			c = sroce_crc32_step(c);
		sroce_crc32_tab[0][x] = c;
	}
	for (k = 1; k < 8; k++)
		for (x = 0; x < 256; x++) {
			c = sroce_crc32_tab[k - 1][x];
			sroce_crc32_tab[k][x] = sroce_crc32_tab[0][c & 0xff] ^
						(c >> 8);
		}
	/* the polynomial's low terms are x^32 modulo itself */
	sroce_crc32_pow[0] = SROCE_CRC32_POLY;
	for (k = 1; k < 64; k++)
		sroce_crc32_pow[k] = sroce_crc32_mul(sroce_crc32_pow[k - 1],
						     sroce_crc32_pow[k - 1]);
}

/* Eight bytes, v's first byte lowest, into the register r. */
static u32 sroce_crc32_block(u32 r, u64 v)
{
	const u32 (*t)[256] = sroce_crc32_tab;
	u32 lo = (u32)v ^ r, hi = (u32)(v >> 32);

	return t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
	       t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
	       t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
	       t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
}

u32 sroce_crc32_copy(u32 crc, void *dst, const void *src, size_t len)
{
	const u8 *s = src;
	u8 *d = dst;
	u64 v;

	/* one load and one store per block: memcpy() of 8 is a move */
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		memcpy(&v, s, 8);
		memcpy(d, &v, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		v = __builtin_bswap64(v);
#endif
		crc = sroce_crc32_block(crc, v);
	}
	for (; len; len--, s++, d++) {
		*d = *s;
		crc = sroce_crc32_tab[0][(crc ^ *s) & 0xff] ^ (crc >> 8);
	}
	return crc;
}

u32 sroce_crc32_shift(u32 crc, u64 len)
{
	int k;

	for (k = 0; k < 8 * (int)(len & 3); k++)
		crc = sroce_crc32_step(crc);
	for (len >>= 2, k = 0; len; len >>= 1, k++)
		if (len & 1)
			crc = sroce_crc32_mul(crc, sroce_crc32_pow[k]);
	return crc;
}
