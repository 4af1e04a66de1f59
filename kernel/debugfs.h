/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_DEBUGFS_H
#define SROCE_DEBUGFS_H

#include <linux/atomic.h>

/*
 * Module-wide counts of live objects, for leak checks: after every device is
 * gone each count must be back to zero.  Read from
 * /sys/kernel/debug/sroce/objects.
 */
enum sroce_obj_kind {
	SROCE_OBJ_DEVICE,
	SROCE_OBJ_UCONTEXT,
	SROCE_OBJ_PD,
	SROCE_OBJ_UDP_SOCKET,
	SROCE_OBJ_MR,
	SROCE_OBJ_CQ,
	SROCE_OBJ_RING,
	SROCE_OBJ_QP,
	SROCE_OBJ_AH,
	SROCE_OBJ_AH_DEST,	/* resolved destinations, held by WQEs too */
	SROCE_OBJ_MCAST,
	SROCE_OBJ_SRQ,
	SROCE_OBJ_MW,
	SROCE_OBJ_KINDS,
};

/* Packets dropped on receive, by reason.  Read from .../sroce/rx_drops. */
enum sroce_drop_reason {
	SROCE_DROP_NO_QP,	/* no QP with the BTH's destination number */
	SROCE_DROP_NO_DEVICE,	/* arrived on a netdev without sroce device */
	SROCE_DROP_RUNT,	/* shorter than a BTH and an ICRC */
	SROCE_DROP_IP,		/* IPv4 with options: no ICRC defined */
	SROCE_DROP_ICRC,	/* ICRC mismatch */
	SROCE_DROP_MALFORMED,	/* refused by sroce_pkt_parse() */
	SROCE_DROP_QP_STATE,	/* the QP cannot receive in its state */
	SROCE_DROP_TRANSPORT,	/* opcode of another transport than the QP's */
	SROCE_DROP_STALE,	/* duplicate or out-of-window, nothing to do */
	SROCE_DROP_NO_MEM,	/* could not be made linear and private */
	SROCE_DROP_QKEY,	/* UD: Q_Key of another QP */
	SROCE_DROP_NO_RECV,	/* UD, UC: no receive WQE posted */
	SROCE_DROP_LOST_MSG,	/* UC: part of a message whose packets were lost */
	SROCE_DROP_NO_MCAST,	/* multicast to a group no QP has joined */
	SROCE_DROP_BCAST,	/* sent to a broadcast address */
	SROCE_DROP_MCAST_CONN,	/* RC, UC: sent to a multicast group */
	SROCE_DROP_BAD_SRC,	/* RC, UC: not from the address vector's DGID */
	SROCE_DROP_BAD_DST,	/* RC, UC: not to the QP's SGID */
	SROCE_DROP_RX_BACKLOG,	/* the QP's or the device's backlog is full */
	SROCE_DROP_REASONS,
};

/*
 * Packets the transmit path could not send, by reason.  Read from
 * .../sroce/tx_errors.
 */
enum sroce_tx_error {
	SROCE_TX_NO_ROUTE,	/* no unicast route to the destination */
	SROCE_TX_NO_MEM,	/* no skb */
	SROCE_TX_DROPPED,	/* refused by the IP stack (too big, filter, qdisc) */
	SROCE_TX_BAD_SKB,	/* not as sroce_net_alloc_skb() made it */
	SROCE_TX_ERRORS,
};

extern atomic_t sroce_objs[SROCE_OBJ_KINDS];
extern atomic64_t sroce_drops[SROCE_DROP_REASONS];
extern atomic64_t sroce_tx_errors[SROCE_TX_ERRORS];

static inline void sroce_obj_get(enum sroce_obj_kind kind)
{
	atomic_inc(&sroce_objs[kind]);
}

static inline void sroce_obj_put(enum sroce_obj_kind kind)
{
	atomic_dec(&sroce_objs[kind]);
}

static inline void sroce_drop_count(enum sroce_drop_reason why)
{
	atomic64_inc(&sroce_drops[why]);
}

static inline void sroce_tx_error_count(enum sroce_tx_error why)
{
	atomic64_inc(&sroce_tx_errors[why]);
}

void sroce_debugfs_init(void);
void sroce_debugfs_exit(void);

#endif /* SROCE_DEBUGFS_H */
