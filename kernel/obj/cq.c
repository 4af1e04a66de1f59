// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues.
 *
 * A CQ is a shared ring of struct sroce_cqe (kernel/queue.h).  The data path
 * posts completions with sroce_cq_post(); a user CQ is emptied and armed by
 * the provider in userspace without system calls, a kernel CQ by poll_cq and
 * req_notify_cq below.  Both kinds use the same ring, counters and flags.
 *
 * Completion events and the lost wakeup.  A consumer arms the CQ by setting
 * an ARM bit in the shared flags word; a poster that publishes a CQE matching
 * an ARM bit clears the arm bits and calls the CQ's comp_handler (for a user
 * CQ, ib_uverbs' handler, which queues the event on the completion channel).
 * The consumer's side is: (1) atomically set the ARM bit, (2) full barrier,
 * (3) read the producer (the application polls once more after arming, and
 * IB_CQ_REPORT_MISSED_EVENTS does it here).  The poster's side is: (a)
 * release-store the producer, (b) smp_mb(), (c) read the flags.  With a full
 * barrier between the store and the load on both sides, (c) missing the arm
 * and (3) missing the CQE cannot both happen: either the poster raises the
 * event or the consumer sees the CQE, and a CQE posted after the arm always
 * raises the event.  The provider mirrors (1)-(2) with a sequentially
 * consistent fetch-or followed by a sequentially consistent fence.
 *
 * Each arming produces at most one event: the bits are cleared with one
 * atomic fetch-and-clear under post_lock, and only the poster whose
 * fetch-and-clear saw a matching bit calls the handler.
 */
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>	/* sroce_create_cq_udata() on 6.12 */

#include "core/rc.h"
#include "core/ring.h"
#include "debugfs.h"
#include "dev_limits.h"
#include "device.h"
#include "obj/cq.h"
#include "obj/qp.h"
#include "obj/trace.h"
#include "verbs.h"

#define SROCE_CQ_ARM_MASK (SROCE_CQ_ARM_NEXT | SROCE_CQ_ARM_SOLICITED)

/* A slot holds one CQE, and slots are a power of two in size. */
static_assert(sizeof(struct sroce_cqe) == 64);
static_assert(offsetof(struct sroce_cqe, ts) == 48 &&
	      offsetof(struct sroce_cqe, ts_wallclock) == 56);

static int sroce_cq_create(struct ib_cq *ibcq,
			   const struct ib_cq_init_attr *attr,
			   SROCE_CREATE_CQ_ARG *arg)
{
	struct ib_udata *udata = sroce_create_cq_udata(arg);
	struct sroce_dev *sdev = to_sroce_dev(ibcq->device);
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	struct sroce_create_cq_resp resp = {};
	struct ib_ucontext *uctx;
	int cqn, err;

	/* Only a provider can read a stamp: struct ib_wc has no field. */
	if ((attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION) ||
	    (attr->flags && !udata))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	uctx = sroce_verbs_ucontext(udata, sizeof(resp));
	if (IS_ERR(uctx))
		return PTR_ERR(uctx);

	cqn = ida_alloc_range(&sdev->cq_ida, 1, SROCE_MAX_CQ, GFP_KERNEL);
	if (cqn < 0)
		return cqn == -ENOSPC ? -ENOMEM : cqn;
	cq->cqn = cqn;
	cq->user = udata;
	cq->timestamp = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	spin_lock_init(&cq->post_lock);
	spin_lock_init(&cq->poll_lock);
	mutex_init(&cq->resize_mutex);

	err = sroce_queue_init(&cq->queue, roundup_pow_of_two(attr->cqe),
			       ilog2(sizeof(struct sroce_cqe)),
			       uctx);
	if (err)
		goto err_free_cqn;
	/* The whole ring is usable (free-running counters). */
	ibcq->cqe = cq->queue.num_slots;

	if (udata) {
		resp.mmap_key = sroce_queue_mmap_key(&cq->queue);
		resp.mmap_len = cq->queue.len;
		resp.cqn = cqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_cleanup;
	}
	sroce_obj_get(SROCE_OBJ_CQ);
	return 0;

err_cleanup:
	sroce_queue_cleanup(&cq->queue);
err_free_cqn:
	ida_free(&sdev->cq_ida, cqn);
	return err;
}

