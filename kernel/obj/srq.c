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
 * written back.  Basic and XRC SRQs exist; tag-matching SRQs fail with
 * EOPNOTSUPP.
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
 * Resize.  modify_srq with IB_SRQ_MAX_WR puts a new ring of at least
 * max_wr slots (same slot size) in place of the old one; the WQEs posted
 * and not yet taken move over in order, at the same counter values, so
 * consumers and the producer carry on where they were.  The copy is done
 * in two parts, as for a CQ (kernel/obj/cq.c): most of it with no lock
 * held, then the rest and the swap with every consumer and kernel poster
 * locked out (see kernel/obj/srq.h).  More WQEs posted than max_wr, a
 * max_wr of 0 or above max_srq_wr, or (with IB_SRQ_LIMIT in the same call)
 * a limit above the new capacity fail with EINVAL and change nothing.  A
 * user SRQ's new ring is described through the address its provider put in
 * the request (struct sroce_modify_srq_cmd); the old ring's memory goes
 * when the provider unmaps it, and the kernel never reads it again.
 *
 * Lifetime.  ib_core refuses to destroy an SRQ while QPs use it (EBUSY),
 * and a QP's destruction stops its engine first, so nothing takes from an
 * SRQ being destroyed.
 *
 * XRC (IBTA Annex A14).  An XRC SRQ belongs to an XRC domain and has a CQ
 * of its own; no QP is created with it.  Every XRC request names one by
 * number, and the target QP's engine looks it up per packet with
 * sroce_srq_get_xrc(), in any context: xsrq_xa maps the number to the
 * SRQ, which counts its lookups in ref.  Destroy removes the entry, drops
 * the entry's reference and waits for the lookups (they last one packet),
 * then for an RCU grace period: a lookup that loaded the pointer before the
 * removal may still be about to try refcount_inc_not_zero() on it, and
 * ib_core frees the SRQ as soon as destroy returns.  A target QP that took
 * a WQE for a message of several packets knows the SRQ by number and
 * serial (the number is reused, the serial never), so a message whose SRQ
 * was destroyed under it is not completed into another one.
 */
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>	/* rdma_udata_to_drv_context() */

#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/srq.h"
#include "verbs.h"

static_assert(sizeof(struct sroce_create_srq_resp) == 24);
static_assert(sizeof(struct sroce_modify_srq_cmd) == 8);
/* The largest slot fits the ring code's limit of 4 KiB. */
static_assert(sizeof(struct sroce_recv_wqe) +
	      SROCE_MAX_SRQ_SGE * sizeof(struct sroce_sge) <= 4096);

/* SRQ serials, never reused: see the head of the file. */
static atomic64_t sroce_srq_serials = ATOMIC64_INIT(0);

