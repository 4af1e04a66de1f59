// SPDX-License-Identifier: GPL-2.0
/*
 * Requester: turns send WQEs into request packets (RC, UC and UD).
 *
 * WQEs are copied out of the SQ ring when fetched (sroce_req_fetch()), so
 * a provider rewriting a slot later cannot change a message half-way; the
 * copy is checked once and the engine reads only the copy.  PSNs are given
 * to a WQE at fetch time, one per packet (an RDMA READ takes one per
 * response packet).
 *
 * Flow control: at most SROCE_REQ_WINDOW PSNs are outstanding, at most
 * max_rd_atomic READ/atomic WQEs are in flight, and a fenced WQE waits for
 * every earlier READ/atomic to complete.  Recovery is go-back-N:
 * sroce_req_rewind() restarts transmission at a PSN, in the middle of a
 * message if need be (a READ is requested again for its missing part).
 * The transport timer runs while PSNs are outstanding and is restarted by
 * every acknowledgment that makes progress (kernel/dp/comp.c), lazily
 * (sroce_req_restart_timer()).
 *
 * UC and UD send the same way without acknowledgments: a WQE is done once
 * its last packet is out, so una follows the packets and the WQE retires
 * at once.  A UD WQE is one datagram of at most the port's MTU, to the
 * address handle it names, which the WQE holds from fetch to retirement.
 */
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "core/crc32.h"
#include "core/uc.h"

#include "device.h"
#include "dp/comp.h"
#include "dp/exec.h"
#include "dp/local.h"
#include "dp/req.h"
#include "dp/sgl.h"
#include "dp/tx.h"
#include "obj/ah.h"
#include "obj/qp.h"

#define SROCE_REQ_WINDOW	256	/* outstanding PSNs */
#define SROCE_REQ_ACK_EVERY	64	/* AckReq at least this often */

struct sroce_send_wqe *sroce_req_wqe(struct sroce_qp *qp, u32 idx)
{
	u32 slot = sroce_ring_slot(idx, qp->sq.num_slots);

	return qp->sq_copy + ((size_t)slot << qp->sq.slot_shift);
}

struct sroce_swqe *sroce_req_swqe(struct sroce_qp *qp, u32 idx)
{
	return &qp->swqe[sroce_ring_slot(idx, qp->sq.num_slots)];
}

bool sroce_req_is_rd_atomic(const struct sroce_swqe *w)
{
	/* FLUSH and ATOMIC WRITE are answered like a READ (IBTA A19) */
	return w->msg == SROCE_RC_MSG_READ || w->msg == SROCE_RC_MSG_CMP_SWAP ||
	       w->msg == SROCE_RC_MSG_FETCH_ADD ||
	       w->msg == SROCE_RC_MSG_FLUSH ||
	       w->msg == SROCE_RC_MSG_ATOMIC_WRITE;
}

static void sroce_req_retrans_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, req.retrans_timer);

	sroce_exec_event(qp, SROCE_EXEC_TIMEOUT);
}

static void sroce_req_rnr_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, req.rnr_timer);

	sroce_exec_event(qp, SROCE_EXEC_RNR);
}

/* The copies are as large as the SQ ring: charged as it is (sroce_obj_gfp). */
int sroce_req_init(struct sroce_qp *qp)
{
	gfp_t gfp = sroce_obj_gfp(qp->user);

	qp->sq_copy = kvmalloc((size_t)qp->sq.num_slots << qp->sq.slot_shift,
			       gfp);
	if (!qp->sq_copy)
		return -ENOMEM;
	qp->swqe = kvcalloc(qp->sq.num_slots, sizeof(*qp->swqe), gfp);
	if (!qp->swqe) {
		kvfree(qp->sq_copy);
		return -ENOMEM;
	}
	timer_setup(&qp->req.retrans_timer, sroce_req_retrans_timer, 0);
	timer_setup(&qp->req.rnr_timer, sroce_req_rnr_timer, 0);
	return 0;
}

/*
 * Drop what the fetched WQEs not yet retired hold (a UD WQE's address
 * handle destination, and through it a GID attribute).
 */
static void sroce_req_release_fetched(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	u32 i;

	for (i = req->comp; i != req->fetched; i++)
		sroce_req_release(sroce_req_swqe(qp, i));
}

