/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_NET_H
#define SROCE_NET_H

#include <linux/types.h>

struct in6_addr;
struct net;
struct sk_buff;
struct sroce_dev;
struct sroce_icrc_part;
struct sroce_qp;
struct sroce_qp_av;

/* IANA-assigned UDP destination port of RoCE v2. */
#define SROCE_UDP_PORT 4791

/*
 * The per-namespace endpoints: sroce_net_init() and sroce_net_cleanup() at
 * module load and unload; a device holds its namespace's endpoint from
 * sroce_net_get() to sroce_net_put() (process context, not under RTNL).
 */
int sroce_net_init(void);
void sroce_net_cleanup(void);
int sroce_net_get(struct net *net);
void sroce_net_put(struct net *net);
int sroce_net_mcast(struct sroce_dev *sdev, const struct in6_addr *group,
		    bool join);

/*
 * Transmit path of a QP.  sroce_net_alloc_skb() returns an skb whose data
 * is len writable bytes for the BTH, extension headers and payload, with
 * room in front for the link, IP and UDP headers to av and behind for the
 * ICRC; NULL if out of memory.  sroce_net_xmit() adds the UDP and IP
 * headers for av (a connected QP's own &qp->av, whose route is kept, or a
 * UD datagram's address handle) and the ICRC, and sends the packet
 * (to the wire, or to a device of this host through dp/loop.c).  It
 * consumes the skb; it returns 0 or a negative errno if the packet was
 * dropped (no route, no memory).  Both are called by the QP's engine, with
 * qp->exec_lock held (BHs off), which keeps the address vector stable.
 *
 * In detail: the len bytes are not initialised, the caller writes all of
 * them, and the skb stays linear (no frags) at exactly what the caller
 * wrote; sroce_net_xmit() overwrites skb->cb.  A packet dropped after it
 * left sroce_net_xmit() (on the wire, in a queue of the receiver) is not
 * reported: RC's retransmission covers it like any loss.  part, if not
 * NULL, is the CRC of the payload the caller took while copying it in
 * (dp/tx.h), which the ICRC then does not read again.
 */
struct sk_buff *sroce_net_alloc_skb(struct sroce_qp *qp,
				    const struct sroce_qp_av *av,
				    unsigned int len);
int sroce_net_xmit(struct sroce_qp *qp, const struct sroce_qp_av *av,
		   u32 dest_qpn, struct sk_buff *skb,
		   const struct sroce_icrc_part *part);
bool sroce_net_icrc_likely(struct sroce_qp *qp, const struct sroce_qp_av *av);
/* The QP's address vector or flow changed (qp->exec_lock), or it goes away. */
void sroce_net_forget_route(struct sroce_qp *qp);

/* Receive path (softirq), see sroce_net_rx() in net.c. */
void sroce_net_rx(struct sk_buff *skb, bool icrc);
/* A connected QP takes packets from its peer only. */
bool sroce_net_rx_from_peer(struct sroce_qp *qp, const struct sk_buff *skb);

#endif /* SROCE_NET_H */
