/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_STATS_H
#define SROCE_STATS_H

#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/types.h>

#include "device.h"
#include "dp/trace.h"
#include "obj/qp.h"

/*
 * Why the receive path dropped a packet.  Counted per device (the port's
 * hw_counters, "rdma statistic") except SROCE_DROP_NO_DEVICE, which by
 * definition has no device and is counted module-wide; debugfs's rx_drops
 * shows every reason summed over all devices, present and past.
 */
enum sroce_drop_reason {
	SROCE_DROP_NO_QP,	/* no QP with the BTH's destination number */
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
	SROCE_DROP_DEV_REASONS,	/* the reasons counted per device */
	/* arrived on a netdev without sroce device: module-wide */
	SROCE_DROP_NO_DEVICE = SROCE_DROP_DEV_REASONS,
	SROCE_DROP_REASONS,
};

/* Why the transmit path could not send a packet; per device. */
enum sroce_tx_error {
	SROCE_TX_NO_ROUTE,	/* no unicast route to the destination */
	SROCE_TX_NO_MEM,	/* no skb */
	SROCE_TX_DROPPED,	/* refused by the IP stack (too big, filter, qdisc) */
	SROCE_TX_BAD_SKB,	/* not as sroce_net_alloc_skb() made it */
	SROCE_TX_ERRORS,
};

/*
 * A device's counters, each one of its port's hw_counters.  The names and
 * meanings are in stats.c and Documentation/admin-guide.md.
 */
enum sroce_stat {
	SROCE_STAT_SENT_PKTS,
	SROCE_STAT_RCVD_PKTS,
	SROCE_STAT_SENT_BYTES,
	SROCE_STAT_RCVD_BYTES,
	SROCE_STAT_RDMA_SENDS,
	SROCE_STAT_RDMA_RECVS,
	SROCE_STAT_DUP_REQ,
	SROCE_STAT_OUT_OF_SEQ_REQ,
	SROCE_STAT_RCVD_RNR,
	SROCE_STAT_SEND_RNR,
	SROCE_STAT_RCVD_SEQ_ERR,
	SROCE_STAT_RETRY_EXCEEDED,
	SROCE_STAT_RNR_RETRY_EXCEEDED,
	SROCE_STAT_COMP_RETRY,
	SROCE_STAT_SEND_ERR,
	SROCE_STAT_LINK_DOWNED,
	SROCE_STAT_REQ_ACCESS_ERR,
	SROCE_STAT_RESP_ACCESS_ERR,
	SROCE_STAT_SQ_POLL,	/* send doorbells handed to the SQ poller */
	SROCE_STAT_DROP,	/* SROCE_DROP_DEV_REASONS drop reasons */
	SROCE_STAT_TX_ERROR = SROCE_STAT_DROP + SROCE_DROP_DEV_REASONS,
	SROCE_STATS = SROCE_STAT_TX_ERROR + SROCE_TX_ERRORS,
};

/*
 * One CPU's share of a device's counters.  Writers only ever add to their
 * own CPU's copy (this_cpu ops, safe from any context); a reader sums all
 * CPUs' copies, so a read may miss increments in flight but never tears a
 * count on the 64-bit kernels sroce builds for.
 */
struct sroce_stats {
	u64 count[SROCE_STATS];
};

static inline void sroce_stats_add(struct sroce_dev *sdev, enum sroce_stat s,
				   u64 n)
{
	this_cpu_add(sdev->stats->count[s], n);
}

static inline void sroce_stats_inc(struct sroce_dev *sdev, enum sroce_stat s)
{
	this_cpu_inc(sdev->stats->count[s]);
}

void sroce_stats_no_device_drop(void);
const char *sroce_stats_drop_name(unsigned int why);

/* The sroce_rx_drop tracepoint's qpn before the packet's QP is known. */
#define SROCE_DROP_NO_QPN U32_MAX