/*
 * ib_core refuses to destroy a CQ that a QP still uses, and a QP's
 * destruction waits for its data-path work, so nothing posts here any more.
 */
static int sroce_cq_destroy(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sroce_dev(ibcq->device);
	struct sroce_cq *cq = to_sroce_cq(ibcq);

	sroce_queue_cleanup(&cq->queue);
	ida_free(&sdev->cq_ida, cq->cqn);
	mutex_destroy(&cq->resize_mutex);
	sroce_obj_put(SROCE_OBJ_CQ);
	return 0;
}

/* An overrun puts the CQ in error; the owner learns it asynchronously. */
static void sroce_cq_report_overflow(struct sroce_cq *cq)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/*
 * Stamp a CQE of a timestamp CQ (sroce-abi.h): the device clock and
 * CLOCK_REALTIME at the same instant, one clock read.  Under post_lock, so
 * the stamps follow the ring order.
 */
static void sroce_cq_stamp(struct sroce_cqe *slot)
{
	ktime_t now = ktime_get();

	slot->ts = ktime_to_ns(now);
	slot->ts_wallclock = ktime_to_ns(ktime_mono_to_real(now));
}

/**
 * sroce_cq_post - publish one completion
 * @cq: the completion queue
 * @cqe: the completion, in the uapi layout (libibverbs values)
 * @solicited: the completion is for a solicited event (raises an event on a
 *	CQ armed with ARM_SOLICITED as well); a completion in error always is
 *
 * Callable from softirq and process context; concurrent posters are
 * serialised by post_lock.  A CQE is never overwritten: if the ring is
 * full, the CQ goes into error for good (SROCE_CQ_OVERFLOW, IB_EVENT_CQ_ERR
 * once) and this and every later post fail.  The comp_handler is called
 * without locks held, at most once per arming.
 *
 * Return: 0, or -ENOSPC if the CQ overflowed.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited)
{
	struct sroce_queue *q = &cq->queue;
	bool notify = false;
	struct sroce_cqe *slot;
	unsigned long irqflags;
	atomic_t *flags;
	u32 want, cons;

	/*
	 * IBTA (and ibv_req_notify_cq(3)): a completion that is not successful
	 * is solicited too.  A consumer armed for solicited events only must
	 * hear of its flushed receives: RDS on 6.12 waits for them so.
	 */
	if (cqe->status != SROCE_WC_SUCCESS)
		solicited = true;
	want = SROCE_CQ_ARM_NEXT | (solicited ? SROCE_CQ_ARM_SOLICITED : 0);

	spin_lock_irqsave(&cq->post_lock, irqflags);
	if (cq->overflowed)
		goto err_overflow;
	/* the ring in force: resize_cq swaps it under post_lock */
	flags = sroce_queue_flags(q);
	/*
	 * Acquire pairs with the consumer's release store: the slot is not
	 * overwritten before the consumer has finished copying it out.  A
	 * counter that claims more than was produced leaves no room.
	 */
	cons = sroce_queue_peer_consumer(q);
	if (!sroce_ring_free(cq->producer, cons, q->num_slots)) {
		cq->overflowed = true;
		atomic_or(SROCE_CQ_OVERFLOW, flags);
		spin_unlock_irqrestore(&cq->post_lock, irqflags);
		sroce_cq_report_overflow(cq);
		return -ENOSPC;
	}

	slot = sroce_queue_slot(q, cq->producer);
	memcpy(slot, cqe, sizeof(*cqe));
	if (cq->timestamp)
		sroce_cq_stamp(slot);
	trace_sroce_cqe(cq, cqe);
	cq->producer++;
	sroce_queue_publish_producer(q, cq->producer);

	/* (b) of the lost-wakeup argument at the top of the file. */
	smp_mb();
	if (atomic_read(flags) & want)
		notify = atomic_fetch_andnot(SROCE_CQ_ARM_MASK, flags) & want;
	spin_unlock_irqrestore(&cq->post_lock, irqflags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;

err_overflow:
	spin_unlock_irqrestore(&cq->post_lock, irqflags);
	return -ENOSPC;
}