/*
 * destroy_qp, the engine stopped for good: WQEs fetched but never sent or
 * completed (a blocked transmit, a QP destroyed in RTS) still hold their
 * destinations.  Also the unwinding of a failed create, where none is.
 */
void sroce_req_cleanup(struct sroce_qp *qp)
{
	sroce_req_release_fetched(qp);
	kvfree(qp->swqe);
	kvfree(qp->sq_copy);
}

/* Timer callbacks only set a bit and queue the work: no sync needed. */
void sroce_req_stop_timers(struct sroce_qp *qp)
{
	del_timer(&qp->req.retrans_timer);
	del_timer(&qp->req.rnr_timer);
	qp->req.rnr_wait = false;
}

/* destroy_qp: SROCE_EXEC_DYING is set, so a running callback is harmless. */
void sroce_req_shutdown_timers(struct sroce_qp *qp)
{
	del_timer_sync(&qp->req.retrans_timer);
	del_timer_sync(&qp->req.rnr_timer);
}

/* The WQE is done with: drop what it holds. */
void sroce_req_release(struct sroce_swqe *w)
{
	if (w->dest) {
		sroce_ah_put(w->dest);
		w->dest = NULL;
	}
}

/* RESET: forget every WQE posted so far, without completions. */
void sroce_req_reset(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	u32 producer = sroce_queue_peer_producer(&qp->sq);

	lockdep_assert_held(&qp->exec_lock);
	sroce_req_release_fetched(qp);
	if (!sroce_ring_valid(producer, req->comp, qp->sq.num_slots))
		producer = req->comp;
	req->comp = producer;
	req->fetched = producer;
	req->cur = producer;
	req->cur_off = 0;
	req->rd_atomic = 0;
	req->rnr_wait = false;
	req->draining = false;
	sroce_queue_publish_consumer(&qp->sq, producer);
}

static void sroce_req_load_limits(struct sroce_qp *qp)
{
	u64 us = sroce_rc_timeout_us(qp->timeout);

	qp->req.retry_left = qp->retry_cnt;
	qp->req.rnr_left = qp->rnr_retry;
	qp->req.backoff = 0;
	qp->req.timeout_jiffies = us ? max(usecs_to_jiffies(us), 1UL) : 0;
}

/* RTR -> RTS: the first PSN is the sq_psn just set. */
void sroce_req_start(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	lockdep_assert_held(&qp->exec_lock);
	req->psn = qp->sq_psn;
	req->psn_assign = qp->sq_psn;
	req->snd_max = qp->sq_psn;
	req->una = qp->sq_psn;
	sroce_req_load_limits(qp);
}

/* A modify in RTS (or back from SQD) may change timeout and retry counts. */
void sroce_req_update(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->exec_lock);
	sroce_req_load_limits(qp);
	qp->req.draining = false;
}

/*
 * RTS -> SQD: the messages already started are finished (retransmitted if
 * need be), no new one starts until the QP is back in RTS.  They are the
 * WQEs before the first one without a packet sent.
 */
void sroce_req_drain(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	u32 i = req->cur;

	lockdep_assert_held(&qp->exec_lock);
	while (i != req->fetched && sroce_req_swqe(qp, i)->started)
		i++;
	req->drain_end = i;
	req->draining = true;
}

/* In SQD: true, once, when every message started before SQD is retired. */
bool sroce_req_drain_done(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	lockdep_assert_held(&qp->exec_lock);
	if (!req->draining || req->comp != req->drain_end)
		return false;
	req->draining = false;
	return true;
}

/* WQEs posted but not fetched; 0 if the producer makes no sense. */
static u32 sroce_req_pending(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	u32 producer = sroce_queue_peer_producer(&qp->sq);
	u32 used = sroce_ring_used(producer, req->comp, qp->sq.num_slots);
	u32 have = req->fetched - req->comp;

	return used > have ? used - have : 0;
}

/*
 * Did a poster publish WQEs since the engine last looked at the SQ?  A
 * requester blocked by its windows has looked and will be woken by the
 * ACK or timer that unblocks it, not by new WQEs.
 */
