// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Packet addresses against a QP's; see addr.h.
 */
#include "addr.h"

#define IPV4_HDR_LEN	20
#define IPV4_SRC	12
#define IPV4_DST	16
#define IPV6_HDR_LEN	40
#define IPV6_SRC	8
#define IPV6_DST	24
#define IPV4_ADDR_LEN	4
#define V4MAP_PREFIX	12	/* ::ffff: before the IPv4 address */

static const u8 sroce_addr_v4map[V4MAP_PREFIX] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
};

static void sroce_addr_map_v4(u8 gid[SROCE_GID_LEN], const u8 *v4)
{
	memcpy(gid, sroce_addr_v4map, V4MAP_PREFIX);
	memcpy(gid + V4MAP_PREFIX, v4, IPV4_ADDR_LEN);
}

bool sroce_addr_parse(const u8 *ip, u32 len, struct sroce_addr_pair *out)
{
	if (len < 1)
		return false;
	switch (ip[0] >> 4) {
	case 4:
		if (len < IPV4_HDR_LEN)
			return false;
		sroce_addr_map_v4(out->src, ip + IPV4_SRC);
		sroce_addr_map_v4(out->dst, ip + IPV4_DST);
		return true;
	case 6:
		if (len < IPV6_HDR_LEN)
			return false;
		/* on the wire an IPv4 node has an IPv4 header, not these */
		if (sroce_addr_is_v4(ip + IPV6_SRC) ||
		    sroce_addr_is_v4(ip + IPV6_DST))
			return false;
		memcpy(out->src, ip + IPV6_SRC, SROCE_GID_LEN);
		memcpy(out->dst, ip + IPV6_DST, SROCE_GID_LEN);
		return true;
	default:
		return false;
	}
}

bool sroce_addr_is_v4(const u8 gid[SROCE_GID_LEN])
{
	return !memcmp(gid, sroce_addr_v4map, V4MAP_PREFIX);
}

bool sroce_addr_is_mcast(const u8 gid[SROCE_GID_LEN])
{
	if (sroce_addr_is_v4(gid))
		return (gid[V4MAP_PREFIX] & 0xf0) == 0xe0;
	return gid[0] == 0xff;
}

bool sroce_addr_is_lbcast(const u8 gid[SROCE_GID_LEN])
{
	static const u8 ones[IPV4_ADDR_LEN] = { 0xff, 0xff, 0xff, 0xff };

	return sroce_addr_is_v4(gid) &&
	       !memcmp(gid + V4MAP_PREFIX, ones, IPV4_ADDR_LEN);
}

enum sroce_addr_verdict
sroce_addr_check_conn(const struct sroce_addr_pair *pkt,
		      const u8 sgid[SROCE_GID_LEN],
		      const u8 dgid[SROCE_GID_LEN])
{
	if (sroce_addr_is_lbcast(pkt->dst))
		return SROCE_ADDR_BCAST;
	if (sroce_addr_is_mcast(pkt->dst))
		return SROCE_ADDR_MCAST;
	if (memcmp(pkt->src, dgid, SROCE_GID_LEN))
		return SROCE_ADDR_BAD_SRC;
	if (memcmp(pkt->dst, sgid, SROCE_GID_LEN))
		return SROCE_ADDR_BAD_DST;
	return SROCE_ADDR_OK;
}