/**
 * sroce_cq_discard_qp - drop a destroyed kernel QP's unpolled completions
 * @cq: a kernel CQ the QP used
 * @qpn: the QP's number, not yet free for reuse
 *
 * poll_cq fills wc->qp in by number, and the next create_qp takes the
 * lowest free number: a completion left behind would name the QP that gets
 * the number next.  The completions of other QPs are moved up over the
 * dropped ones, keeping their order (sroce_ring_discard(), shared with
 * the provider), and the consumer skips the freed slots.  A user CQ is left
 * alone: its ring belongs to the provider, which does the same in
 * ibv_destroy_qp().  Takes poll_lock, then post_lock (the only place
 * holding both).
 */
void sroce_cq_discard_qp(struct sroce_cq *cq, u32 qpn)
{
	struct sroce_queue *q = &cq->queue;
	unsigned long irqflags;
	u32 gone;

	if (cq->user)
		return;
	spin_lock_irqsave(&cq->poll_lock, irqflags);
	spin_lock(&cq->post_lock);
	gone = sroce_ring_discard(sroce_queue_slot(q, 0), q->num_slots,
				  q->slot_shift, cq->consumer,
				  cq->producer - cq->consumer,
				  sizeof(struct sroce_cqe),
				  offsetof(struct sroce_cqe, qp_num), qpn);
	if (gone) {
		cq->consumer += gone;
		sroce_queue_publish_consumer(q, cq->consumer);
	}
	spin_unlock(&cq->post_lock);
	spin_unlock_irqrestore(&cq->poll_lock, irqflags);
}

static int sroce_cq_wc_flags(u32 cqe_flags, u8 network_hdr_type)
{
	int flags = 0;

	if (cqe_flags & SROCE_CQE_WC_GRH)
		flags |= IB_WC_GRH;
	if (cqe_flags & SROCE_CQE_WC_WITH_IMM)
		flags |= IB_WC_WITH_IMM;
	if (cqe_flags & SROCE_CQE_WC_IP_CSUM_OK)
		flags |= IB_WC_IP_CSUM_OK;
	if (cqe_flags & SROCE_CQE_WC_WITH_INV)
		flags |= IB_WC_WITH_INVALIDATE;
	if (network_hdr_type)
		flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	return flags;
}

static void sroce_cq_to_wc(struct sroce_dev *sdev,
			   const struct sroce_cqe *cqe, struct ib_wc *wc)
{
	*wc = (struct ib_wc) {
		.wr_id = cqe->wr_id,
		/* The uapi values are the kernel's ib_wc_status/opcode. */
		.status = cqe->status,
		.opcode = cqe->opcode,
		.vendor_err = cqe->vendor_err,
		.byte_len = cqe->byte_len,
		.qp = sroce_qp_find(sdev, cqe->qp_num),
		.ex.invalidate_rkey = cqe->ex,
		.src_qp = cqe->src_qp,
		.slid = cqe->slid,
		.wc_flags = sroce_cq_wc_flags(cqe->wc_flags,
					      cqe->network_hdr_type),
		.pkey_index = cqe->pkey_index,
		.sl = cqe->sl,
		.dlid_path_bits = cqe->dlid_path_bits,
		.port_num = cqe->port_num,
		.network_hdr_type = cqe->network_hdr_type,
	};
}

