/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * CRC-32 (the ICRC's, reflected polynomial 0xEDB88320) while copying, and
 * the shift that lets a CRC taken that way join the CRC of what precedes it.
 *
 * Why sroce has its own: a packet's payload is copied from an MR into the
 * skb, then the ICRC reads it again.  On the emulated CPUs sroce is
 * measured on, the kernel's memcpy() (rep movsb) costs more than the CRC
 * itself, and one loop that loads 8 bytes, stores them and folds them into
 * the CRC costs about what the CRC alone does (Documentation/benchmarks.md,
 * "One pass over the bytes").  The kernel has no copy-and-CRC-32; its
 * crc32_le() in Linux 6.1 and 6.12 is the same slice-by-8 algorithm as here.
 *
 * The payload is copied before the IP and UDP headers exist (they are
 * built once the route is known), so its CRC starts from 0 and is joined
 * later: for the crc32_le() state (no inversions), which is linear,
 * crc(s, A B) = shift(crc(s, A), |B|) ^ crc(0, B), where shift(c, n) is c
 * followed by n zero bytes, i.e. c multiplied by x^(8n) modulo the
 * polynomial.
 *
 * sroce_crc32_init() fills the tables once (module init; the unit tests'
 * fixtures); nothing else may run before it.
 */
#ifndef SROCE_CORE_CRC32_H
#define SROCE_CORE_CRC32_H

#include "core_env.h"

void sroce_crc32_init(void);

/*
 * Copy len bytes from src to dst (not overlapping) and return the
 * crc32_le() state crc advanced over them.
 */
u32 sroce_crc32_copy(u32 crc, void *dst, const void *src, size_t len);

/* A copy that takes the CRC on the way only when asked: crc may be NULL. */
static inline void sroce_crc32_move(u32 *crc, void *dst, const void *src,
				    size_t len)
{
	if (crc)
		*crc = sroce_crc32_copy(*crc, dst, src, len);
	else
		memcpy(dst, src, len);
}

/*
 * The state crc advanced over len zero bytes: one multiplication modulo
 * the polynomial per bit set in len / 4, a bit step per bit of len % 4.
 */
u32 sroce_crc32_shift(u32 crc, u64 len);

#endif /* SROCE_CORE_CRC32_H */
