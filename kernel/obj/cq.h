/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SROCE_CQ_H
#define SROCE_CQ_H

#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "obj/queue.h"

/*
 * Values of struct sroce_cqe.wc_flags: libibverbs' enum ibv_wc_flags, which
 * differ from the kernel's enum ib_wc_flags from bit 2 on.  The data path
 * writes these; poll_cq translates them for kernel consumers.
 */
enum sroce_cqe_wc_flags {
	SROCE_CQE_WC_GRH = 1 << 0,
	SROCE_CQE_WC_WITH_IMM = 1 << 1,
	SROCE_CQE_WC_IP_CSUM_OK = 1 << 2,
	SROCE_CQE_WC_WITH_INV = 1 << 3,
};

/*
 * A completion queue: one shared ring of struct sroce_cqe, filled by the
 * kernel and emptied by the provider (user CQ) or by poll_cq (kernel CQ).
 *
 * Locking:
 *  - post_lock serialises producers (sroce_cq_post()) and protects producer
 *    and overflowed.  Posters run in softirq and in process context, and a
 *    kernel consumer may poll or arm from any context, hard interrupts
 *    included (nothing in the ib_poll_cq() contract excludes it), so both
 *    locks are taken with interrupts disabled.
 *  - poll_lock serialises kernel consumers (poll_cq) and protects consumer.
 *    A user CQ's consumer is the provider's business.
 *  - The arm bits in the shared flags word are changed only by atomic
 *    read-modify-write operations, by the consumer (arming) and by posters
 *    under post_lock (disarming).  A kernel consumer arms under poll_lock.
 *  - queue (the ring itself) changes only in resize_cq, with resize_mutex,
 *    poll_lock and post_lock held: a holder of either spinlock sees one
 *    ring throughout.  resize_mutex serialises resizes (uverbs holds the
 *    CQ only for reading, so two threads may resize it at once).
 *  - Lock order: resize_mutex > poll_lock > post_lock.
 */
struct sroce_cq {
	struct ib_cq ibcq;
	struct sroce_queue queue;
	spinlock_t post_lock;		/* posters; see above */
	u32 producer;			/* next CQE the kernel writes */
	bool overflowed;		/* the ring was full: CQ in error */
	spinlock_t poll_lock;		/* kernel consumers; see above */
	u32 consumer;			/* kernel CQ: next CQE poll_cq reads */
	u32 cqn;
	bool user;			/* mapped by a provider */
	bool timestamp;			/* stamp CQEs (sroce-abi.h) */
	struct mutex resize_mutex;	/* resizes; see above */
};

static inline struct sroce_cq *to_sroce_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited);
void sroce_cq_discard_qp(struct sroce_cq *cq, u32 qpn);

extern const struct ib_device_ops sroce_cq_ops;

#endif /* SROCE_CQ_H */
