/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * 24-bit Packet Sequence Number arithmetic.
 *
 * PSNs wrap modulo 2^24, so "before" only means something within a window:
 * as in the IBTA responder's duplicate detection, a PSN is behind another if
 * it lies in the 2^23 PSNs preceding it, and ahead of it if it lies in the
 * 2^23 - 1 PSNs following it.  sroce_psn_diff() maps the modular distance
 * onto that window, [-2^23, 2^23 - 1]; every comparison derives from it, so
 * they all agree, including at the ambiguous distance of exactly 2^23, which
 * counts as "behind" in both directions (the responder treats such a PSN as
 * a duplicate rather than as a far-future packet).
 */
#ifndef SROCE_CORE_PSN_H
#define SROCE_CORE_PSN_H

#include "core_env.h"

#define SROCE_PSN_BITS		24
#define SROCE_PSN_MASK		0x00ffffffu
#define SROCE_PSN_HALF		0x00800000u	/* 2^23 */

static inline u32 sroce_psn_mask(u32 psn)
{
	return psn & SROCE_PSN_MASK;
}

static inline u32 sroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SROCE_PSN_MASK;
}

static inline u32 sroce_psn_sub(u32 psn, u32 n)
{
	return (psn - n) & SROCE_PSN_MASK;
}

/*
 * a - b as a signed distance in [-2^23, 2^23 - 1]; the upper 8 bits of a and
 * b are ignored.  Written without signed shifts or signed overflow so its
 * result is defined C on every compiler.
 */
static inline int sroce_psn_diff(u32 a, u32 b)
{
	u32 d = (a - b) & SROCE_PSN_MASK;

	return d >= SROCE_PSN_HALF ? (int)d - (1 << SROCE_PSN_BITS) : (int)d;
}

/* a is behind b. */
static inline bool sroce_psn_before(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) < 0;
}

static inline bool sroce_psn_before_eq(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) <= 0;
}

static inline bool sroce_psn_after(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) > 0;
}

static inline bool sroce_psn_after_eq(u32 a, u32 b)
{
	return sroce_psn_diff(a, b) >= 0;
}

/* psn lies in [first, first + n) modulo 2^24 (n <= 2^24). */
static inline bool sroce_psn_in_range(u32 psn, u32 first, u32 n)
{
	return ((psn - first) & SROCE_PSN_MASK) < n;
}

#endif /* SROCE_CORE_PSN_H */