bool sroce_req_has_new(struct sroce_qp *qp)
{
	return sroce_queue_peer_producer(&qp->sq) != qp->req.seen_producer;
}

static void sroce_req_seen(struct sroce_qp *qp)
{
	qp->req.seen_producer = sroce_queue_peer_producer(&qp->sq);
}

static int sroce_req_msg(u32 opcode, u8 *wc_opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_SEND:
		*wc_opcode = IB_UVERBS_WC_SEND;
		return SROCE_RC_MSG_SEND;
	case IB_UVERBS_WR_SEND_WITH_IMM:
		*wc_opcode = IB_UVERBS_WC_SEND;
		return SROCE_RC_MSG_SEND_IMM;
	case IB_UVERBS_WR_SEND_WITH_INV:
		*wc_opcode = IB_UVERBS_WC_SEND;
		return SROCE_RC_MSG_SEND_INV;
	case IB_UVERBS_WR_RDMA_WRITE:
		*wc_opcode = IB_UVERBS_WC_RDMA_WRITE;
		return SROCE_RC_MSG_WRITE;
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		*wc_opcode = IB_UVERBS_WC_RDMA_WRITE;
		return SROCE_RC_MSG_WRITE_IMM;
	case IB_UVERBS_WR_RDMA_READ:
		*wc_opcode = IB_UVERBS_WC_RDMA_READ;
		return SROCE_RC_MSG_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		*wc_opcode = IB_UVERBS_WC_COMP_SWAP;
		return SROCE_RC_MSG_CMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		*wc_opcode = IB_UVERBS_WC_FETCH_ADD;
		return SROCE_RC_MSG_FETCH_ADD;
	case SROCE_UVERBS_WR_FLUSH:
		*wc_opcode = SROCE_UVERBS_WC_FLUSH;
		return SROCE_RC_MSG_FLUSH;
	case SROCE_UVERBS_WR_ATOMIC_WRITE:
		*wc_opcode = SROCE_UVERBS_WC_ATOMIC_WRITE;
		return SROCE_RC_MSG_ATOMIC_WRITE;
	default:
		*wc_opcode = IB_UVERBS_WC_SEND;
		return -1;
	}
}

/* Check a copied WQE; returns the completion status it deserves. */
static enum sroce_wc_status sroce_req_check(struct sroce_qp *qp,
					    const struct sroce_send_wqe *wqe,
					    struct sroce_swqe *w)
{
	size_t room = BIT(qp->sq.slot_shift) - sizeof(*wqe);
	bool overflow;
	int msg;

	/* checked when executed, in SQ order */
	if (sroce_local_op(qp, wqe->opcode, &w->wc_opcode)) {
		w->local = true;
		return SROCE_WC_SUCCESS;
	}
	msg = sroce_req_msg(wqe->opcode, &w->wc_opcode);
	/*
	 * the transport must carry the message (UC: no READ, UD: SENDs); an
	 * XRC SRQ number is 24 bits, not to be cut short into another
	 */
	if (msg < 0 ||
	    sroce_req_opcode(sroce_qp_transport(qp), msg, true, true) == 0xff ||
	    (wqe->xrc_srqn & ~SROCE_QPN_MASK))
		return SROCE_WC_LOC_QP_OP_ERR;
	w->msg = msg;
	/* FLUSH has no payload: its length is the RETH's */
	if (msg == SROCE_RC_MSG_FLUSH) {
		w->length = 0;
		return wqe->num_sge || (wqe->send_flags & IB_SEND_INLINE) ?
		       SROCE_WC_LOC_QP_OP_ERR : SROCE_WC_SUCCESS;
	}
	if (wqe->send_flags & IB_SEND_INLINE) {
		if ((msg > SROCE_RC_MSG_WRITE_IMM &&
		     msg != SROCE_RC_MSG_ATOMIC_WRITE) ||
		    wqe->inline_len > qp->cap.max_inline_data ||
		    wqe->inline_len > room)
			return SROCE_WC_LOC_QP_OP_ERR;
		w->length = wqe->inline_len;
		goto check_len;
	}
	if (wqe->num_sge > qp->cap.max_send_sge ||
	    wqe->num_sge * sizeof(struct sroce_sge) > room)
		return SROCE_WC_LOC_QP_OP_ERR;
	w->length = sroce_sgl_length((const struct sroce_sge *)(wqe + 1),
				     wqe->num_sge, &overflow);
	if (overflow)
		return SROCE_WC_LOC_LEN_ERR;
check_len:
	/* an atomic's SGE holds the original value, an ATOMIC WRITE's data */
	if ((msg == SROCE_RC_MSG_CMP_SWAP || msg == SROCE_RC_MSG_FETCH_ADD ||
	     msg == SROCE_RC_MSG_ATOMIC_WRITE) && w->length != sizeof(u64))
		return SROCE_WC_LOC_LEN_ERR;
	return SROCE_WC_SUCCESS;
}

