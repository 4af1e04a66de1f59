/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Big-endian, unaligned-safe loads and stores of wire fields.
 *
 * IBTA headers are big-endian and follow IP/UDP headers of any length, so a
 * field is never known to be aligned.  These helpers assemble values byte by
 * byte, which is valid C for any alignment and any host byte order; GCC and
 * Clang recognise the pattern and emit a single (MOVBE/BSWAP) load or store
 * on x86-64, so there is no cost against get_unaligned_be32() and friends,
 * and the same code builds in the kernel (whose unaligned.h moved between
 * 6.1 and 6.12) and in userspace without an environment switch.
 *
 * 24-bit helpers exist because QPNs, PSNs and the MSN are 24-bit fields.
 */
#ifndef SROCE_CORE_WIRE_H
#define SROCE_CORE_WIRE_H

#include "core_env.h"

static inline u16 sroce_wire_get16(const u8 *p)
{
	return (u16)((u16)p[0] << 8 | p[1]);
}

static inline u32 sroce_wire_get24(const u8 *p)
{
	return (u32)p[0] << 16 | (u32)p[1] << 8 | p[2];
}

static inline u32 sroce_wire_get32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline u64 sroce_wire_get64(const u8 *p)
{
	return (u64)sroce_wire_get32(p) << 32 | sroce_wire_get32(p + 4);
}

static inline void sroce_wire_put16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

/* Stores the low 24 bits of v; the top byte is ignored. */
static inline void sroce_wire_put24(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 16);
	p[1] = (u8)(v >> 8);
	p[2] = (u8)v;
}

static inline void sroce_wire_put32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

static inline void sroce_wire_put64(u8 *p, u64 v)
{
	sroce_wire_put32(p, (u32)(v >> 32));
	sroce_wire_put32(p + 4, (u32)v);
}

#endif /* SROCE_CORE_WIRE_H */
