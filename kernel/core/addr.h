/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Who a received packet is from and for: the IP addresses of a RoCE v2
 * packet, as GIDs, against what the receiving QP expects.
 *
 * A RoCE v2 GID is an IPv6 address; an IPv4 address appears in its
 * IPv4-mapped form ::ffff:a.b.c.d, which is how the GID table and the
 * address vectors hold it.  Comparing GIDs therefore compares IP addresses
 * of either version, and a GID of one version never equals one of the
 * other.
 *
 * A connected QP (RC, UC) talks to one peer: the packets it accepts come
 * from the address vector's DGID and are addressed to the QP's own SGID
 * (IBTA Vol. 1, 9.6.1.5, in its RoCE v2 form; rdma_rxe's check_addr() does
 * the same).  Without that check anyone who can guess a QP number and a
 * PSN could write into a connection, and a UC responder, which starts a new
 * message at the PSN of any FIRST or ONLY packet, needs no PSN at all.
 * Broadcast is not RoCE: no QP of any type takes a packet sent to a
 * broadcast address, and a connected QP none sent to a multicast group.
 */
#ifndef SROCE_CORE_ADDR_H
#define SROCE_CORE_ADDR_H

#include "core_env.h"

#define SROCE_GID_LEN		16

/* The addresses of a received packet's IP header, as GIDs. */
struct sroce_addr_pair {
	u8 src[SROCE_GID_LEN];
	u8 dst[SROCE_GID_LEN];
};

enum sroce_addr_verdict {
	SROCE_ADDR_OK,
	SROCE_ADDR_BCAST,	/* to a broadcast address */
	SROCE_ADDR_MCAST,	/* to a multicast group, at a connected QP */
	SROCE_ADDR_BAD_SRC,	/* not from the address vector's DGID */
	SROCE_ADDR_BAD_DST,	/* not to the QP's SGID */
};

/*
 * The source and destination of the IPv4 (20 bytes and more) or IPv6
 * header of len bytes at ip, IPv4 ones mapped.  False, with *out untouched,
 * if it is neither, shorter than its fixed part, or an IPv6 header with an
 * IPv4-mapped address (which would pass for an IPv4 peer).
 */
bool sroce_addr_parse(const u8 *ip, u32 len, struct sroce_addr_pair *out);

bool sroce_addr_is_v4(const u8 gid[SROCE_GID_LEN]);
/* IPv4 224.0.0.0/4 or IPv6 ff00::/8. */
bool sroce_addr_is_mcast(const u8 gid[SROCE_GID_LEN]);
/*
 * The IPv4 limited broadcast 255.255.255.255, the only broadcast address a
 * packet shows by itself; a subnet's broadcast address needs the routing
 * table, which the caller consults.
 */
bool sroce_addr_is_lbcast(const u8 gid[SROCE_GID_LEN]);

/*
 * A connected QP whose own GID is sgid and whose address vector names dgid:
 * in this order, broadcast and multicast destinations, a source other than
 * dgid and a destination other than sgid are refused.
 */
enum sroce_addr_verdict
sroce_addr_check_conn(const struct sroce_addr_pair *pkt,
		      const u8 sgid[SROCE_GID_LEN],
		      const u8 dgid[SROCE_GID_LEN]);

#endif /* SROCE_CORE_ADDR_H */
