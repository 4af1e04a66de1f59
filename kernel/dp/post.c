// SPDX-License-Identifier: GPL-2.0
/*
 * post_send, post_recv and post_srq_recv.
 *
 * A user QP's provider writes WQEs straight into the mapped rings; the only
 * thing that reaches these ops for it is the doorbell, a POST_SEND or
 * POST_RECV command without work requests (SROCE_SQ_NEED_WAKEUP and
 * SROCE_RQ_NEED_WAKEUP in the uapi header), which runs the QP's engine in
 * the system call if nobody else is running it (kernel/dp/exec.c).
 *
 * A kernel consumer's work requests are written here into the same ring
 * format, so the engine has one input for both.  Kernel ULPs post from any
 * context, completion handlers in softirq or hard interrupt included, hence
 * the spinlock with interrupts disabled; it serialises posters, and the
 * engine reads the producer with an acquire load as it does for a provider.
 * The poster then runs the engine itself when it may (sroce_exec_post()),
 * after dropping post_lock: the engine never runs under it.
 * An SRQ's ring (kernel/obj/srq.h) takes kernel receives the same way.
 *
 * A QP attached to an SRQ has no RQ: its post_recv fails with EINVAL.
 */
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "dp/exec.h"
#include "dp/poll.h"
#include "dp/post.h"
#include "obj/ah.h"
#include "obj/qp.h"
#include "obj/srq.h"

#define SROCE_POST_SEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | \
				 IB_SEND_SOLICITED | IB_SEND_INLINE)

/* A free slot of a kernel QP's ring at its producer, or NULL if full. */
static void *sroce_post_slot(struct sroce_queue *q)
{
	u32 producer = READ_ONCE(q->hdr->producer);

	if (!sroce_ring_free(producer, sroce_queue_peer_consumer(q),
			     q->num_slots))
		return NULL;
	return sroce_queue_slot(q, producer);
}

static void sroce_post_sges(struct sroce_sge *sge, const struct ib_sge *sg,
			    int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		sge[i].addr = sg[i].addr;
		sge[i].length = sg[i].length;
		sge[i].lkey = sg[i].lkey;
	}
}

static void sroce_post_publish(struct sroce_queue *q)
{
	sroce_queue_publish_producer(q, READ_ONCE(q->hdr->producer) + 1);
}

static int sroce_post_inline(struct sroce_qp *qp, const struct ib_send_wr *wr,
			     struct sroce_send_wqe *wqe)
{
	u8 *dst = (u8 *)(wqe + 1);
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > qp->cap.max_inline_data - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		total += wr->sg_list[i].length;
	}
	wqe->inline_len = total;
	wqe->num_sge = 0;
	return 0;
}

/* A datagram names its address handle by number, as a user's WQE does. */
static int sroce_post_ud_fields(struct sroce_qp *qp,
				const struct ib_send_wr *wr,
				struct sroce_send_wqe *wqe)
{
	const struct ib_ud_wr *ud = ud_wr(wr);

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	if (!ud->ah || ud->ah->device != qp->ibqp.device)
		return -EINVAL;
	wqe->wr.ud.remote_qpn = ud->remote_qpn;
	wqe->wr.ud.remote_qkey = ud->remote_qkey;
	wqe->wr.ud.ah = to_sroce_ah(ud->ah)->ahn;
	return 0;
}

static int sroce_post_wr_fields(struct sroce_qp *qp,
				const struct ib_send_wr *wr,
				struct sroce_send_wqe *wqe)
{
	if (sroce_qp_is_ud(qp))
		return sroce_post_ud_fields(qp, wr, wqe);
	switch (wr->opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return 0;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->ex = wr->ex.invalidate_rkey;
		return 0;
	case IB_WR_REG_MR:
		wqe->wr.reg.key = reg_wr(wr)->key;
		wqe->wr.reg.access = reg_wr(wr)->access;
		return 0;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		return 0;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->wr.atomic.swap = atomic_wr(wr)->swap;
		wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Memory registration operations, executed without a packet (local.c). */
static bool sroce_post_is_local(enum ib_wr_opcode opcode)
{
	return opcode == IB_WR_LOCAL_INV || opcode == IB_WR_REG_MR;
}

static int sroce_post_send_one(struct sroce_qp *qp,
			       const struct ib_send_wr *wr)
{
	struct sroce_send_wqe *wqe = sroce_post_slot(&qp->sq);
	int err;

	if (!wqe)
		return -ENOMEM;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags & SROCE_POST_SEND_FLAGS;
	if (wr->opcode == IB_WR_SEND_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
		wqe->ex = (__force u32)wr->ex.imm_data;
	err = sroce_post_wr_fields(qp, wr, wqe);
	if (err)
		return err;
	if (sroce_post_is_local(wr->opcode)) {
		/* no payload: SGEs and the inline flag mean nothing here */
		wqe->send_flags &= ~IB_SEND_INLINE;
	} else if (wr->send_flags & IB_SEND_INLINE) {
		err = sroce_post_inline(qp, wr, wqe);
		if (err)
			return err;
	} else {
		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		sroce_post_sges((struct sroce_sge *)(wqe + 1), wr->sg_list,
				wr->num_sge);
		wqe->num_sge = wr->num_sge;
	}
	sroce_post_publish(&qp->sq);
	return 0;
}

static int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	unsigned long flags;
	int err = 0;

	/* an XRC target only receives */
	if (ibqp->qp_type == IB_QPT_XRC_TGT) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/* A user QP's WQEs travel through its rings: only doorbells come. */
	if (qp->user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		sroce_poll_doorbell(qp);
		return 0;
	}
	if (READ_ONCE(qp->state) < IB_QPS_RTS) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_post_send_one(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->post_lock, flags);
	sroce_exec_post(qp);
	return err;
}

/* One receive WR into an RQ or SRQ ring whose WQEs hold max_sge SGEs. */
static int sroce_post_recv_one(struct sroce_queue *q, u32 max_sge,
			       const struct ib_recv_wr *wr)
{
	struct sroce_recv_wqe *wqe = sroce_post_slot(q);

	if (!wqe)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > max_sge)
		return -EINVAL;
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	sroce_post_sges((struct sroce_sge *)(wqe + 1), wr->sg_list,
			wr->num_sge);
	sroce_post_publish(q);
	return 0;
}

static int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	unsigned long flags;
	int err = 0;

	/* with an SRQ, or XRC: no RQ to post to */
	if (!sroce_qp_has_rq(qp)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		sroce_exec_doorbell(qp);
		return 0;
	}
	if (READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_post_recv_one(&qp->rq, qp->cap.max_recv_sge, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->post_lock, flags);
	/* receives are consumed by arriving packets, except in ERR */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		sroce_exec_post(qp);
	return err;
}

/*
 * A kernel SRQ's receives; any context.  A user SRQ's provider writes its
 * ring directly and has no reason to come here.  An SRQ needs no doorbell:
 * its WQEs are taken when messages arrive.
 */
static int sroce_post_srq_recv(struct ib_srq *ibsrq,
			       const struct ib_recv_wr *wr,
			       const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->user) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_post_recv_one(&srq->rq, srq->max_sge, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}

/* kernel/device.c registers these next to the objects' own ops. */
const struct ib_device_ops sroce_post_ops = {
	.post_send = sroce_post_send,
	.post_recv = sroce_post_recv,
	.post_srq_recv = sroce_post_srq_recv,
};
