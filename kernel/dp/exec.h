/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_EXEC_H
#define SROCE_EXEC_H

#include <rdma/ib_verbs.h>

#include "core/rc.h"

struct sk_buff;
struct sroce_qp;

/* Bits of sroce_qp.events. */
enum sroce_exec_event {
	SROCE_EXEC_DYING,	/* destroy started: nothing may queue the work */
	SROCE_EXEC_TIMEOUT,	/* the retransmission timer expired */
	SROCE_EXEC_RNR,		/* the RNR wait is over */
	SROCE_EXEC_LAST_WQE,	/* SRQ QP in error: LAST_WQE_REACHED owed */
	SROCE_EXEC_PENDING,	/* input waits for a run (lost wake-ups) */
	SROCE_EXEC_NOMEM,	/* a run found no memory for a packet */
	SROCE_EXEC_POLL,	/* the work item polls the SQ (sq_poll_us) */
};

/*
 * Hand a received packet to its QP.  Callable from softirq, where it runs
 * the QP's engine at once if nobody else is running it.  The caller holds
 * a reference on qp (sroce_qp_get()) for the duration of the call; the
 * skb is consumed.  Contract: the skb is linear, skb->data is the BTH,
 * skb->len is the UDP payload (BTH through ICRC), the ICRC has been
 * verified, and the BTH's destination QP is qp's number.  The network
 * header is still valid.
 */
void sroce_exec_rx(struct sroce_qp *qp, struct sk_buff *skb);

/* Wake the QP's work item; any context; a no-op once destroy began. */
void sroce_exec_kick(struct sroce_qp *qp);
/* A user's doorbell; process context (runs the engine if idle). */
void sroce_exec_doorbell(struct sroce_qp *qp);
/* A kernel poster's doorbell; any context (runs the engine if it may). */
void sroce_exec_post(struct sroce_qp *qp);
/* Set an event bit and wake the work item; callable from any context. */
void sroce_exec_event(struct sroce_qp *qp, int bit);

/* A deferred run and the events it noted; process context (dp/poll.c). */
void sroce_exec_deferred(struct sroce_qp *qp);

/* Engine-internal, qp->exec_lock held. */
void sroce_exec_packet(struct sroce_qp *qp, struct sk_buff *skb);
void sroce_exec_set_error(struct sroce_qp *qp, enum sroce_wc_status status);
void sroce_exec_set_error_event(struct sroce_qp *qp, enum ib_event_type ev);
void sroce_exec_raise(struct sroce_qp *qp, enum ib_event_type ev);
bool sroce_exec_flush(struct sroce_qp *qp, int budget);

/* QP control path. */
int sroce_exec_qp_init(struct sroce_qp *qp);
void sroce_exec_lock(struct sroce_qp *qp);
void sroce_exec_unlock(struct sroce_qp *qp);
void sroce_exec_modify(struct sroce_qp *qp, enum ib_qp_state cur,
		       enum ib_qp_state next);
void sroce_exec_quiesce(struct sroce_qp *qp);
void sroce_exec_cleanup(struct sroce_qp *qp);
/* Packets of the QP still in the network stack (rdma res, debugfs). */
int sroce_exec_tx_inflight(struct sroce_qp *qp);

int sroce_exec_init(void);
void sroce_exec_exit(void);

/*
 * The objects' other ways into the data path.  kernel/obj/ includes no
 * dp/ header but this one (userspace/tests/layers_test.cc checks it):
 * what a verb needs from the transmit and receive paths is declared here.
 */
struct in6_addr;
struct sroce_dev;

/*
 * The QP's address vector or destination QP changed, or the QP goes away:
 * the transmit path drops the route it cached for it.  qp->mutex held, or
 * the QP quiesced (sroce_exec_quiesce()) and no longer reachable.
 */
void sroce_exec_forget_route(struct sroce_qp *qp);
/*
 * Join (join true) or leave an IP multicast group on the device's netdev at
 * the RoCE v2 UDP endpoint of its namespace, so the host reports the
 * membership and IP delivers the group's datagrams to it.  Process
 * context, sleeps (RTNL); the device holds the endpoint.  0 or a negative
 * errno.
 */
int sroce_exec_mcast_join(struct sroce_dev *sdev,
			  const struct in6_addr *group, bool join);

#endif /* SROCE_EXEC_H */
