/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * RoCE v2 Invariant CRC (IBTA Vol. 1, 7.8.1 "Invariant CRC", as adapted to
 * RoCE v2 by Annex A17).
 *
 * The ICRC is the Ethernet CRC-32 (reflected polynomial 0xEDB88320, initial
 * value all ones, result inverted) computed over, in order:
 *
 *   1. 8 bytes of all ones, standing in for the InfiniBand LRH that RoCE v2
 *      does not carry;
 *   2. the IPv4 header (20 bytes, no options) with TOS (DSCP and ECN), TTL
 *      and header checksum set to all ones, or the IPv6 header (40 bytes)
 *      with traffic class, flow label and hop limit set to all ones;
 *   3. the UDP header with its checksum set to all ones;
 *   4. the BTH with byte 4 (FECN, BECN and the 6 reserved bits, "Resv8a" in
 *      the original IBTA layout) set to all ones;
 *   5. everything after the BTH up to the ICRC: extension headers, payload
 *      and pad bytes.
 *
 * Routers and switches may rewrite exactly the masked fields (DSCP/ECN
 * marking, TTL/hop limit, checksums, FECN/BECN), so the ICRC still holds end
 * to end.  The 32-bit result is sent least significant byte first, like the
 * Ethernet FCS: sroce_icrc_store()/sroce_icrc_load() do that conversion.
 *
 * The CRC-32 primitive is injected as a sroce_crc32_fn with the semantics of
 * the kernel's crc32_le(): no pre- or post-inversion, state in and state out.
 * (Its prototype matches crc32_le() of Linux 6.1 and 6.12 exactly, so the
 * kernel passes crc32_le itself.)  The state between the calls below is a
 * plain crc32_le() state: after sroce_icrc_begin() the data path may feed the
 * rest of the packet in any number of pieces - header bytes, then payload
 * fragments straight from the skb or while copying them - with the primitive
 * or with any crc32_le-compatible fused copy-and-CRC, and finish with
 * sroce_icrc_final().  Calls are per buffer, never per byte.
 */
#ifndef SROCE_CORE_ICRC_H
#define SROCE_CORE_ICRC_H

#include "core_env.h"

typedef u32 (*sroce_crc32_fn)(u32 crc, const u8 *p, size_t len);

/*
 * crc32_le(~0, 8 bytes of 0xff): the state after the LRH stand-in, so no
 * call has to process those 8 bytes.  The unit tests recompute it.
 */
#define SROCE_ICRC_SEED		0xdebb20e3u

#define SROCE_ICRC_IPV4_HDR_LEN	20
#define SROCE_ICRC_IPV6_HDR_LEN	40
#define SROCE_ICRC_UDP_HDR_LEN	8

enum sroce_icrc_status {
	SROCE_ICRC_OK,
	SROCE_ICRC_MISMATCH,
	SROCE_ICRC_UNSUPPORTED_IP,	/* not IPv4 without options or IPv6 */
	SROCE_ICRC_TOO_SHORT,		/* shorter than a BTH and an ICRC */
};

/*
 * Start an ICRC: fold in the LRH stand-in and the masked IP, UDP and BTH
 * headers (steps 1-4) with one call of crc32.  ip is an IPv4 header with
 * IHL 5 or an IPv6 header, told apart by the version nibble; udp and bth
 * need not follow it in memory.  Reads 20 or 40 bytes at ip, 8 at udp and 12
 * at bth.  Returns false, leaving *state alone, for any other IP header (an
 * IPv4 header with options is not supported).
 */
bool sroce_icrc_begin(sroce_crc32_fn crc32, const u8 *ip, const u8 *udp,
		      const u8 *bth, u32 *state);

static inline u32 sroce_icrc_update(sroce_crc32_fn crc32, u32 state,
				    const u8 *p, size_t len)
{
	return crc32(state, p, len);
}

static inline u32 sroce_icrc_final(u32 state)
{
	return ~state;
}

/* The ICRC field: the CRC value least significant byte first. */
static inline u32 sroce_icrc_load(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static inline void sroce_icrc_store(u8 *p, u32 icrc)
{
	p[0] = (u8)icrc;
	p[1] = (u8)(icrc >> 8);
	p[2] = (u8)(icrc >> 16);
	p[3] = (u8)(icrc >> 24);
}

/*
 * Whole-packet helpers for a contiguous UDP payload of len bytes at bth (BTH
 * through ICRC).  sroce_icrc_compute() returns the ICRC of the first
 * len - 4 bytes (the caller stores it at bth + len - 4);
 * sroce_icrc_verify() compares it with the one received there.
 */
enum sroce_icrc_status sroce_icrc_compute(sroce_crc32_fn crc32, const u8 *ip,
					  const u8 *udp, const u8 *bth,
					  u32 len, u32 *icrc);
enum sroce_icrc_status sroce_icrc_verify(sroce_crc32_fn crc32, const u8 *ip,
					 const u8 *udp, const u8 *bth, u32 len);

/*
 * Bytes of the packet whose CRC the transmit path took while copying them
 * in (sroce_crc32_copy()): len bytes at off from the BTH, crc their
 * crc32_le() state from 0.
 */
struct sroce_icrc_part {
	u32 off;
	u32 len;
	u32 crc;
};

/*
 * sroce_icrc_compute() that reads only the bytes outside part and joins
 * part's CRC with sroce_crc32_shift().  A part that is not within the
 * bytes after the BTH and before the ICRC is not used: the whole packet is
 * read then, so the result is right either way.
 */
enum sroce_icrc_status
sroce_icrc_compute_part(sroce_crc32_fn crc32, const u8 *ip, const u8 *udp,
			const u8 *bth, u32 len,
			const struct sroce_icrc_part *part, u32 *icrc);

#endif /* SROCE_CORE_ICRC_H */
