// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sroce provider: posting work requests into a QP's rings and into an
 * SRQ's ring.  The SQ slot writers (wq.h) are shared with the extended
 * post API of qp_ex.c.
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
 * accepted: the kernel flushes what an errored QP cannot execute.  A queue
 * the QP has not got (the RQ of a QP with an SRQ or of an XRC send QP,
 * either queue of an XRC receive QP) refuses every WR with EINVAL.  An XRC
 * send QP takes what an RC QP takes, and each of its slots names the XRC
 * SRQ at the target (xrc_srqn); other QPs leave that 0.
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
#include "wq.h"

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

/* -- Send queue: slots (wq.h) --------------------------------------------- */

bool sroce_sq_open(enum ibv_qp_state state)
{
	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

struct sroce_send_wqe *sroce_sq_take(struct sroce_qp *qp, uint32_t *room)
{
	struct sroce_send_wqe *wqe;

	if (!sroce_wq_reserve(&qp->sq, room))
		return NULL;
	wqe = (struct sroce_send_wqe *)sroce_wq_slot(&qp->sq, qp->sq.producer);
	qp->sq.producer++;
	memset(wqe, 0, sizeof(*wqe));
	return wqe;
}

void sroce_sq_untake(struct sroce_qp *qp, uint32_t *room)
{
	qp->sq.producer--;
	(*room)++;
}

void sroce_sq_rewind(struct sroce_qp *qp, uint32_t start)
{
	qp->sq.producer = start;
}

void sroce_sq_set_op(struct sroce_send_wqe *wqe, uint64_t wr_id,
		     uint32_t opcode, unsigned int send_flags)
{
	wqe->wr_id = wr_id;
	wqe->opcode = opcode;
	/* INLINE says where the data is; the data setters decide that */
	wqe->send_flags = send_flags & SROCE_SEND_FLAGS & ~IBV_SEND_INLINE;
}

void sroce_sq_set_ex(struct sroce_send_wqe *wqe, uint32_t ex)
{
	wqe->ex = ex;
}

void sroce_sq_set_rdma(struct sroce_send_wqe *wqe, uint32_t rkey,
		       uint64_t remote_addr)
{
	wqe->wr.rdma.remote_addr = remote_addr;
	wqe->wr.rdma.rkey = rkey;
}

void sroce_sq_set_atomic(struct sroce_send_wqe *wqe, uint32_t rkey,
			 uint64_t remote_addr, uint64_t compare_add,
			 uint64_t swap)
{
	wqe->wr.atomic.remote_addr = remote_addr;
	wqe->wr.atomic.compare_add = compare_add;
	wqe->wr.atomic.swap = swap;
	wqe->wr.atomic.rkey = rkey;
}

void sroce_sq_set_ud(struct sroce_send_wqe *wqe, uint32_t ahn,
		     uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->wr.ud.remote_qpn = remote_qpn;
	wqe->wr.ud.remote_qkey = remote_qkey;
	wqe->wr.ud.ah = ahn;
}

void sroce_sq_set_xrc(struct sroce_send_wqe *wqe, uint32_t remote_srqn)
{
	wqe->xrc_srqn = remote_srqn;
}

void sroce_sq_clear_data(struct sroce_send_wqe *wqe)
{
	wqe->num_sge = 0;
	wqe->inline_len = 0;
	wqe->send_flags &= ~IBV_SEND_INLINE;
}

int sroce_sq_put_sges(const struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		      const struct ibv_sge *sg, size_t num_sge)
{
	if (num_sge > qp->sq.max_sge)
		return EINVAL;
	sroce_sq_clear_data(wqe);
	sroce_wq_put_sges((char *)(wqe + 1), sg, (int)num_sge);
	wqe->num_sge = (uint32_t)num_sge;
	return 0;
}

/* The slot was checked to hold max_inline_data bytes after its header. */
int sroce_sq_put_inline(const struct sroce_qp *qp,
			struct sroce_send_wqe *wqe, const void *addr,
			size_t len)
{
	if (len > qp->max_inline_data - wqe->inline_len)
		return EINVAL;
	if (len)
		memcpy((char *)(wqe + 1) + wqe->inline_len, addr, len);
	wqe->num_sge = 0;
	wqe->inline_len += (uint32_t)len;
	wqe->send_flags |= IBV_SEND_INLINE;
	return 0;
}

/* The payload a written slot carries: inline bytes or its SGEs' sum. */
static uint64_t sroce_sq_data_len(const struct sroce_send_wqe *wqe)
{
	struct sroce_sge sge;
	uint64_t len = 0;
	uint32_t i;

	if (wqe->send_flags & IBV_SEND_INLINE)
		return wqe->inline_len;
	for (i = 0; i < wqe->num_sge; i++) {
		memcpy(&sge, (const char *)(wqe + 1) + i * sizeof(sge),
		       sizeof(sge));
		len += sge.length;
	}
	return len;
}

bool sroce_sq_is_local(uint32_t opcode)
{
	return opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV;
}

/*
 * RC and XRC send QPs carry every operation, UC SENDs, WRITEs and local
 * operations, UD only SENDs.
 */
static bool sroce_sq_type_allows(enum ibv_qp_type type, uint32_t opcode)
{
	if (type == IBV_QPT_UD)
		return opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM;
	if (type == IBV_QPT_UC)
		return opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM ||
		       opcode == IBV_WR_RDMA_WRITE ||
		       opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		       sroce_sq_is_local(opcode);
	return true;
}

int sroce_sq_check(const struct sroce_qp *qp, const struct sroce_send_wqe *wqe)
{
	enum ibv_qp_type type = qp->base_qp.qp.qp_type;
	bool inl = wqe->send_flags & IBV_SEND_INLINE;
	struct sroce_sge sge;

	if (!sroce_sq_type_allows(type, wqe->opcode))
		return EINVAL;
	/* a datagram needs an address handle (the kernel numbers from 1) */
	if (type == IBV_QPT_UD && !wqe->wr.ud.ah)
		return EINVAL;
	switch (wqe->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return 0;
	case IBV_WR_SEND_WITH_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND ?
			       0 : EINVAL;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		/* header only */
		return inl || wqe->num_sge ? EINVAL : 0;
	case IBV_WR_RDMA_READ:
		return inl ? EINVAL : 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* one SGE, for the 8-byte original value */
		if (inl || wqe->num_sge != 1)
			return EINVAL;
		memcpy(&sge, wqe + 1, sizeof(sge));
		return sge.length == 8 ? 0 : EINVAL;
	case IBV_WR_ATOMIC_WRITE:
		/* 8 bytes of data, inline or in SGEs */
		return sroce_sq_data_len(wqe) == 8 ? 0 : EINVAL;
	default:
		return EINVAL;
	}
}

void sroce_sq_publish(struct sroce_qp *qp)
{
	sroce_wq_publish(&qp->sq);
}

static int sroce_sq_doorbell(struct ibv_qp *ibqp)
{
	struct ibv_send_wr *bad;

	return ibv_cmd_post_send(ibqp, NULL, &bad);
}

int sroce_sq_ring(struct sroce_qp *qp)
{
	if (!sroce_wq_need_wakeup(&qp->sq, SROCE_SQ_NEED_WAKEUP))
		return 0;
	return sroce_sq_doorbell(&qp->base_qp.qp);
}

/* -- Send queue: ibv_post_send() ------------------------------------------- */

static bool sroce_send_has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

int sroce_sq_check_bind(const struct ibv_mw *mw,
			const struct ibv_mw_bind_info *info, bool type1)
{
	if (!mw || (mw->type == IBV_MW_TYPE_1) != type1)
		return EINVAL;
	if (!info->mr && (!type1 || info->length))
		return EINVAL;
	return 0;
}

void sroce_sq_set_bind(struct sroce_send_wqe *wqe, const struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	wqe->wr.bind.addr = info->addr;
	wqe->wr.bind.length = info->length;
	wqe->wr.bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	wqe->wr.bind.mw_rkey = mw->rkey;
	wqe->wr.bind.new_rkey = rkey;
	wqe->wr.bind.access = info->mw_access_flags;
}

/*
 * The remote side of the operation: a datagram's address, or wqe->wr and,
 * on an XRC send QP, the target's SRQ.
 */
static void sroce_send_remote(const struct sroce_qp *qp,
			      struct sroce_send_wqe *wqe,
			      const struct ibv_send_wr *wr)
{
	if (qp->base_qp.qp.qp_type == IBV_QPT_XRC_SEND)
		sroce_sq_set_xrc(wqe, wr->qp_type.xrc.remote_srqn);
	if (qp->base_qp.qp.qp_type == IBV_QPT_UD) {
		if (wr->wr.ud.ah)
			sroce_sq_set_ud(wqe, to_sroce_ah(wr->wr.ud.ah)->ahn,
					wr->wr.ud.remote_qpn,
					wr->wr.ud.remote_qkey);
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		sroce_sq_set_rdma(wqe, wr->wr.rdma.rkey,
				  wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		sroce_sq_set_atomic(wqe, wr->wr.atomic.rkey,
				    wr->wr.atomic.remote_addr,
				    wr->wr.atomic.compare_add,
				    wr->wr.atomic.swap);
		break;
	case IBV_WR_BIND_MW:
		sroce_sq_set_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}
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

/*
 * What can be refused before a slot is taken, so that such a WR leaves
 * the ring untouched; the opcode's rules are checked on the written slot.
 */
static int sroce_send_precheck(const struct sroce_qp *qp,
			       const struct ibv_send_wr *wr, bool type1)
{
	if (wr->opcode == IBV_WR_BIND_MW)
		return sroce_sq_check_bind(wr->bind_mw.mw,
					   &wr->bind_mw.bind_info, type1);
	if (sroce_sq_is_local(wr->opcode))
		return 0;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    sroce_send_len(wr) > qp->max_inline_data)
		return EINVAL;
	if (qp->base_qp.qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	return 0;
}

/*
 * The payload: SGEs, or an inline WR's bytes gathered from its SGEs into
 * the slot; a local operation has none.
 */
static int sroce_send_data(const struct sroce_qp *qp,
			   struct sroce_send_wqe *wqe,
			   const struct ibv_send_wr *wr)
{
	int i, ret;

	if (sroce_sq_is_local(wr->opcode))
		return 0;
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return sroce_sq_put_sges(qp, wqe, wr->sg_list,
					 (size_t)wr->num_sge);
	for (i = 0; i < wr->num_sge; i++) {
		ret = sroce_sq_put_inline(qp, wqe,
			(const void *)(uintptr_t)wr->sg_list[i].addr,
			wr->sg_list[i].length);
		if (ret)
			return ret;
	}
	/* an empty inline WR is still an inline WR */
	wqe->send_flags |= IBV_SEND_INLINE;
	return 0;
}

static int sroce_send_one(struct sroce_qp *qp, const struct ibv_send_wr *wr,
			  uint32_t *room, bool type1)
{
	struct sroce_send_wqe *wqe;
	int ret;

	ret = sroce_send_precheck(qp, wr, type1);
	if (ret)
		return ret;
	wqe = sroce_sq_take(qp, room);
	if (!wqe)
		return ENOMEM;

	sroce_sq_set_op(wqe, wr->wr_id, wr->opcode, wr->send_flags);
	if (sroce_send_has_imm(wr->opcode))
		sroce_sq_set_ex(wqe, wr->imm_data);
	else if (wr->opcode == IBV_WR_SEND_WITH_INV ||
		 wr->opcode == IBV_WR_LOCAL_INV)
		sroce_sq_set_ex(wqe, wr->invalidate_rkey);
	sroce_send_remote(qp, wqe, wr);
	ret = sroce_send_data(qp, wqe, wr);
	if (!ret)
		ret = sroce_sq_check(qp, wqe);
	if (ret)
		sroce_sq_untake(qp, room);
	return ret;
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

	sroce_wq_lock(sq);
	start = sq->producer;
	for (*err = 0; *wr; *wr = (*wr)->next) {
		*err = sroce_send_one(qp, *wr, &room, type1);
		if (*err)
			break;
	}
	posted = sq->producer != start;
	if (posted)
		sroce_sq_publish(qp);
	sroce_wq_unlock(sq);
	return posted;
}

/* type1: the WRs come from ibv_bind_mw(), for a type 1 window. */
static int sroce_post_send_wrs(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad_wr, bool type1)
{
	struct sroce_qp *qp = to_sroce_qp(ibqp);
	struct ibv_send_wr *first = wr;
	int ret, db;

	if (!qp->sq.ring || !sroce_sq_open(ibqp->state)) {
		*bad_wr = wr;
		return EINVAL;
	}

	if (!sroce_send_list(qp, &wr, &ret, type1))
		goto out;
	db = sroce_sq_ring(qp);
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

	sroce_wq_lock(rq);
	start = rq->producer;
	for (*err = 0; *wr; *wr = (*wr)->next) {
		*err = sroce_recv_one(rq, *wr, &room);
		if (*err)
			break;
	}
	posted = rq->producer != start;
	if (posted)
		sroce_wq_publish(rq);
	sroce_wq_unlock(rq);
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

	if (!qp->rq.ring || ibqp->state == IBV_QPS_RESET) {
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
