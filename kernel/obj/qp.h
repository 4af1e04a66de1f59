/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_QP_H
#define SROCE_QP_H

#include <linux/completion.h>
#include <linux/if_ether.h>
#include <linux/in6.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "core/rc.h"
#include "dev_limits.h"
#include "obj/queue.h"
#include "obj/srq.h"

/* Executed atomics kept for duplicate requests: one per responder resource. */
#define SROCE_RC_MAX_ATOMIC_RES SROCE_MAX_QP_RD_ATOM

struct sroce_ah_dest;
struct sroce_counter;
struct sroce_dev;
struct sroce_qp;
struct sroce_exec_tx_token;

/*
 * The part of a QP that lookups by number touch before they hold a
 * reference.  ib_core frees struct ib_qp (and so struct sroce_qp) with
 * kfree() as soon as destroy_qp returns, which a lookup that loaded the
 * pointer under RCU could still be racing with; this small object is the
 * driver's own and is freed after a grace period.  See the head of qp.c.
 */
struct sroce_qp_ref {
	refcount_t count;		/* 1 for the QPN entry, 1 per lookup */
	struct completion released;	/* count reached zero */
	struct sroce_qp *qp;		/* valid while count > 0 */
	struct rcu_head rcu;
};

/*
 * Where packets of a connected QP go, resolved from the address vector at
 * RTR.  Addresses are in network order; daddr and saddr are IPv4-mapped
 * IPv6 addresses when v4 is set.
 */
struct sroce_qp_av {
	const struct ib_gid_attr *sgid_attr;	/* held; source GID and port */
	u64 id;			/* unique per resolution: names its route */
	bool v4;				/* RoCE v2 over IPv4 */
	struct in6_addr saddr;
	struct in6_addr daddr;
	u8 dmac[ETH_ALEN];
	u8 hop_limit;
	u8 traffic_class;
	u32 flow_label;
};

/*
 * The engine's view of one send WQE: what it copied and checked from the
 * ring slot (the slot copy itself is in sroce_qp.sq_copy) and how far the
 * WQE has got.  Indexed like the SQ ring.
 */
struct sroce_swqe {
	u64 wr_id;
	u64 length;			/* bytes of the message */
	u32 first_psn;			/* PSNs [first_psn, first_psn + npkts) */
	u32 npkts;
	u8 msg;				/* enum sroce_rc_msg */
	u8 wc_opcode;			/* enum ib_uverbs_wc_opcode value */
	bool signaled;
	bool solicited;
	bool fence;
	bool local;			/* local operation: no PSNs (local.c) */
	bool started;			/* its first packet went out, or executed */
	u8 status;			/* enum sroce_wc_status once known */
	struct sroce_ah_dest *dest;	/* UD: the address handle's, held */
};

/*
 * Requester and completer state.  PSNs are 24-bit; WQE indices are the
 * free-running counters of the SQ ring: [comp, fetched) were copied from
 * the ring, [comp, cur) have been transmitted completely, cur is being
 * transmitted from byte cur_off with PSN psn.
 */
struct sroce_req {
	u32 comp;			/* oldest WQE not retired; our consumer */
	u32 fetched;			/* next WQE to copy from the ring */
	u32 seen_producer;		/* SQ producer when last looked at */
	u32 cur;			/* WQE being transmitted */
	u64 cur_off;			/* its next byte */
	u32 psn;			/* PSN of the next packet */
	u32 psn_assign;			/* first PSN of the next fetched WQE */
	u32 snd_max;			/* one past the highest PSN sent */
	u32 una;			/* oldest unacknowledged PSN */
	u32 rd_atomic;			/* READ/atomic WQEs sent, not done */
	u8 retry_left;
	u8 backoff;			/* timer doublings since progress */
	u8 rnr_left;
	bool rnr_wait;			/* RNR NAK: wait for rnr_timer */
	bool rewind_sent;		/* implicit NAK already acted upon */
	bool draining;			/* SQD: messages before drain_end */
	u32 drain_end;			/* SQD: first WQE not to start */
	unsigned long timeout_jiffies;	/* 0: no transport timer */
	unsigned long timer_base;	/* jiffies the transport timer counts from */
	struct timer_list retrans_timer;
	struct timer_list rnr_timer;
};