/*
 * A datagram: at most one packet, to an address handle of the QP's
 * protection domain, which the WQE holds from here on.
 */
static enum sroce_wc_status sroce_req_check_ud(struct sroce_qp *qp,
					       const struct sroce_send_wqe *wqe,
					       struct sroce_swqe *w)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);

	if (w->length > sroce_qp_port_mtu(qp))
		return SROCE_WC_LOC_LEN_ERR;
	w->dest = sroce_ah_get(sdev, wqe->wr.ud.ah, qp->ibqp.pd);
	return w->dest ? SROCE_WC_SUCCESS : SROCE_WC_LOC_QP_OP_ERR;
}

/* Copy the next posted WQE out of the ring; false if there is none. */
bool sroce_req_fetch(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *w;

	if (!sroce_req_pending(qp))
		return false;
	wqe = sroce_req_wqe(qp, req->fetched);
	memcpy(wqe, sroce_queue_slot(&qp->sq, req->fetched),
	       BIT(qp->sq.slot_shift));
	w = sroce_req_swqe(qp, req->fetched);
	memset(w, 0, sizeof(*w));
	w->wr_id = wqe->wr_id;
	w->signaled = (wqe->send_flags & IB_SEND_SIGNALED) ||
		      qp->sq_sig_type == IB_SIGNAL_ALL_WR;
	w->solicited = wqe->send_flags & IB_SEND_SOLICITED;
	w->fence = wqe->send_flags & IB_SEND_FENCE;
	w->status = sroce_req_check(qp, wqe, w);
	if (!w->local && w->status == SROCE_WC_SUCCESS && sroce_qp_is_ud(qp))
		w->status = sroce_req_check_ud(qp, wqe, w);
	if (w->local) {
		/* no PSNs: retires once everything before it is acknowledged */
		w->first_psn = req->psn_assign;
	} else if (w->status == SROCE_WC_SUCCESS) {
		w->npkts = w->msg == SROCE_RC_MSG_CMP_SWAP ||
			   w->msg == SROCE_RC_MSG_FETCH_ADD || w->dest ?
			   1 : sroce_rc_npkts(w->length, qp->pmtu);
		w->first_psn = req->psn_assign;
		req->psn_assign = sroce_psn_add(req->psn_assign, w->npkts);
	}
	req->fetched++;
	return true;
}

/*
 * The QP's timeout is the least a requester waits for an answer.  After
 * consecutive timeouts without progress sroce waits longer, twice and then
 * four times as long (up to 4x, as IBTA allows), so that a peer slowed
 * down by its host (a loaded hypervisor) is not declared dead after half a
 * second; progress goes back to the QP's own timeout.
 */
unsigned long sroce_req_deadline(const struct sroce_req *req)
{
	return req->timer_base + (req->timeout_jiffies << req->backoff);
}

/*
 * The transport timer is lazy: restarting it only moves timer_base, and
 * the timer is touched when it is idle or would fire too late (backoff
 * reset by progress).  A timer that fires before the deadline is armed
 * again for the rest (sroce_comp_timeout()), one that finds nothing
 * outstanding does nothing.  Every message used to cost a mod_timer()
 * when sent and a del_timer() when acknowledged, both taking the timer
 * base's lock; now a stream of messages costs about one timer operation
 * per timeout period.
 */
static void sroce_req_restart_timer(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	struct timer_list *t = &req->retrans_timer;
	unsigned long deadline;

	lockdep_assert_held(&qp->exec_lock);
	if (!req->timeout_jiffies)
		return;
	req->timer_base = jiffies;
	deadline = sroce_req_deadline(req);
	if (!timer_pending(t) || time_after(READ_ONCE(t->expires), deadline))
		mod_timer(t, deadline);
}

