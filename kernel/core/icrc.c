// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * RoCE v2 ICRC (see icrc.h for the definition and the masked fields).
 */
#include "icrc.h"
#include "crc32.h"
#include "hdr.h"

/* IPv4: TOS (DSCP + ECN), TTL and header checksum may change hop by hop. */
#define IPV4_TOS	1
#define IPV4_TTL	8
#define IPV4_CSUM	10
/*
 * IPv6: bytes 0-3 are version (4 bits), traffic class (8) and flow label
 * (20); all but the version are variant.  Byte 7 is the hop limit.
 */
#define IPV6_HOP_LIMIT	7
#define UDP_CSUM	6

bool sroce_icrc_begin(sroce_crc32_fn crc32, const u8 *ip, const u8 *udp,
		      const u8 *bth, u32 *state)
{
	u8 buf[SROCE_ICRC_IPV6_HDR_LEN + SROCE_ICRC_UDP_HDR_LEN +
	       SROCE_BTH_LEN];
	size_t ip_len;
	u8 *p;

	switch (ip[0] >> 4) {
	case 4:
		/* IHL in 32-bit words; options are not supported. */
		if ((ip[0] & 0x0f) != SROCE_ICRC_IPV4_HDR_LEN / 4)
			return false;
		ip_len = SROCE_ICRC_IPV4_HDR_LEN;
		memcpy(buf, ip, ip_len);
		buf[IPV4_TOS] = 0xff;
		buf[IPV4_TTL] = 0xff;
		buf[IPV4_CSUM] = 0xff;
		buf[IPV4_CSUM + 1] = 0xff;
		break;
	case 6:
		ip_len = SROCE_ICRC_IPV6_HDR_LEN;
		memcpy(buf, ip, ip_len);
		buf[0] |= 0x0f;
		buf[1] = 0xff;
		buf[2] = 0xff;
		buf[3] = 0xff;
		buf[IPV6_HOP_LIMIT] = 0xff;
		break;
	default:
		return false;
	}

	p = buf + ip_len;
	memcpy(p, udp, SROCE_ICRC_UDP_HDR_LEN);
	p[UDP_CSUM] = 0xff;
	p[UDP_CSUM + 1] = 0xff;

	p += SROCE_ICRC_UDP_HDR_LEN;
	memcpy(p, bth, SROCE_BTH_LEN);
	p[SROCE_BTH_VARIANT_OFF] = 0xff;

	*state = crc32(SROCE_ICRC_SEED, buf, p + SROCE_BTH_LEN - buf);
	return true;
}

/* Is part within the CRC'd bytes after the BTH of a packet of len? */
static bool sroce_icrc_part_ok(const struct sroce_icrc_part *part, u32 len)
{
	return part && part->off >= SROCE_BTH_LEN &&
	       part->off <= len - SROCE_ICRC_LEN &&
	       part->len <= len - SROCE_ICRC_LEN - part->off;
}

enum sroce_icrc_status
sroce_icrc_compute_part(sroce_crc32_fn crc32, const u8 *ip, const u8 *udp,
			const u8 *bth, u32 len,
			const struct sroce_icrc_part *part, u32 *icrc)
{
	u32 state, end;

	if (len < SROCE_BTH_LEN + SROCE_ICRC_LEN)
		return SROCE_ICRC_TOO_SHORT;
	if (!sroce_icrc_begin(crc32, ip, udp, bth, &state))
		return SROCE_ICRC_UNSUPPORTED_IP;
	end = len - SROCE_ICRC_LEN;
	if (sroce_icrc_part_ok(part, len)) {
		state = sroce_icrc_update(crc32, state, bth + SROCE_BTH_LEN,
					  part->off - SROCE_BTH_LEN);
		state = sroce_crc32_shift(state, part->len) ^ part->crc;
		state = sroce_icrc_update(crc32, state,
					  bth + part->off + part->len,
					  end - part->off - part->len);
	} else {
		state = sroce_icrc_update(crc32, state, bth + SROCE_BTH_LEN,
					  end - SROCE_BTH_LEN);
	}
	*icrc = sroce_icrc_final(state);
	return SROCE_ICRC_OK;
}

enum sroce_icrc_status sroce_icrc_compute(sroce_crc32_fn crc32, const u8 *ip,
					  const u8 *udp, const u8 *bth,
					  u32 len, u32 *icrc)
{
	return sroce_icrc_compute_part(crc32, ip, udp, bth, len, NULL, icrc);
}

enum sroce_icrc_status sroce_icrc_verify(sroce_crc32_fn crc32, const u8 *ip,
					 const u8 *udp, const u8 *bth, u32 len)
{
	enum sroce_icrc_status st;
	u32 icrc;

	st = sroce_icrc_compute(crc32, ip, udp, bth, len, &icrc);
	if (st != SROCE_ICRC_OK)
		return st;
	if (icrc != sroce_icrc_load(bth + len - SROCE_ICRC_LEN))
		return SROCE_ICRC_MISMATCH;
	return SROCE_ICRC_OK;
}
