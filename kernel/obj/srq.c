// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues (SRQ): create, modify, query, destroy, and taking
 * a WQE for a receiving QP.
 *
 * Ring.  An SRQ is one shared ring of struct sroce_recv_wqe slots
 * (kernel/queue.h), sized and laid out as a QP's RQ: a user SRQ's ring is
 * mapped by the provider, which produces WQEs into it without system
 * calls; a kernel SRQ's ring is written by post_srq_recv (kernel/dp/post.c).
 * The capacity and SGE count are rounded up to what the slots hold and
 * written back.  Only basic SRQs exist: XRC and tag-matching SRQs fail
 * with EOPNOTSUPP, and so does resizing (IB_SRQ_MAX_WR in modify_srq).
 *
 * Consumers.  Every QP created with the SRQ takes its receive WQEs from
 * here (sroce_srq_take(), called by the responder through
 * sroce_resp_take_rwqe()).  The QPs' engines run concurrently, in softirq
 * too, so the consumer counter is guarded by srq->lock, taken with BHs off
 * (see kernel/srq.h).  A WQE
 * belongs to the QP that took it from then on: that QP completes it,
 * flushes it in the error state, and the SRQ forgets it.  WQEs still in
 * the SRQ are never flushed by a QP, they wait for the next QP that
 * receives; destroying the SRQ discards them without completions.
 *
 * Limit.  modify_srq with IB_SRQ_LIMIT arms the SRQ with a limit (at most
 * the capacity, else EINVAL; 0 disarms).  When a QP takes a WQE and fewer
 * than limit WQEs remain posted, IB_EVENT_SRQ_LIMIT_REACHED goes to the
 * SRQ's event handler once and the SRQ is disarmed (IBA 10.2.9.4.1).  The
 * srq_limit given at creation is ignored, as the verbs specify.
 *
 * Lifetime.  ib_core refuses to destroy an SRQ while QPs use it (EBUSY),
 * and a QP's destruction stops its engine first, so nothing takes from an
 * SRQ being destroyed.
 */
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/srq.h"
#include "verbs.h"

static_assert(sizeof(struct sroce_create_srq_resp) == 24);
/* The largest slot fits the ring code's limit of 4 KiB. */
static_assert(sizeof(struct sroce_recv_wqe) +
	      SROCE_MAX_SRQ_SGE * sizeof(struct sroce_sge) <= 4096);

static int sroce_srq_check_init(const struct ib_srq_init_attr *init)
{
	const struct ib_srq_attr *attr = &init->attr;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR ||
	    attr->max_sge > SROCE_MAX_SRQ_SGE)
		return -EINVAL;
	return 0;
}

/*
 * The ring for the requested capacities, which are written back as the
 * slots really hold them.  A request of no SGE still gets a slot of one.
 */
static void sroce_srq_size(struct ib_srq_attr *attr, u32 *slots, u32 *shift)
{
	size_t sge = sizeof(struct sroce_sge);
	size_t room;

	*slots = roundup_pow_of_two(attr->max_wr);
	*shift = order_base_2(sizeof(struct sroce_recv_wqe) +
			      max(attr->max_sge, 1U) * sge);
	room = BIT(*shift) - sizeof(struct sroce_recv_wqe);
	attr->max_wr = *slots;
	attr->max_sge = min_t(size_t, room / sge, SROCE_MAX_SRQ_SGE);
}