/* Kernel consumers only: a user CQ's ring belongs to the provider. */
static int sroce_cq_poll(struct ib_cq *ibcq, int num_entries,
			 struct ib_wc *wc)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	struct sroce_queue *q = &cq->queue;
	unsigned long irqflags;
	u32 avail, n;

	if (cq->user)
		return -EINVAL;
	if (num_entries <= 0)
		return 0;

	spin_lock_irqsave(&cq->poll_lock, irqflags);
	/* Acquire pairs with sroce_cq_post()'s release of the producer. */
	avail = sroce_ring_used(sroce_queue_peer_producer(q), cq->consumer,
				q->num_slots);
	for (n = 0; n < (u32)num_entries && n < avail; n++)
		sroce_cq_to_wc(to_sroce_dev(ibcq->device),
			       sroce_queue_slot(q, cq->consumer + n), &wc[n]);
	if (n) {
		cq->consumer += n;
		sroce_queue_publish_consumer(q, cq->consumer);
	}
	spin_unlock_irqrestore(&cq->poll_lock, irqflags);
	return n;
}

/*
 * Kernel consumers (user CQs are armed by the provider in shared memory).
 * With IB_CQ_REPORT_MISSED_EVENTS, returns 1 if CQEs were waiting when the
 * CQ was armed: the caller polls again instead of waiting for an event
 * that may already have been skipped.
 */
static int sroce_cq_req_notify(struct ib_cq *ibcq,
			       enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	struct sroce_queue *q = &cq->queue;
	u32 arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		  SROCE_CQ_ARM_SOLICITED : SROCE_CQ_ARM_NEXT;
	unsigned long irqflags;
	bool empty;

	if (cq->user)
		return -EINVAL;

	/* poll_lock: the arm goes into the ring in force (resize_cq). */
	spin_lock_irqsave(&cq->poll_lock, irqflags);
	/* (1) and (2): a fully ordered RMW, see the top of the file. */
	atomic_fetch_or(arm, sroce_queue_flags(q));
	empty = sroce_ring_empty(sroce_queue_peer_producer(q), cq->consumer);
	spin_unlock_irqrestore(&cq->poll_lock, irqflags);
	return (flags & IB_CQ_REPORT_MISSED_EVENTS) && !empty;
}

/*
 * The consumer counter of the ring in force: the provider's, read from
 * shared memory (anything; the caller checks it), or poll_cq's.
 */
static u32 sroce_cq_consumer(struct sroce_cq *cq)
{
	return cq->user ? sroce_queue_peer_consumer(&cq->queue) : cq->consumer;
}

/* Copy CQEs [from, to) of the ring in force into @q, at the same counters. */
static void sroce_cq_copy(struct sroce_cq *cq, struct sroce_queue *q,
			  u32 from, u32 to)
{
	for (; from != to; from++)
		memcpy(sroce_queue_slot(q, from),
		       sroce_queue_slot(&cq->queue, from),
		       sizeof(struct sroce_cqe));
}

/*
 * The first, lock-free part of a user CQ's resize: copy what the ring
 * holds now into @q and return the producer copied up to.  The slots of
 * [consumer, producer) are not written while the copy runs: the producer
 * only fills slots the consumer has freed.  Those the consumer frees
 * meanwhile may be refilled, so some copies may be stale; sroce_cq_swap()
 * keeps only the CQEs still unconsumed when it holds both locks, which
 * this copied intact (a slot is refilled only after its CQE was consumed),
 * and copies the rest.  So interrupts stay off only for what arrived
 * meanwhile.
 */
static int sroce_cq_copy_bulk(struct sroce_cq *cq, struct sroce_queue *q,
			      u32 *copied)
{
	unsigned long irqflags;
	u32 cons, prod;

	lockdep_assert_held(&cq->resize_mutex);
	spin_lock_irqsave(&cq->poll_lock, irqflags);
	spin_lock(&cq->post_lock);
	cons = sroce_cq_consumer(cq);
	prod = cq->producer;
	spin_unlock(&cq->post_lock);
	spin_unlock_irqrestore(&cq->poll_lock, irqflags);
	if (!sroce_ring_valid(prod, cons, cq->queue.num_slots))
		return -EINVAL;
	sroce_cq_copy(cq, q, cons, prod);
	*copied = prod;
	return 0;
}

/*
 * The second part, with every poster and kernel poller locked out: check
 * that the unconsumed CQEs fit @cqe, copy those sroce_cq_copy_bulk() did
 * not, carry the counters and the flags (arm bits, OVERFLOW) over, and
 * make @q the ring in force.  @q then holds the old ring.
 */