/*
 * A received packet for QP qpn (or SROCE_DROP_NO_QPN) dropped, traced and
 * counted on the device it was for; sdev is NULL (and ignored) for
 * SROCE_DROP_NO_DEVICE only.
 */
static inline void sroce_drop_count_qpn(struct sroce_dev *sdev, u32 qpn,
					enum sroce_drop_reason why)
{
	trace_sroce_rx_drop(sdev, qpn, why);
	if (unlikely(why == SROCE_DROP_NO_DEVICE))
		sroce_stats_no_device_drop();
	else
		sroce_stats_inc(sdev, SROCE_STAT_DROP + why);
}

static inline void sroce_drop_count(struct sroce_dev *sdev,
				    enum sroce_drop_reason why)
{
	sroce_drop_count_qpn(sdev, SROCE_DROP_NO_QPN, why);
}

static inline void sroce_drop_count_ibqp(struct ib_qp *ibqp,
					 enum sroce_drop_reason why)
{
	sroce_drop_count_qpn(to_sroce_dev(ibqp->device), ibqp->qp_num, why);
}

/* A packet not sent: counted by reason and in send_err. */
static inline void sroce_tx_error_count(struct sroce_dev *sdev,
					enum sroce_tx_error why)
{
	sroce_stats_inc(sdev, SROCE_STAT_TX_ERROR + why);
	sroce_stats_inc(sdev, SROCE_STAT_SEND_ERR);
}

/*
 * A counter of ib_core's counter API ("rdma statistic qp", kernel/obj/
 * counter.c): the per-CPU counts of the QPs bound to it, indexed as the
 * port's.  Only the counters sroce_stats_per_qp() names ever move here.
 */
struct sroce_counter {
	struct sroce_stats __percpu *stats;
};

bool sroce_stats_per_qp(enum sroce_stat s);

/*
 * Where the events of a QP are counted: in the counter
 * it is bound to, if any, else in its device's.  A bound QP's events are in
 * its counter only: ib_core shows a port's counters as the device's plus
 * every counter's plus those of counters gone (counters.c's history), so
 * counting them twice would count them twice there too.
 *
 * qp->counter is published with rcu_assign_pointer() by bind and unbind
 * (kernel/obj/counter.c); the data path reads it from softirq or with
 * qp->exec_lock held (BHs off), both RCU read-side sections, and unbind
 * waits for a grace period, so no increment reaches a counter after its
 * QP has left it.  Unbound, the cost is one pointer test.
 */
static inline struct sroce_stats __percpu *sroce_qp_stats(struct sroce_qp *qp)
{
	struct sroce_counter *c;

	c = rcu_dereference_check(qp->counter, rcu_read_lock_any_held());
	if (likely(!c))
		return to_sroce_dev(qp->ibqp.device)->stats;
	return c->stats;
}

/* s: one of the counters sroce_stats_per_qp() names. */
#define sroce_qp_stats_inc(qp, s) this_cpu_inc(sroce_qp_stats(qp)->count[s])
#define sroce_qp_stats_add(qp, s, n) \
	this_cpu_add(sroce_qp_stats(qp)->count[s], (n))
#define sroce_qp_drop(qp, why) sroce_drop_count_ibqp(&(qp)->ibqp, (why))
#define sroce_qp_tx_error(qp, why) \
	sroce_tx_error_count(to_sroce_dev((qp)->ibqp.device), (why))

struct seq_file;

int sroce_stats_dev_init(struct sroce_dev *sdev);
void sroce_stats_dev_cleanup(struct sroce_dev *sdev);
void sroce_stats_show_drops(struct seq_file *s);
void sroce_stats_show_tx_errors(struct seq_file *s);
struct rdma_hw_stats *sroce_stats_alloc_counter(void);
void sroce_stats_read_counter(const struct sroce_counter *c,
			      struct rdma_hw_stats *stats);

extern const struct ib_device_ops sroce_stats_ops;

#endif /* SROCE_STATS_H */