static int sroce_srq_check_init(const struct ib_srq_init_attr *init)
{
	const struct ib_srq_attr *attr = &init->attr;

	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	/* ib_core sets both up for an XRC SRQ; a kernel caller may not */
	if (init->srq_type == IB_SRQT_XRC &&
	    (!init->ext.cq || !init->ext.xrc.xrcd))
		return -EINVAL;
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
	srq->serial = atomic64_inc_return(&sroce_srq_serials);
	srq->user = udata;
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	mutex_init(&srq->resize_mutex);

	sroce_srq_size(&init->attr, &slots, &shift);
	err = sroce_queue_init(&srq->rq, slots, shift, uctx);
	if (err)
		goto err_free_srqn;
	srq->max_sge = init->attr.max_sge;
	srq->slot_shift = shift;

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
	if (init->srq_type == IB_SRQT_XRC) {
		ibsrq->ext.xrc.srq_num = srqn;
		/* published last: a lookup never sees a half-built SRQ */
		err = xa_err(xa_store(&sdev->xsrq_xa, srqn, srq, GFP_KERNEL));
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

/**
 * sroce_srq_get_xrc - find an XRC SRQ of an XRC domain by number
 * @sdev: the device
 * @srqn: the number an XRC request names
 * @xrcd: the domain of the target QP the request arrived at
 *
 * Callable from any context.  The caller must not sleep before
 * sroce_srq_put(): destroy waits for it.
 *
 * Return: the SRQ, referenced, or NULL if @srqn names no XRC SRQ of @xrcd.
 */
struct sroce_srq *sroce_srq_get_xrc(struct sroce_dev *sdev, u32 srqn,
				    struct ib_xrcd *xrcd)
{
	struct sroce_srq *srq;

	rcu_read_lock();
	srq = xa_load(&sdev->xsrq_xa, srqn);
	if (srq && (srq->ibsrq.ext.xrc.xrcd != xrcd ||
		    !refcount_inc_not_zero(&srq->ref)))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}

/* The XRC lookups, cut off and waited for; see the head of the file. */
static void sroce_srq_unpublish(struct sroce_dev *sdev, struct sroce_srq *srq)
{
	xa_erase(&sdev->xsrq_xa, srq->srqn);
	sroce_srq_put(srq);
	wait_for_completion(&srq->released);
	synchronize_rcu();
}

/* ib_core has checked that no QP uses the SRQ (see the top of the file). */
static int sroce_srq_destroy(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibsrq->device);
	struct sroce_srq *srq = to_sroce_srq(ibsrq);

	if (ibsrq->srq_type == IB_SRQT_XRC)
		sroce_srq_unpublish(sdev, srq);
	sroce_queue_cleanup(&srq->rq);
	ida_free(&sdev->srq_ida, srq->srqn);
	mutex_destroy(&srq->resize_mutex);
	sroce_obj_put(SROCE_OBJ_SRQ);
	return 0;
}

/*
 * The producer of the ring in force, read once: the provider's (anything;
 * the caller checks it) or the kernel posters'.  Caller holds lock.
 */
static u32 sroce_srq_producer(struct sroce_srq *srq)
{
	lockdep_assert_held(&srq->lock);
	/* acquire: the slots are read after the producer that covers them */
	return sroce_queue_peer_producer(&srq->rq);
}

/* Copy WQEs [from, to) of the ring in force into @q, at the same counters. */
static void sroce_srq_copy(struct sroce_srq *srq, struct sroce_queue *q,
			   u32 from, u32 to)
{
	for (; from != to; from++)
		memcpy(sroce_queue_slot(q, from),
		       sroce_queue_slot(&srq->rq, from), BIT(q->slot_shift));
}

/*
 * The first, lock-free part of a resize: copy the WQEs posted now into @q
 * and return the producer copied up to.  The slots of [cons, producer)
 * are not written while the copy runs: a producer only fills slots the
 * consumers have freed (a user SRQ's provider does not post at all
 * meanwhile).  Those taken meanwhile may be refilled, so some copies may be
 * stale; sroce_srq_swap() keeps only the WQEs still not taken when it holds
 * the locks, which this copied intact, and copies the rest.  The ring in
 * force cannot change under the copy: only a resize changes it.
 */
static int sroce_srq_copy_bulk(struct sroce_srq *srq, struct sroce_queue *q,
			       u32 *copied)
{
	u32 cons, prod;

	lockdep_assert_held(&srq->resize_mutex);
	spin_lock_bh(&srq->lock);
	cons = srq->cons;
	prod = sroce_srq_producer(srq);
	spin_unlock_bh(&srq->lock);
	if (!sroce_ring_valid(prod, cons, srq->rq.num_slots))
		return -EINVAL;
	sroce_srq_copy(srq, q, cons, prod);
	*copied = prod;
	return 0;
}

/*
 * Whether the WQEs not yet taken, up to @prod, fit @attr->max_wr, and the
 * limit (if @mask sets it) a ring of @new_slots.  Called with srq->lock held.
 */
static bool sroce_srq_fits(struct sroce_srq *srq, u32 prod,
			   const struct ib_srq_attr *attr,
			   enum ib_srq_attr_mask mask, u32 new_slots)
{
	lockdep_assert_held(&srq->lock);
	return sroce_ring_valid(prod, srq->cons, srq->rq.num_slots) &&
	       prod - srq->cons <= attr->max_wr &&
	       (!(mask & IB_SRQ_LIMIT) || attr->srq_limit <= new_slots);
}

/*
 * The second part, consumers and kernel posters locked out: check that the
 * WQEs not yet taken fit @max_wr and the limit (if @mask sets it) the new
 * capacity, copy what sroce_srq_copy_bulk() did not, carry the counters
 * over and make @q the ring in force; @q then holds the old ring.  The
 * producer is read once: a provider that moves it meanwhile only gets
 * its own WQEs wrong.
 */
static int sroce_srq_swap(struct sroce_srq *srq, struct sroce_queue *q,
			  u32 copied, const struct ib_srq_attr *attr,
			  enum ib_srq_attr_mask mask)
{
	struct sroce_queue *cur = &srq->rq;
	unsigned long irqflags;
	u32 prod, from;
	int err = 0;

	lockdep_assert_held(&srq->resize_mutex);
	spin_lock_bh(&srq->lock);
	spin_lock_irqsave(&srq->post_lock, irqflags);
	prod = sroce_srq_producer(srq);
	if (!sroce_srq_fits(srq, prod, attr, mask, q->num_slots)) {
		err = -EINVAL;
		goto out;
	}
	/* copied lies in [cons, prod] unless the consumers passed it since */
	from = copied - srq->cons <= prod - srq->cons ? copied : srq->cons;
	sroce_srq_copy(srq, q, from, prod);
	sroce_queue_publish_consumer(q, srq->cons);
	sroce_queue_publish_producer(q, prod);
	swap(*cur, *q);
	if (mask & IB_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
out:
	spin_unlock_irqrestore(&srq->post_lock, irqflags);
	spin_unlock_bh(&srq->lock);
	return err;
}

/*
 * A user SRQ's new ring, written to where the provider asked (the
 * MODIFY_SRQ command has no response): before the swap, which cannot be
 * undone, so that a fault leaves all as it was.
 */
static int sroce_srq_resize_resp(struct sroce_srq *srq,
				 const struct sroce_queue *q, u64 resp_addr)
{
	struct sroce_create_srq_resp resp = {
		.mmap_key = sroce_queue_mmap_key(q),
		.mmap_len = q->len,
		.srqn = srq->srqn,
		.slots = q->num_slots,
		.slot_shift = q->slot_shift,
	};

	if (copy_to_user(u64_to_user_ptr(resp_addr), &resp, sizeof(resp)))
		return -EFAULT;
	return 0;
}

/*
 * Refuse what sroce_srq_swap() would refuse as it stands now, before a
 * ring is allocated and filled for nothing; the swap checks again, since
 * the WQEs posted may change meanwhile.
 */
static int sroce_srq_resize_check(struct sroce_srq *srq,
				  const struct ib_srq_attr *attr,
				  enum ib_srq_attr_mask mask)
{
	bool fits;

	if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR)
		return -EINVAL;
	spin_lock_bh(&srq->lock);
	fits = sroce_srq_fits(srq, sroce_srq_producer(srq), attr, mask,
			      roundup_pow_of_two(attr->max_wr));
	spin_unlock_bh(&srq->lock);
	return fits ? 0 : -EINVAL;
}

/* IB_SRQ_MAX_WR, with IB_SRQ_LIMIT or not; see the top of the file. */
static int sroce_srq_resize(struct sroce_srq *srq, struct ib_srq_attr *attr,
			    enum ib_srq_attr_mask mask,
			    struct ib_ucontext *uctx, u64 resp_addr)
{
	struct sroce_queue q = {};
	u32 copied;
	int err;

	lockdep_assert_held(&srq->resize_mutex);
	err = sroce_srq_resize_check(srq, attr, mask);
	if (err)
		return err;
	err = sroce_queue_init(&q, roundup_pow_of_two(attr->max_wr),
			       srq->slot_shift, uctx);
	if (err)
		return err;
	if (uctx)
		err = sroce_srq_resize_resp(srq, &q, resp_addr);
	if (!err)
		err = sroce_srq_copy_bulk(srq, &q, &copied);
	if (!err)
		err = sroce_srq_swap(srq, &q, copied, attr, mask);
	if (!err)
		attr->max_wr = srq->rq.num_slots;
	sroce_queue_cleanup(&q);	/* the new ring, or on success the old */
	return err;
}

/*
 * The driver request: none, or struct sroce_modify_srq_cmd; bytes past it
 * must be zero.  A shorter request is taken as its prefix.
 */
static int sroce_srq_modify_cmd(struct ib_udata *udata,
				struct sroce_modify_srq_cmd *cmd)
{
	size_t len;

	if (!udata || !udata->inlen)
		return 0;
	len = min(udata->inlen, sizeof(*cmd));
	if (udata->inlen > len &&
	    !ib_is_udata_cleared(udata, len, udata->inlen - len))
		return -EOPNOTSUPP;
	return ib_copy_from_udata(cmd, udata, len);
}

static int sroce_srq_modify(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);
	struct sroce_modify_srq_cmd cmd = {};
	struct ib_ucontext *uctx = NULL;
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	err = sroce_srq_modify_cmd(udata, &cmd);
	if (err)
		return err;
	if (mask & IB_SRQ_MAX_WR && srq->user) {
		/* A provider that cannot learn the new ring: as before. */
		if (!cmd.resp_addr)
			return -EOPNOTSUPP;
		uctx = &rdma_udata_to_drv_context(udata, struct sroce_ucontext,
						  ibuc)->ibuc;
	}
	if (!(mask & (IB_SRQ_MAX_WR | IB_SRQ_LIMIT)))
		return 0;

	mutex_lock(&srq->resize_mutex);
	if (mask & IB_SRQ_MAX_WR) {
		err = sroce_srq_resize(srq, attr, mask, uctx, cmd.resp_addr);
	} else {
		spin_lock_bh(&srq->lock);
		if (attr->srq_limit > srq->rq.num_slots)
			err = -EINVAL;
		else
			srq->limit = attr->srq_limit;
		spin_unlock_bh(&srq->lock);
	}
	mutex_unlock(&srq->resize_mutex);
	return err;
}

static int sroce_srq_query(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);

	attr->max_sge = srq->max_sge;
	spin_lock_bh(&srq->lock);
	attr->max_wr = srq->rq.num_slots;
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
 * @dst: where the WQE's slot is copied; 1 << srq->slot_shift bytes
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