/* An executed atomic, kept to answer its duplicates (IBTA 9.9.5.1). */
struct sroce_atomic_res {
	u32 psn;
	bool valid;
	u64 orig;
};

/* Responder state. */
struct sroce_resp {
	struct sroce_rc_resp_state st;
	u32 msn;			/* messages completed, 24 bits */
	u32 rq_cons;			/* our RQ consumer */
	bool have_rwqe;			/* a SEND is filling rwqe */
	u64 rcv_off;			/* bytes of it received so far */
	struct sroce_recv_wqe *rwqe;	/* copy of its slot */
	u64 wr_va;			/* RDMA WRITE in progress */
	u64 wr_left;
	u64 wr_total;
	u32 wr_rkey;
	u64 rd_va;			/* RDMA READ being answered */
	u64 rd_left;
	u32 rd_rkey;
	u32 rd_psn;			/* of the next response */
	u32 rd_pkts;			/* responses left; 0: none */
	bool rd_first;
	bool ack_pending;		/* an executed packet asked for an ACK */
	u32 ack_psn;
	u8 atomic_next;
	struct sroce_atomic_res atomics[SROCE_RC_MAX_ATOMIC_RES];
	/*
	 * XRC target QPs.  xsrq: the SRQ the request being executed names,
	 * referenced for the duration (sroce_srq_get()); NULL otherwise.
	 * The receive WQE in progress (have_rwqe) came from the SRQ with
	 * number rwqe_srqn and serial rwqe_srq_serial, looked up again by
	 * every later packet of its message and by a flush.
	 */
	struct sroce_srq *xsrq;
	u32 rwqe_srqn;
	u64 rwqe_srq_serial;
	u32 rd_srqn;			/* likewise, the READ being answered */
	u64 rd_srq_serial;
};

/*
 * A queue pair: RC, UC, UD or the GSI QP.
 *
 * Locking: mutex serialises the control path (modify_qp, query_qp) and
 * protects every attribute below it; modify_qp changes them, and the
 * engine's state, with exec_lock held as well, so the engine (which holds
 * only exec_lock) sees them change between runs.  state is also written
 * with WRITE_ONCE() so that the data path may sample it without a lock.
 * Fields above the mutex are fixed at creation.
 */
struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_qp_ref *ref;
	struct sroce_queue sq;
	struct sroce_queue rq;
	struct ib_qp_cap cap;		/* as written back at creation */
	enum ib_sig_type sq_sig_type;
	struct ib_xrcd *xrcd;		/* XRC target: its domain */
	bool user;			/* rings mapped by a provider */
	/*
	 * Unique for the device's lifetime, unlike the QPN, which the next
	 * create_qp reuses: what a type 2 window remembers of its QP.
	 */
	u64 serial;

	struct mutex mutex;		/* control path; see above */
	enum ib_qp_state state;
	enum ib_mtu path_mtu;
	u32 qkey;
	u32 rq_psn;			/* 24 bits */
	u32 sq_psn;			/* 24 bits */
	u32 dest_qp_num;		/* 24 bits */
	int access;			/* IB_ACCESS_REMOTE_* */
	u16 pkey_index;
	u8 port_num;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 min_rnr_timer;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	bool en_sqd_async_notify;	/* SQ_DRAINED wanted for this SQD */
	struct rdma_ah_attr ah_attr;	/* as set, for query; sgid_attr NULL */
	struct sroce_qp_av av;		/* resolved; valid once ah_attr is */
	u32 pmtu;			/* path MTU in bytes */
	/*
	 * The "rdma statistic qp" counter this QP counts in, or NULL (its
	 * device's counters): written under mutex by obj/counter.c, read by
	 * the data path under RCU (stats.h, sroce_qp_stats()).
	 */
	struct sroce_counter __rcu *counter;

	/*
	 * Data path (kernel/dp/exec.c).  The engine runs with exec_lock held
	 * (BHs off; in the receive softirq, a poster's context or the work
	 * item), so everything below is owned by it and by modify_qp, which
	 * takes the same lock.  rxq, the events and the kick come from any
	 * context; post_lock serialises kernel posters.
	 */
	spinlock_t exec_lock;		/* the engine's state, exec.c */
	int exec_cpu;			/* where the work item runs */
	/* the last send doorbell, for the SQ poller's choice (dp/poll.c) */
	u64 db_ns;			/* its time, ktime_get_ns() */
	u64 db_idle_us;			/* db_cpu's idle time then */
	int db_cpu;			/* the poller's CPU it looked at */
	u32 rxq_bytes;			/* truesize queued on rxq, its lock */
	struct work_struct work;
	spinlock_t kick_lock;		/* queueing work vs. DYING, exec.c */
	struct sk_buff_head rxq;	/* received, not yet processed */
	unsigned long events;		/* SROCE_EXEC_* bits, atomic */
	unsigned long ae_pending;	/* BIT(ib_event_type) to dispatch */
	bool comm_est;			/* COMM_EST raised since -> RTR */
	struct sroce_exec_tx_token *tx_token; /* packets in flight (dp/tx.c) */
	struct dst_entry *tx_dst;	/* cached route, kernel/dp/net.c */
	u64 tx_dst_av;			/* the id of the av it was found for */
	u32 tx_dst_cookie;		/* its IPv6 validity cookie */
	__be16 tx_dst_sport;		/* the flow (UDP source port) it is for */
	struct list_head res_node;	/* in kernel/res.c's list */
	bool res_live;			/* details readable, kernel/res.c */
	spinlock_t post_lock;		/* kernel QP posters */
	void *sq_copy;			/* private copies of fetched SQ slots */
	struct sroce_swqe *swqe;	/* per SQ slot */
	struct sroce_req req;
	struct sroce_resp resp;
};

