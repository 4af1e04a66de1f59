// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: posting work requests into a QP's rings and into an
 * SRQ's ring.
 *
 * A work request becomes one slot of the SQ or RQ ring (struct
 * sroce_send_wqe or struct sroce_recv_wqe, <rdma/sroce-abi.h>), written in
 * shared memory without a system call.  Local operations (BIND_MW,
 * LOCAL_INV) take a slot too, header only; the kernel executes them in SQ
 * order and checks what the provider does not (PDs, rights, ranges).
 * Posting goes:
 *  1. under the queue's lock, each WR is checked and then written into the
 *     slot at the queue's private producer counter, which advances.  The
 *     room comes from the kernel's consumer counter, read with an acquire
 *     load so that the kernel is done with a slot before it is rewritten;
 *  2. once per call, after the last slot, the producer is published with a
 *     release store, so the kernel sees the slots no later than the counter;
 *  3. then a full fence orders that store before the load of the flags,
 *     and if the queue's NEED_WAKEUP bit is set the doorbell is rung: the
 *     POST_SEND or POST_RECV command without work requests.
 * Step 3 is the provider's half of the lost-wakeup argument given with
 * SROCE_SQ_NEED_WAKEUP; it runs outside the lock, which guards only the
 * producer and the slots.
 *
 * Errors.  A WR that fails its checks (EINVAL) or finds the ring full
 * (ENOMEM) is returned in *bad_wr; the WRs before it stay posted, are
 * published and, if needed, doorbelled.  The SQ refuses WRs while the QP is
 * in RESET, INIT or RTR, the RQ while it is in RESET (EINVAL, nothing
 * posted); the state is libibverbs' ibqp->state, which ibv_modify_qp()
 * updates after a successful transition.  Later states, ERR included, are
 * accepted: the kernel flushes what an errored QP cannot execute.  A QP
 * attached to an SRQ has no RQ: ibv_post_recv() on it fails with EINVAL.
 * An SRQ's ring takes receives exactly as an RQ does, under its own lock,
 * and never needs a doorbell (the kernel reads it when a message arrives;
 * an SRQ has no error state to flush).  A failed
 * doorbell is reported with its errno and the call's first WR in *bad_wr,
 * unless a WR had already failed: the WRs are in the ring, but the kernel
 * has not been told about them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "abi.h"
#include "ring.h"
#include "sroce.h"

/* The send_flags a slot carries; the others mean nothing to sroce. */
#define SROCE_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED |	\
			  IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* -- Both queues ----------------------------------------------------------- */

static char *sroce_wq_slot(const struct sroce_wq *wq, uint32_t idx)
{
	return (char *)wq->ring +
	       sroce_ring_slot_offset(idx, wq->num_slots, wq->slot_shift,
				      SROCE_RING_SLOTS_OFFSET);
}

/*
 * Take one slot out of *room, the free slots this call has seen; only when
 * they run out is the kernel's consumer read again.
 */
static bool sroce_wq_reserve(const struct sroce_wq *wq, uint32_t *room)
{
	uint32_t consumer;

	if (!*room) {
		consumer = sroce_ring_load_acquire(&wq->ring->consumer);
		*room = sroce_ring_free(wq->producer, consumer, wq->num_slots);
	}
	if (!*room)
		return false;
	(*room)--;
	return true;
}

static void sroce_wq_publish(struct sroce_wq *wq)
{
	sroce_ring_store_release(&wq->ring->producer, wq->producer);
}

/* After publishing: has the kernel asked for a doorbell? */
static bool sroce_wq_need_wakeup(struct sroce_wq *wq, uint32_t bit)
{
	atomic_thread_fence(memory_order_seq_cst);
	return sroce_ring_flags_read(&wq->ring->flags) & bit;
}

static void sroce_wq_put_sges(char *dst, const struct ibv_sge *sg, int n)
{
	struct sroce_sge sge = {};
	int i;

	for (i = 0; i < n; i++) {
		sge.addr = sg[i].addr;
		sge.length = sg[i].length;
		sge.lkey = sg[i].lkey;
		memcpy(dst + i * sizeof(sge), &sge, sizeof(sge));
	}
}

/* -- Send queue ------------------------------------------------------------ */