static int sroce_cq_swap(struct sroce_cq *cq, struct sroce_queue *q,
			 u32 copied, u32 cqe)
{
	struct sroce_queue *cur = &cq->queue;
	unsigned long irqflags;
	u32 cons, from;
	int err = 0;

	lockdep_assert_held(&cq->resize_mutex);
	spin_lock_irqsave(&cq->poll_lock, irqflags);
	spin_lock(&cq->post_lock);
	cons = sroce_cq_consumer(cq);
	if (!sroce_ring_valid(cq->producer, cons, cur->num_slots) ||
	    cq->producer - cons > cqe) {
		err = -EINVAL;
		goto out;
	}
	/*
	 * The bulk copy covered [its consumer, copied); copied lies in
	 * [cons, producer] unless the consumer has passed it since.  (A user
	 * consumer that moved back gets zeroes for what it gave up: its loss.)
	 */
	from = cq->user && copied - cons <= cq->producer - cons ? copied : cons;
	sroce_cq_copy(cq, q, from, cq->producer);
	atomic_set(sroce_queue_flags(q), atomic_read(sroce_queue_flags(cur)));
	sroce_queue_publish_consumer(q, cons);
	sroce_queue_publish_producer(q, cq->producer);
	cq->consumer = cons;
	swap(*cur, *q);
	cq->ibcq.cqe = cur->num_slots;
out:
	spin_unlock(&cq->post_lock);
	spin_unlock_irqrestore(&cq->poll_lock, irqflags);
	return err;
}

/*
 * resize_cq, for user and kernel CQs: a new ring of at least @cqe slots
 * takes over the unconsumed CQEs in order, at the same counter values, so
 * the consumer carries on where it was.  Refused with -EINVAL if more than
 * @cqe CQEs are unconsumed, or @cqe is out of range.  A user CQ's provider
 * must not poll or arm it meanwhile (it holds its CQ lock): the consumer
 * counter is read from the old ring, and the new ring's mmap key is in the
 * response.  The old ring's memory goes when the provider unmaps it.
 */
static int sroce_cq_resize(struct ib_cq *ibcq, int cqe,
			   struct ib_udata *udata)
{
	struct sroce_cq *cq = to_sroce_cq(ibcq);
	struct sroce_create_cq_resp resp = {};
	struct sroce_queue q = {};
	struct ib_ucontext *uctx;
	u32 copied = 0;
	int err;

	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (!udata != !cq->user)
		return -EINVAL;
	uctx = sroce_verbs_ucontext(udata, sizeof(resp));
	if (IS_ERR(uctx))
		return PTR_ERR(uctx);

	mutex_lock(&cq->resize_mutex);
	err = sroce_queue_init(&q, roundup_pow_of_two(cqe),
			       ilog2(sizeof(struct sroce_cqe)), uctx);
	if (err)
		goto out_unlock;
	/* Before the swap, which cannot be undone: a fault leaves all as was. */
	if (udata) {
		resp.mmap_key = sroce_queue_mmap_key(&q);
		resp.mmap_len = q.len;
		resp.cqn = cq->cqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto out_cleanup;
	}
	/*
	 * Only a user CQ's CQEs stay in their slots until consumed; a kernel
	 * CQ's move under its locks (sroce_cq_discard_qp()), so they are all
	 * copied with the locks held.
	 */
	if (cq->user)
		err = sroce_cq_copy_bulk(cq, &q, &copied);
	if (!err)
		err = sroce_cq_swap(cq, &q, copied, cqe);
out_cleanup:
	sroce_queue_cleanup(&q);	/* the new ring, or on success the old */
out_unlock:
	mutex_unlock(&cq->resize_mutex);
	return err;
}

const struct ib_device_ops sroce_cq_ops = {
	.create_cq = sroce_cq_create,
	.destroy_cq = sroce_cq_destroy,
	.poll_cq = sroce_cq_poll,
	.req_notify_cq = sroce_cq_req_notify,
	.resize_cq = sroce_cq_resize,

	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
};