static int sroce_srq_create(struct ib_srq *ibsrq,
			    struct ib_srq_init_attr *init,
			    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibsrq->device);
	struct sroce_srq *srq = to_sroce_srq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_ucontext *uctx;
	u32 slots, shift;
	int srqn, err;

	err = sroce_srq_check_init(init);
	if (err)
		return err;
	uctx = sroce_verbs_ucontext(udata, sizeof(resp));
	if (IS_ERR(uctx))
		return PTR_ERR(uctx);

	srqn = ida_alloc_range(&sdev->srq_ida, 1, SROCE_MAX_SRQ, GFP_KERNEL);
	if (srqn < 0)
		return srqn == -ENOSPC ? -ENOMEM : srqn;
	srq->srqn = srqn;
	srq->user = udata;
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);

	sroce_srq_size(&init->attr, &slots, &shift);
	err = sroce_queue_init(&srq->rq, slots, shift, uctx);
	if (err)
		goto err_free_srqn;
	srq->max_sge = init->attr.max_sge;

	if (udata) {
		resp.mmap_key = sroce_queue_mmap_key(&srq->rq);
		resp.mmap_len = srq->rq.len;
		resp.srqn = srqn;
		resp.slots = slots;
		resp.slot_shift = shift;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_cleanup;
	}
	sroce_obj_get(SROCE_OBJ_SRQ);
	return 0;

err_cleanup:
	sroce_queue_cleanup(&srq->rq);
err_free_srqn:
	ida_free(&sdev->srq_ida, srqn);
	return err;
}

/* ib_core has checked that no QP uses the SRQ (see the top of the file). */
static int sroce_srq_destroy(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibsrq->device);
	struct sroce_srq *srq = to_sroce_srq(ibsrq);

	sroce_queue_cleanup(&srq->rq);
	ida_free(&sdev->srq_ida, srq->srqn);
	sroce_obj_put(SROCE_OBJ_SRQ);
	return 0;
}

static int sroce_srq_modify(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	/* No request fields are defined: refuse any we would ignore. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	/* Resizing would move the ring under the provider's mapping. */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->rq.num_slots)
		return -EINVAL;

	spin_lock_bh(&srq->lock);
	srq->limit = attr->srq_limit;
	spin_unlock_bh(&srq->lock);
	return 0;
}

static int sroce_srq_query(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);

	attr->max_wr = srq->rq.num_slots;
	attr->max_sge = srq->max_sge;
	spin_lock_bh(&srq->lock);
	attr->srq_limit = srq->limit;
	spin_unlock_bh(&srq->lock);
	return 0;
}

static void sroce_srq_limit_reached(struct sroce_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/**
 * sroce_srq_take - take the next receive WQE for a receiving QP
 * @srq: the SRQ the QP is attached to
 * @dst: where the WQE's slot is copied; 1 << srq->rq.slot_shift bytes
 *
 * A QP's engine (softirq or process context, its exec_lock held).  The
 * limit event's handler is called from there, as an interrupt would; it
 * must not sleep.  The copy is private: the provider may
 * reuse the slot as soon as the consumer counter is published.  If the
 * SRQ is armed and fewer WQEs than its limit remain, the limit event is
 * raised (without locks held) and the SRQ disarmed.
 *
 * Return: true if a WQE was taken, false if none is posted.
 */
bool sroce_srq_take(struct sroce_srq *srq, struct sroce_recv_wqe *dst)
{
	struct sroce_queue *q = &srq->rq;
	bool reached = false;
	u32 used;

	spin_lock_bh(&srq->lock);
	/* acquire: the slot is read after the producer that covers it */
	used = sroce_ring_used(sroce_queue_peer_producer(q), srq->cons,
			       q->num_slots);
	if (!used) {
		spin_unlock_bh(&srq->lock);
		return false;
	}
	memcpy(dst, sroce_queue_slot(q, srq->cons), BIT(q->slot_shift));
	srq->cons++;
	/* release: the copy is done before the slot may be reused */
	sroce_queue_publish_consumer(q, srq->cons);
	if (srq->limit && used - 1 < srq->limit) {
		srq->limit = 0;
		reached = true;
	}
	spin_unlock_bh(&srq->lock);

	if (reached)
		sroce_srq_limit_reached(srq);
	return true;
}

const struct ib_device_ops sroce_srq_ops = {
	.create_srq = sroce_srq_create,
	.modify_srq = sroce_srq_modify,
	.query_srq = sroce_srq_query,
	.destroy_srq = sroce_srq_destroy,

	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
};