void sroce_req_arm_timer(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	if (req->una != req->snd_max)
		sroce_req_restart_timer(qp);
}

/* Restart transmission at psn, which lies in [una, snd_max). */
void sroce_req_rewind(struct sroce_qp *qp, u32 psn)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *w;
	u32 i, n;

	lockdep_assert_held(&qp->exec_lock);
	for (i = req->comp; i != req->fetched; i++) {
		w = sroce_req_swqe(qp, i);
		if (w->status != SROCE_WC_SUCCESS || !w->started)
			break;
		if (!sroce_psn_in_range(psn, w->first_psn, w->npkts))
			continue;
		n = sroce_psn_sub(psn, w->first_psn);
		req->cur = i;
		req->cur_off = (u64)n * qp->pmtu;
		if (req->cur_off > w->length)
			req->cur_off = w->length;
		req->psn = psn;
		return;
	}
}

/* Can the WQE at cur send its next packet now? */
static bool sroce_req_may_send(struct sroce_qp *qp, struct sroce_swqe *w)
{
	struct sroce_req *req = &qp->req;
	u32 max_rd = max_t(u32, qp->max_rd_atomic, 1);

	if (req->rnr_wait)
		return false;
	if (sroce_psn_diff(req->psn, req->una) >= SROCE_REQ_WINDOW)
		return false;
	if (w->started)
		return true;
	if (w->fence && req->rd_atomic)
		return false;
	return !sroce_req_is_rd_atomic(w) || req->rd_atomic < max_rd;
}

static void sroce_req_put_reth(struct sroce_tx *tx,
			       const struct sroce_send_wqe *wqe, u64 off,
			       u64 len)
{
	struct sroce_reth reth = {
		.va = wqe->wr.rdma.remote_addr + off,
		.rkey = wqe->wr.rdma.rkey,
		.dma_len = len,
	};

	sroce_hdr_reth_encode(sroce_tx_ext(tx, SROCE_EXT_RETH), &reth);
}

static void sroce_req_put_atomic(struct sroce_tx *tx,
				 const struct sroce_send_wqe *wqe, bool cas)
{
	struct sroce_atomic_eth ae = {
		.va = wqe->wr.atomic.remote_addr,
		.rkey = wqe->wr.atomic.rkey,
		.swap_add = cas ? wqe->wr.atomic.swap : wqe->wr.atomic.compare_add,
		.compare = cas ? wqe->wr.atomic.compare_add : 0,
	};

	sroce_hdr_atomic_eth_encode(sroce_tx_ext(tx, SROCE_EXT_ATOMIC_ETH), &ae);
}

/* FLUSH: FETH and RETH from the WQE's flush fields. */
static void sroce_req_put_flush(struct sroce_tx *tx,
				const struct sroce_send_wqe *wqe)
{
	struct sroce_feth feth = {
		.plt = wqe->wr.flush.type,
		.sel = wqe->wr.flush.level,
	};
	struct sroce_reth reth = {
		.va = wqe->wr.flush.remote_addr,
		.rkey = wqe->wr.flush.rkey,
		.dma_len = wqe->wr.flush.length,
	};

	sroce_hdr_feth_encode(sroce_tx_ext(tx, SROCE_EXT_FETH), &feth);
	sroce_hdr_reth_encode(sroce_tx_ext(tx, SROCE_EXT_RETH), &reth);
}

/* Payload bytes of the next packet and whether it ends the message. */
static u32 sroce_req_seg(struct sroce_qp *qp, struct sroce_swqe *w,
			 bool *last)
{
	u64 left = w->length - qp->req.cur_off;
	u32 len;

	/* the one answered request that carries a payload: its 8 bytes */
	if (w->msg == SROCE_RC_MSG_ATOMIC_WRITE) {
		*last = true;
		return w->length;
	}
	if (sroce_req_is_rd_atomic(w)) {
		*last = true;
		return 0;
	}
	/* a datagram is one packet of at most the port's MTU (checked) */
	if (w->dest) {
		*last = true;
		return left;
	}
	len = min_t(u64, left, qp->pmtu);
	*last = len == left;
	return len;
}