static inline struct sroce_qp *to_sroce_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

/* Datagram QPs: UD, and the GSI QP ib_core's MAD layer runs on. */
static inline bool sroce_qp_is_ud(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/*
 * XRC (IBTA Annex A14): an initiator QP (XRC_INI) is an RC requester
 * without a receive side; a target QP (XRC_TGT) an RC responder without a
 * send side, without PD or CQs of its own, that places each message with
 * the XRC SRQ the request names (kernel/dp/resp.c).
 */
static inline bool sroce_qp_is_xrc(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

static inline enum sroce_transport sroce_qp_transport(const struct sroce_qp *qp)
{
	if (qp->ibqp.qp_type == IB_QPT_RC)
		return SROCE_TRANSPORT_RC;
	if (sroce_qp_is_xrc(qp))
		return SROCE_TRANSPORT_XRC;
	return qp->ibqp.qp_type == IB_QPT_UC ? SROCE_TRANSPORT_UC :
					       SROCE_TRANSPORT_UD;
}

/* Acknowledged and retried: RC and both XRC types. */
static inline bool sroce_qp_is_reliable(const struct sroce_qp *qp)
{
	return sroce_transport_is_reliable(sroce_qp_transport(qp));
}

/* An RQ ring of its own: not with an SRQ, never for XRC. */
static inline bool sroce_qp_has_rq(const struct sroce_qp *qp)
{
	return !qp->ibqp.srq && !sroce_qp_is_xrc(qp);
}

/*
 * The protection domain keys are checked against: the QP's own, or for an
 * XRC target QP, which has none, the one of the XRC SRQ named by the
 * request being executed (resp.xsrq, set only while one is).
 */
static inline struct ib_pd *sroce_qp_pd(const struct sroce_qp *qp)
{
	if (qp->ibqp.pd)
		return qp->ibqp.pd;
	return qp->resp.xsrq ? qp->resp.xsrq->ibsrq.pd : NULL;
}

u32 sroce_qp_port_mtu(struct sroce_qp *qp);
int sroce_qp_resolve_av(struct ib_device *ibdev, const struct rdma_ah_attr *ah,
			bool mcast, struct sroce_qp_av *av);
struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
struct ib_qp *sroce_qp_find(struct sroce_dev *sdev, u32 qpn);
void sroce_qp_put(struct sroce_qp *qp);

void sroce_qp_dev_init(struct sroce_dev *sdev);
void sroce_qp_dev_cleanup(struct sroce_dev *sdev);

extern const struct ib_device_ops sroce_qp_ops;

#endif /* SROCE_QP_H */
