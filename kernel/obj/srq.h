/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_SRQ_H
#define SROCE_SRQ_H

#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "obj/queue.h"

/*
 * A shared receive queue: one ring of struct sroce_recv_wqe slots that
 * several QPs take their receive WQEs from (kernel/srq.c).
 *
 * Locking:
 *  - lock serialises the consumers and protects cons and limit.  The
 *    consumers are the engines of every QP attached to the SRQ, which run
 *    in their own work items (or a doorbell's system call) on any CPU at
 *    the same time, and modify_srq/query_srq; all in process context, so
 *    a plain spinlock.  The SRQ limit event is raised after it is dropped.
 *  - post_lock serialises kernel posters (post_srq_recv), which may run in
 *    any context, hence with interrupts disabled; it guards the producer
 *    counter in the ring header.  A user SRQ's producer is the provider's.
 *  - rq, srqn, max_sge and user are fixed at creation.
 */
struct sroce_srq {
	struct ib_srq ibsrq;
	struct sroce_queue rq;
	u32 srqn;
	u32 max_sge;			/* SGEs per WQE, as granted */
	bool user;			/* ring mapped by a provider */

	spinlock_t lock;		/* consumers; see above */
	u32 cons;			/* next WQE to take */
	u32 limit;			/* armed srq_limit; 0: not armed */

	spinlock_t post_lock;		/* kernel posters; see above */
};

static inline struct sroce_srq *to_sroce_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

bool sroce_srq_take(struct sroce_srq *srq, struct sroce_recv_wqe *dst);

extern const struct ib_device_ops sroce_srq_ops;

#endif /* SROCE_SRQ_H */