/*
 * A Q_Key with the high bit set is a controlled one, which only the QP's
 * own Q_Key may stand for (IBTA 10.2.5).
 */
static void sroce_req_put_deth(struct sroce_qp *qp, struct sroce_tx *tx,
			       const struct sroce_send_wqe *wqe)
{
	u32 qkey = wqe->wr.ud.remote_qkey;
	struct sroce_deth deth = {
		.qkey = qkey & BIT(31) ? qp->qkey : qkey,
		.src_qp = qp->ibqp.qp_num,
	};

	sroce_hdr_deth_encode(sroce_tx_ext(tx, SROCE_EXT_DETH), &deth);
}

static enum sroce_wc_status sroce_req_fill(struct sroce_qp *qp,
					   struct sroce_tx *tx,
					   const struct sroce_send_wqe *wqe,
					   struct sroce_swqe *w, u32 len)
{
	u64 off = qp->req.cur_off;
	u32 *crc;

	if (tx->op->hdrs & SROCE_HDR_DETH)
		sroce_req_put_deth(qp, tx, wqe);
	if (tx->op->hdrs & SROCE_HDR_FETH)
		sroce_req_put_flush(tx, wqe);
	else if (tx->op->hdrs & SROCE_HDR_RETH)
		sroce_req_put_reth(tx, wqe, off,
				   w->msg == SROCE_RC_MSG_READ ?
				   w->length - off : w->length);
	if (tx->op->hdrs & SROCE_HDR_ATOMIC_ETH)
		sroce_req_put_atomic(tx, wqe, w->msg == SROCE_RC_MSG_CMP_SWAP);
	if (tx->op->hdrs & SROCE_HDR_IMMDT)
		sroce_hdr_immdt_encode(sroce_tx_ext(tx, SROCE_EXT_IMMDT),
				       be32_to_cpu((__force __be32)wqe->ex));
	if (tx->op->hdrs & SROCE_HDR_IETH)
		sroce_hdr_ieth_encode(sroce_tx_ext(tx, SROCE_EXT_IETH), wqe->ex);
	if (!len)
		return SROCE_WC_SUCCESS;
	crc = sroce_tx_payload_crc(qp, tx, len);
	if (wqe->send_flags & IB_SEND_INLINE) {
		sroce_crc32_move(crc, tx->payload,
				 (const u8 *)(wqe + 1) + off, len);
		return SROCE_WC_SUCCESS;
	}
	return sroce_sgl_copy(qp, (const struct sroce_sge *)(wqe + 1),
			      wqe->num_sge, off, tx->payload, len,
			      SROCE_MR_FROM_MR, crc);
}

/* Move past the packet just built. */
static void sroce_req_advance(struct sroce_qp *qp, struct sroce_swqe *w,
			      u32 len, bool last)
{
	struct sroce_req *req = &qp->req;
	u32 n = 1;

	if (w->msg == SROCE_RC_MSG_READ)
		n = sroce_rc_npkts(w->length - req->cur_off, qp->pmtu);
	if (!w->started && sroce_req_is_rd_atomic(w))
		req->rd_atomic++;
	w->started = true;
	req->psn = sroce_psn_add(req->psn, n);
	if (sroce_psn_after(req->psn, req->snd_max))
		req->snd_max = req->psn;
	req->cur_off += len;
	if (last) {
		req->cur++;
		req->cur_off = 0;
	}
}

static int sroce_req_start_packet(struct sroce_qp *qp, struct sroce_tx *tx,
				  const struct sroce_send_wqe *wqe,
				  struct sroce_swqe *w, u32 len, bool first,
				  bool last)
{
	struct sroce_req *req = &qp->req;
	u32 pkt = sroce_psn_sub(req->psn, w->first_psn);
	bool ack_req = last || pkt % SROCE_REQ_ACK_EVERY ==
			       SROCE_REQ_ACK_EVERY - 1;
	u8 opcode = sroce_req_opcode(sroce_qp_transport(qp), w->msg, first,
				     last);
	int err;

	if (w->dest)
		return sroce_tx_start_to(qp, tx, &w->dest->av,
					 wqe->wr.ud.remote_qpn & SROCE_QPN_MASK,
					 opcode, req->psn, len, false,
					 w->solicited);
	/* only RC and XRC ask for acknowledgments */
	err = sroce_tx_start(qp, tx, opcode, req->psn, len,
			     ack_req && sroce_qp_is_reliable(qp),
			     last && w->solicited);
	/* every XRC request names the target's SRQ; wqe is our copy */
	if (!err && sroce_opcode_has(tx->op, SROCE_EXT_XRCETH))
		sroce_hdr_xrceth_encode(sroce_tx_ext(tx, SROCE_EXT_XRCETH),
					wqe->xrc_srqn);
	return err;
}