static bool sroce_sq_open(enum ibv_qp_state state)
{
	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

static bool sroce_send_has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* The bytes the WR's SGEs describe: the payload of an inline WR. */
static uint64_t sroce_send_len(const struct ibv_send_wr *wr)
{
	uint64_t len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return len;
}

/* Local operations: no payload, executed by the kernel in SQ order. */
static bool sroce_send_is_local(enum ibv_wr_opcode op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

/*
 * A bind WR: type 2 windows through ibv_post_send(), type 1 windows only
 * from ibv_bind_mw() (type1 set), where a zero length without an MR
 * unbinds.  The rest (PDs, rights, range) is checked by the kernel, which
 * completes a bad bind with IBV_WC_MW_BIND_ERR.
 */
static int sroce_send_check_bind(const struct ibv_send_wr *wr, bool type1)
{
	const struct ibv_mw_bind_info *info = &wr->bind_mw.bind_info;
	const struct ibv_mw *mw = wr->bind_mw.mw;

	if (!mw || (mw->type == IBV_MW_TYPE_1) != type1)
		return EINVAL;
	if (!info->mr && (!type1 || info->length))
		return EINVAL;
	return 0;
}

/*
 * What each opcode allows; UC carries SENDs, WRITEs and local operations,
 * UD SENDs.
 */
static int sroce_send_check_op(const struct sroce_qp *qp,
			       const struct ibv_send_wr *wr, bool type1)
{
	enum ibv_qp_type type = qp->base_qp.qp.qp_type;
	bool inl = wr->send_flags & IBV_SEND_INLINE;

	if (type == IBV_QPT_UD)
		return (wr->opcode == IBV_WR_SEND ||
			wr->opcode == IBV_WR_SEND_WITH_IMM) && wr->wr.ud.ah ?
		       0 : EINVAL;
	if (type == IBV_QPT_UC && wr->opcode != IBV_WR_SEND &&
	    wr->opcode != IBV_WR_SEND_WITH_IMM &&
	    wr->opcode != IBV_WR_RDMA_WRITE &&
	    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
	    !sroce_send_is_local(wr->opcode))
		return EINVAL;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return 0;
	case IBV_WR_LOCAL_INV:
		return 0;
	case IBV_WR_BIND_MW:
		return sroce_send_check_bind(wr, type1);
	case IBV_WR_RDMA_READ:
		return inl ? EINVAL : 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* one SGE, for the 8-byte original value */
		if (inl || wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		return 0;
	default:
		return EINVAL;
	}
}

static int sroce_send_check(const struct sroce_qp *qp,
			    const struct ibv_send_wr *wr, bool type1)
{
	if (sroce_send_check_op(qp, wr, type1))
		return EINVAL;
	if (sroce_send_is_local(wr->opcode))
		return 0;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    sroce_send_len(wr) > qp->max_inline_data)
		return EINVAL;
	return 0;
}

/* The remote side of the operation: wqe->wr. */
static void sroce_send_remote(const struct sroce_qp *qp,
			      struct sroce_send_wqe *wqe,
			      const struct ibv_send_wr *wr)
{
	if (qp->base_qp.qp.qp_type == IBV_QPT_UD) {
		wqe->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		wqe->wr.ud.ah = to_sroce_ah(wr->wr.ud.ah)->ahn;
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_BIND_MW:
		wqe->wr.bind.addr = wr->bind_mw.bind_info.addr;
		wqe->wr.bind.length = wr->bind_mw.bind_info.length;
		wqe->wr.bind.mr_lkey = wr->bind_mw.bind_info.mr ?
				       wr->bind_mw.bind_info.mr->lkey : 0;
		wqe->wr.bind.mw_rkey = wr->bind_mw.mw->rkey;
		wqe->wr.bind.new_rkey = wr->bind_mw.rkey;
		wqe->wr.bind.access = wr->bind_mw.bind_info.mw_access_flags;
		break;
	default:
		break;
	}
}

static void sroce_send_hdr(const struct sroce_qp *qp,
			   struct sroce_send_wqe *wqe,
			   const struct ibv_send_wr *wr)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags & SROCE_SEND_FLAGS;
	if (sroce_send_has_imm(wr->opcode))
		wqe->ex = wr->imm_data;	/* network order, as given */
	if (wr->opcode == IBV_WR_SEND_WITH_INV ||
	    wr->opcode == IBV_WR_LOCAL_INV)
		wqe->ex = wr->invalidate_rkey;
	if (sroce_send_is_local(wr->opcode))
		wqe->send_flags &= ~IBV_SEND_INLINE;
	else if (wr->send_flags & IBV_SEND_INLINE)
		wqe->inline_len = (uint32_t)sroce_send_len(wr);
	else
		wqe->num_sge = (uint32_t)wr->num_sge;
	sroce_send_remote(qp, wqe, wr);
}

/* Gather the payload into the slot; its size was checked. */
static void sroce_send_put_inline(char *dst, const struct ibv_send_wr *wr)
{
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		uint32_t len = wr->sg_list[i].length;

		if (!len)
			continue;
		memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr, len);
		dst += len;
	}
}

/* What follows the header: inline data, SGEs, or (local operation) nothing. */
static void sroce_send_put_payload(char *dst, const struct ibv_send_wr *wr)
{
	if (sroce_send_is_local(wr->opcode))
		return;
	if (wr->send_flags & IBV_SEND_INLINE)
		sroce_send_put_inline(dst, wr);
	else
		sroce_wq_put_sges(dst, wr->sg_list, wr->num_sge);
}

