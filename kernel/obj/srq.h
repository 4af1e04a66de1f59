/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_SRQ_H
#define SROCE_SRQ_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "obj/queue.h"

struct sroce_dev;

/*
 * A shared receive queue: one ring of struct sroce_recv_wqe slots that
 * several QPs take their receive WQEs from (kernel/obj/srq.c).
 *
 * Locking:
 *  - lock serialises the consumers and protects cons and limit.  The
 *    consumers are the engines of every QP attached to the SRQ, which run
 *    in their own work items, in softirq (packet receive) or a doorbell's
 *    system call, on any CPU at the same time, and modify_srq/query_srq;
 *    so it is taken with BHs off.  The SRQ limit event is raised after it
 *    is dropped.
 *  - post_lock serialises kernel posters (post_srq_recv), which may run in
 *    any context, hence with interrupts disabled; it guards the producer
 *    counter in the ring header.  A user SRQ's producer is the provider's.
 *  - rq (the ring itself) changes only in a resize, with resize_mutex,
 *    lock and post_lock held: a holder of any of them sees one ring
 *    throughout (sroce_srq_take() under lock, post_srq_recv under
 *    post_lock).  resize_mutex serialises modify_srq (uverbs holds the SRQ
 *    only for reading, so two threads may modify it at once).
 *  - Lock order: resize_mutex > lock > post_lock.
 *  - srqn, serial, max_sge, slot_shift and user are fixed at creation; a
 *    resize keeps the slot size, so slot_shift may be read without a lock.
 *  - An XRC SRQ is found by number from the receive path (sroce_srq_get(),
 *    any context); ref counts the lookups, see kernel/obj/srq.c.
 */
struct sroce_srq {
	struct ib_srq ibsrq;
	struct sroce_queue rq;
	u32 srqn;
	u64 serial;			/* never reused, unlike srqn */
	refcount_t ref;			/* XRC: 1, plus 1 per lookup */
	struct completion released;	/* XRC: ref reached zero */
	u32 max_sge;			/* SGEs per WQE, as granted */
	u32 slot_shift;			/* rq's, for readers without a lock */
	bool user;			/* ring mapped by a provider */

	spinlock_t lock;		/* consumers; see above */
	u32 cons;			/* next WQE to take */
	u32 limit;			/* armed srq_limit; 0: not armed */

	spinlock_t post_lock;		/* kernel posters; see above */
	struct mutex resize_mutex;	/* modify_srq; see above */
};

static inline struct sroce_srq *to_sroce_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

bool sroce_srq_take(struct sroce_srq *srq, struct sroce_recv_wqe *dst);
struct sroce_srq *sroce_srq_get_xrc(struct sroce_dev *sdev, u32 srqn,
				    struct ib_xrcd *xrcd);
void sroce_srq_put(struct sroce_srq *srq);

/* The CQ a receive taken from the SRQ completes in: an XRC SRQ's own. */
static inline struct ib_cq *sroce_srq_cq(struct sroce_srq *srq)
{
	return srq->ibsrq.ext.cq;
}

extern const struct ib_device_ops sroce_srq_ops;

#endif /* SROCE_SRQ_H */