/*
 * Build and send the next packet of WQE cur.  A local protection or length
 * fault fails the WQE; a packet the network refused is simply lost and
 * recovered by the transport timer like any other (RC), or lost (UC, UD).
 */
static int sroce_req_send_one(struct sroce_qp *qp, struct sroce_swqe *w)
{
	struct sroce_req *req = &qp->req;
	struct sroce_send_wqe *wqe = sroce_req_wqe(qp, req->cur);
	enum sroce_wc_status status;
	struct sroce_tx tx;
	bool first = req->cur_off == 0, last, idle;
	u32 len = sroce_req_seg(qp, w, &last);
	int err;

	err = sroce_req_start_packet(qp, &tx, wqe, w, len, first, last);
	if (err)
		return err;
	status = sroce_req_fill(qp, &tx, wqe, w, len);
	if (status != SROCE_WC_SUCCESS) {
		sroce_tx_abort(&tx);
		sroce_comp_fail(qp, req->cur, status);
		return -EIO;
	}
	/* the first packet outstanding starts the transport timer's count */
	idle = req->una == req->snd_max;
	sroce_req_advance(qp, w, len, last);
	sroce_tx_send(qp, &tx);
	if (!sroce_qp_is_reliable(qp)) {
		/* nothing will acknowledge it: the packet is the end of it */
		req->una = req->psn;
		if (last)
			sroce_comp_retire(qp);
		return 0;
	}
	if (idle || !timer_pending(&req->retrans_timer))
		sroce_req_restart_timer(qp);
	return 0;
}

/*
 * The WQE at cur is a local operation: execute it once (a rewind may pass
 * it again) when the fence allows, and move on.  Returns false if it must
 * wait or failed (the QP is then in error).
 */
static bool sroce_req_local(struct sroce_qp *qp, struct sroce_swqe *w)
{
	struct sroce_req *req = &qp->req;
	enum sroce_wc_status status;

	if (!w->started) {
		if (w->fence && req->rd_atomic)
			return false;
		w->started = true;
		status = sroce_local_execute(qp, sroce_req_wqe(qp, req->cur));
		if (status != SROCE_WC_SUCCESS) {
			sroce_comp_fail(qp, req->cur, status);
			return false;
		}
	}
	req->cur++;
	req->cur_off = 0;
	sroce_comp_retire(qp);
	return true;
}

/**
 * sroce_req_run - transmit what the SQ and the windows allow
 * @qp: the QP, in RTS or SQD; qp->exec_lock held
 * @budget: most packets to send in this call
 *
 * Return: true if the budget ran out with packets still ready to go.
 */
bool sroce_req_run(struct sroce_qp *qp, int budget)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *w;

	lockdep_assert_held(&qp->exec_lock);
	sroce_req_seen(qp);
	while (budget > 0) {
		/* SQD: nothing new starts (sroce_req_drain()) */
		if (qp->state == IB_QPS_SQD && req->cur == req->drain_end)
			return false;
		if (req->cur == req->fetched && !sroce_req_fetch(qp))
			return false;
		w = sroce_req_swqe(qp, req->cur);
		if (w->status != SROCE_WC_SUCCESS) {
			/* completes in order once earlier WQEs are done */
			sroce_comp_retire(qp);
			return false;
		}
		if (w->local) {
			if (!sroce_req_local(qp, w))
				return false;
			budget--;
			continue;
		}
		if (!sroce_req_may_send(qp, w) || !sroce_tx_may_send(qp))
			return false;
		if (sroce_req_send_one(qp, w))
			return false;
		budget--;
	}
	return true;
}