static int sroce_send_one(struct sroce_qp *qp, const struct ibv_send_wr *wr,
			  uint32_t *room, bool type1)
{
	struct sroce_wq *sq = &qp->sq;
	struct sroce_send_wqe hdr;
	char *slot;
	int ret;

	ret = sroce_send_check(qp, wr, type1);
	if (ret)
		return ret;
	if (!sroce_wq_reserve(sq, room))
		return ENOMEM;

	slot = sroce_wq_slot(sq, sq->producer);
	sroce_send_hdr(qp, &hdr, wr);
	memcpy(slot, &hdr, sizeof(hdr));
	sroce_send_put_payload(slot + sizeof(hdr), wr);
	sq->producer++;
	return 0;
}

/*
 * Post WRs from *wr on and publish them; *wr is left at the failing WR.
 * Returns whether anything was posted, the error in *err.
 */
static bool sroce_send_list(struct sroce_qp *qp, struct ibv_send_wr **wr,
			    int *err, bool type1)
{
	struct sroce_wq *sq = &qp->sq;
	uint32_t room = 0, start;
	bool posted;

	pthread_spin_lock(&sq->lock);
	start = sq->producer;
	for (*err = 0; *wr; *wr = (*wr)->next) {
		*err = sroce_send_one(qp, *wr, &room, type1);
		if (*err)
			break;
	}
	posted = sq->producer != start;
	if (posted)
		sroce_wq_publish(sq);
	pthread_spin_unlock(&sq->lock);
	return posted;
}

static int sroce_sq_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_send_wr *bad;

	return ibv_cmd_post_send(ibqp, NULL, &bad);
}

/* type1: the WRs come from ibv_bind_mw(), for a type 1 window. */
static int sroce_post_send_wrs(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad_wr, bool type1)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct ibv_send_wr *first = wr;
	int ret, db;

	if (!sroce_sq_open(ibqp->state)) {
		*bad_wr = wr;
		return EINVAL;
	}

	if (!sroce_send_list(qp, &wr, &ret, type1))
		goto out;
	if (!sroce_wq_need_wakeup(&qp->sq, SROCE_SQ_NEED_WAKEUP))
		goto out;
	db = sroce_sq_doorbell(ibqp);
	if (db && !ret) {
		wr = first;
		ret = db;
	}
out:
	if (ret)
		*bad_wr = wr;
	return ret;
}

int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	return sroce_post_send_wrs(ibqp, wr, bad_wr, false);
}

/* The bind WR of ibv_bind_mw() (mw.c). */
int sroce_post_bind_type1(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad_wr)
{
	return sroce_post_send_wrs(ibqp, wr, bad_wr, true);
}

/* -- Receive queue --------------------------------------------------------- */

/* One receive WR into an RQ or SRQ ring. */
static int sroce_recv_one(struct sroce_wq *rq, const struct ibv_recv_wr *wr,
			  uint32_t *room)
{
	struct sroce_recv_wqe hdr = {};
	char *slot;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge)
		return EINVAL;
	if (!sroce_wq_reserve(rq, room))
		return ENOMEM;

	slot = sroce_wq_slot(rq, rq->producer);
	hdr.wr_id = wr->wr_id;
	hdr.num_sge = (uint32_t)wr->num_sge;
	memcpy(slot, &hdr, sizeof(hdr));
	sroce_wq_put_sges(slot + sizeof(hdr), wr->sg_list, wr->num_sge);
	rq->producer++;
	return 0;
}

/* As sroce_send_list(), for an RQ or SRQ. */
static bool sroce_recv_list(struct sroce_wq *rq, struct ibv_recv_wr **wr,
			    int *err)
{
	uint32_t room = 0, start;
	bool posted;

	pthread_spin_lock(&rq->lock);
	start = rq->producer;
	for (*err = 0; *wr; *wr = (*wr)->next) {
		*err = sroce_recv_one(rq, *wr, &room);
		if (*err)
			break;
	}
	posted = rq->producer != start;
	if (posted)
		sroce_wq_publish(rq);
	pthread_spin_unlock(&rq->lock);
	return posted;
}

static int sroce_rq_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_recv_wr *bad;

	return ibv_cmd_post_recv(ibqp, NULL, &bad);
}

/* The RQ's doorbell is wanted only in the error state (the kernel flushes). */
int sroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct ibv_recv_wr *first = wr;
	int ret, db;

	if (ibqp->state == IBV_QPS_RESET || ibqp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}

	if (!sroce_recv_list(&qp->rq, &wr, &ret))
		goto out;
	if (!sroce_wq_need_wakeup(&qp->rq, SROCE_RQ_NEED_WAKEUP))
		goto out;
	db = sroce_rq_doorbell(ibqp);
	if (db && !ret) {
		wr = first;
		ret = db;
	}
out:
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* -- Shared receive queue -------------------------------------------------- */

int sroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_sroce_srq(ibsrq);
	int ret;

	sroce_recv_list(&srq->rq, &wr, &ret);
	if (ret)
		*bad_wr = wr;
	return ret;
}
