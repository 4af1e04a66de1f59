// SPDX-License-Identifier: GPL-2.0
/*
 * RC completer: acts on ACKs, NAKs, READ responses and atomic ACKs, and
 * retires send WQEs in order with their completions.
 *
 * The oldest unacknowledged PSN (req.una) is the whole acknowledgment
 * state.  An ACK moves it over SEND and RDMA WRITE packets; READ and atomic
 * WQEs are passed only by their own responses, which arrive in PSN order.
 * An ACK that reaches beyond a READ whose responses have not all come means
 * those responses were lost (IBTA 9.7.5.1.1, implicit NAK): transmission
 * goes back to the first missing one.  A WQE retires once una has passed
 * its last PSN; its completion is posted if it was signaled or failed.
 *
 * Retry counts are reloaded whenever una moves (forward progress); each
 * timeout or sequence error NAK consumes one retry_cnt, each RNR NAK one
 * rnr_retry.  Exhausting them fails the oldest WQE and the QP goes to the
 * error state, flushing the rest.
 */
#include <linux/jiffies.h>
#include <linux/spinlock.h>

#include "dp/comp.h"
#include "dp/exec.h"
#include "dp/req.h"
#include "dp/sgl.h"
#include "dp/trace.h"
#include "dp/tx.h"
#include "obj/cq.h"
#include "obj/qp.h"
#include "stats.h"

static void sroce_comp_cqe(struct sroce_qp *qp, struct sroce_swqe *w,
			   enum sroce_wc_status status)
{
	struct sroce_cqe cqe = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = w->wc_opcode,
		.byte_len = status == SROCE_WC_SUCCESS ? w->length : 0,
		.qp_num = qp->ibqp.qp_num,
		.port_num = 1,
	};

	/* as hardware RoCE devices report it for the requester too */
	if (w->msg == SROCE_RC_MSG_SEND_IMM || w->msg == SROCE_RC_MSG_WRITE_IMM)
		cqe.wc_flags = SROCE_CQE_WC_WITH_IMM;
	/* a completion lost to a full CQ can only be reported by an event */
	if (sroce_cq_post(to_sroce_cq(qp->ibqp.send_cq), &cqe, false))
		sroce_exec_set_error_event(qp, IB_EVENT_QP_FATAL);
}

/* The WQE's PSNs all lie before una. */
static bool sroce_comp_wqe_acked(struct sroce_qp *qp, struct sroce_swqe *w)
{
	u32 end = sroce_psn_add(w->first_psn, w->npkts);

	return w->started && sroce_psn_before_eq(end, qp->req.una);
}

/*
 * Retire the oldest WQE: give its slot back before its completion is
 * visible, so an application that posts again as soon as it polls the
 * completion always finds the slot free.
 */
static void sroce_comp_pop(struct sroce_qp *qp, struct sroce_swqe *w,
			   bool cqe, enum sroce_wc_status status)
{
	struct sroce_req *req = &qp->req;

	sroce_req_release(w);
	req->comp++;
	sroce_queue_publish_consumer(&qp->sq, req->comp);
	/* acknowledged while being resent: nothing of it is left to send */
	if ((s32)(req->cur - req->comp) < 0) {
		req->cur = req->comp;
		req->cur_off = 0;
		if (sroce_psn_before(req->psn, req->una))
			req->psn = req->una;
	}
	if (cqe)
		sroce_comp_cqe(qp, w, status);
	if (status == SROCE_WC_SUCCESS && !w->local &&
	    (w->msg == SROCE_RC_MSG_SEND || w->msg == SROCE_RC_MSG_SEND_IMM ||
	     w->msg == SROCE_RC_MSG_SEND_INV))
		sroce_qp_stats_inc(qp, SROCE_STAT_RDMA_SENDS);
}

/**
 * sroce_comp_retire - complete finished WQEs from the oldest on
 * @qp: the QP; qp->exec_lock held
 *
 * A WQE that failed completes with its status and puts the QP in error;
 * retiring stops there and the flush completes the rest.
 */
void sroce_comp_retire(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *w;

	while (req->comp != req->fetched) {
		w = sroce_req_swqe(qp, req->comp);
		if (w->status != SROCE_WC_SUCCESS) {
			if (w->started && sroce_req_is_rd_atomic(w))
				req->rd_atomic--;
			sroce_comp_pop(qp, w, true, w->status);
			sroce_exec_set_error(qp, w->status);
			break;
		}
		if (!sroce_comp_wqe_acked(qp, w))
			break;
		if (sroce_req_is_rd_atomic(w))
			req->rd_atomic--;
		sroce_comp_pop(qp, w, w->signaled, SROCE_WC_SUCCESS);
	}
}

/* Fail the WQE at index idx (or the oldest, if it is earlier). */
void sroce_comp_fail(struct sroce_qp *qp, u32 idx,
		     enum sroce_wc_status status)
{
	struct sroce_swqe *w = sroce_req_swqe(qp, idx);

	w->status = status;
	sroce_req_stop_timers(qp);
	sroce_comp_retire(qp);
	sroce_exec_set_error(qp, status);
}

/* Index of the WQE whose PSNs hold psn, or req.cur if none does. */
static u32 sroce_comp_find(struct sroce_qp *qp, u32 psn)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *w;
	u32 i;

	for (i = req->comp; i != req->cur; i++) {
		w = sroce_req_swqe(qp, i);
		if (sroce_psn_in_range(psn, w->first_psn, w->npkts))
			return i;
	}
	/* cur may be part-way through its packets */
	return req->cur;
}

/* una moved: reload the retry counts and restart the timer. */
static void sroce_comp_progress(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	req->retry_left = qp->retry_cnt;
	req->rnr_left = qp->rnr_retry;
	req->backoff = 0;
	req->rewind_sent = false;
	/* all acknowledged: a pending timer is left to fire on nothing */
	sroce_req_arm_timer(qp);
}

/*
 * Acknowledge everything up to and including psn, stopping at a READ or
 * atomic WQE that still waits for its responses.  Returns false if the ACK
 * went past such a WQE (its responses were lost).
 */
static bool sroce_comp_ack_through(struct sroce_qp *qp, u32 psn)
{
	struct sroce_req *req = &qp->req;
	u32 end = sroce_psn_add(psn, 1);
	struct sroce_swqe *w;
	u32 i, last;

	for (i = req->comp; i != req->cur + 1 && i != req->fetched; i++) {
		if (!sroce_psn_before(req->una, end))
			break;
		w = sroce_req_swqe(qp, i);
		if (!w->started)
			break;
		last = sroce_psn_add(w->first_psn, w->npkts);
		if (sroce_psn_before_eq(last, req->una))
			continue;
		if (sroce_req_is_rd_atomic(w))
			return false;
		req->una = sroce_psn_before(end, last) ? end : last;
	}
	return true;
}

static void sroce_comp_retry(struct sroce_qp *qp, u32 psn,
			     enum sroce_comp_retx cause)
{
	struct sroce_req *req = &qp->req;

	if (!sroce_rc_retry_consume(&req->retry_left, false)) {
		sroce_qp_stats_inc(qp, SROCE_STAT_RETRY_EXCEEDED);
		sroce_comp_fail(qp, sroce_comp_find(qp, req->una),
				SROCE_WC_RETRY_EXC_ERR);
		return;
	}
	sroce_qp_stats_inc(qp, SROCE_STAT_COMP_RETRY);
	trace_sroce_retransmit(&qp->ibqp, cause, psn, req->snd_max,
			       req->retry_left);
	sroce_req_rewind(qp, psn);
	sroce_req_arm_timer(qp);
}

/* An ACK went past a READ/atomic: go back to its first missing PSN once. */
static void sroce_comp_implicit_nak(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	if (req->rewind_sent)
		return;
	req->rewind_sent = true;
	trace_sroce_retransmit(&qp->ibqp, SROCE_COMP_RETX_IMPLICIT, req->una,
			       req->snd_max, req->retry_left);
	sroce_req_rewind(qp, req->una);
}

static void sroce_comp_advance(struct sroce_qp *qp, u32 acked_psn)
{
	struct sroce_req *req = &qp->req;
	u32 una = req->una;

	if (!sroce_comp_ack_through(qp, acked_psn))
		sroce_comp_implicit_nak(qp);
	if (req->una == una)
		return;
	/* a resend behind the acknowledged PSNs skips what arrived */
	if (sroce_psn_before(req->psn, req->una))
		sroce_req_rewind(qp, req->una);
	sroce_comp_progress(qp);
	sroce_comp_retire(qp);
}

static void sroce_comp_rnr(struct sroce_qp *qp, const struct sroce_rc_ack *a)
{
	struct sroce_req *req = &qp->req;

	if (!sroce_rc_retry_consume(&req->rnr_left, true)) {
		sroce_qp_stats_inc(qp, SROCE_STAT_RNR_RETRY_EXCEEDED);
		sroce_comp_fail(qp, sroce_comp_find(qp, a->psn),
				SROCE_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	trace_sroce_retransmit(&qp->ibqp, SROCE_COMP_RETX_RNR_NAK, a->psn,
			       req->snd_max, req->rnr_left);
	sroce_req_rewind(qp, a->psn);
	req->rnr_wait = true;
	del_timer(&req->retrans_timer);
	mod_timer(&req->rnr_timer,
		  jiffies + max(usecs_to_jiffies(a->rnr_us), 1UL));
}

static void sroce_comp_ack(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_req *req = &qp->req;
	struct sroce_rc_ack a;

	sroce_rc_ack_decide(req->una, req->snd_max, pkt->bth.psn,
			    pkt->aeth.syndrome, &a);
	if (a.action == SROCE_RC_ACK_STALE) {
		sroce_qp_drop(qp, SROCE_DROP_STALE);
		return;
	}
	if (a.acked)
		sroce_comp_advance(qp, a.acked_psn);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		return;

	switch (a.action) {
	case SROCE_RC_ACK_RETRY:
		sroce_qp_stats_inc(qp, SROCE_STAT_RCVD_SEQ_ERR);
		if (req->una == a.psn)
			sroce_comp_retry(qp, a.psn, SROCE_COMP_RETX_SEQ_NAK);
		break;
	case SROCE_RC_ACK_RNR:
		sroce_qp_stats_inc(qp, SROCE_STAT_RCVD_RNR);
		if (req->una == a.psn)
			sroce_comp_rnr(qp, &a);
		break;
	case SROCE_RC_ACK_ERROR:
		if (a.status == SROCE_WC_REM_ACCESS_ERR)
			sroce_qp_stats_inc(qp, SROCE_STAT_REQ_ACCESS_ERR);
		sroce_comp_fail(qp, sroce_comp_find(qp, a.psn), a.status);
		break;
	default:
		break;
	}
}

/*
 * A response for psn: everything before it is implicitly acknowledged;
 * return the WQE it answers, or NULL if it is a duplicate, out of order
 * or does not answer a READ/atomic.
 */
static struct sroce_swqe *sroce_comp_response_wqe(struct sroce_qp *qp,
						  u32 psn, u32 *idx)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *w;

	if (!sroce_psn_in_range(psn, req->una, sroce_psn_sub(req->snd_max,
							     req->una)))
		return NULL;
	if (psn != req->una) {
		sroce_comp_advance(qp, sroce_psn_sub(psn, 1));
		if (psn != req->una) {
			/* an earlier response is missing */
			sroce_comp_implicit_nak(qp);
			return NULL;
		}
	}
	*idx = sroce_comp_find(qp, psn);
	w = sroce_req_swqe(qp, *idx);
	if (*idx == req->cur && !w->started)
		return NULL;
	return sroce_req_is_rd_atomic(w) ? w : NULL;
}

/*
 * A response to a READ already received in full.  After a timeout the
 * responder answers every READ request sent again, which for long READs
 * takes longer than one timeout; such a response proves the responder is
 * alive and working its way to the missing PSNs, so the transport timer
 * starts again, though without the retry reload that only progress earns.
 * Otherwise one late packet snowballs into RETRY_EXC_ERR.
 */
static void sroce_comp_stale_response(struct sroce_qp *qp, u32 psn)
{
	sroce_qp_drop(qp, SROCE_DROP_STALE);
	if (sroce_psn_before(psn, qp->req.una))
		sroce_req_arm_timer(qp);
}

/*
 * The answer to an ATOMIC WRITE or a FLUSH: a READ response ONLY without
 * payload (IBTA A19), which completes it.
 */
static void sroce_comp_placement_resp(struct sroce_qp *qp,
				      const struct sroce_pkt *pkt, u32 idx)
{
	struct sroce_req *req = &qp->req;

	if (pkt->bth.opcode != SROCE_OP_RC_READ_RESPONSE_ONLY ||
	    pkt->payload_len) {
		sroce_comp_fail(qp, idx, SROCE_WC_BAD_RESP_ERR);
		return;
	}
	req->una = sroce_psn_add(pkt->bth.psn, 1);
	sroce_comp_progress(qp);
	sroce_comp_retire(qp);
}

static void sroce_comp_read_resp(struct sroce_qp *qp,
				 const struct sk_buff *skb,
				 const struct sroce_pkt *pkt)
{
	struct sroce_req *req = &qp->req;
	u32 psn = pkt->bth.psn, idx, expect;
	enum sroce_wc_status status;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *w;
	u64 off;

	w = sroce_comp_response_wqe(qp, psn, &idx);
	if (w && (w->msg == SROCE_RC_MSG_ATOMIC_WRITE ||
		  w->msg == SROCE_RC_MSG_FLUSH)) {
		sroce_comp_placement_resp(qp, pkt, idx);
		return;
	}
	if (!w || w->msg != SROCE_RC_MSG_READ) {
		sroce_comp_stale_response(qp, psn);
		return;
	}
	off = (u64)sroce_psn_sub(psn, w->first_psn) * qp->pmtu;
	expect = min_t(u64, w->length - off, qp->pmtu);
	if (pkt->payload_len != expect ||
	    !!(pkt->op->flags & SROCE_OPF_LAST) != (off + expect == w->length)) {
		sroce_comp_fail(qp, idx, SROCE_WC_BAD_RESP_ERR);
		return;
	}
	wqe = sroce_req_wqe(qp, idx);
	status = sroce_sgl_copy(qp, (const struct sroce_sge *)(wqe + 1),
				wqe->num_sge, off,
				skb->data + pkt->payload_off, expect,
				SROCE_MR_TO_MR, NULL);
	if (status != SROCE_WC_SUCCESS) {
		sroce_comp_fail(qp, idx, status);
		return;
	}
	req->una = sroce_psn_add(psn, 1);
	sroce_comp_progress(qp);
	sroce_comp_retire(qp);
}

static void sroce_comp_atomic_ack(struct sroce_qp *qp,
				  const struct sroce_pkt *pkt)
{
	struct sroce_req *req = &qp->req;
	enum sroce_wc_status status;
	struct sroce_send_wqe *wqe;
	struct sroce_swqe *w;
	u64 orig = pkt->atomic_orig;
	u32 idx;

	w = sroce_comp_response_wqe(qp, pkt->bth.psn, &idx);
	if (!w || (w->msg != SROCE_RC_MSG_CMP_SWAP &&
		   w->msg != SROCE_RC_MSG_FETCH_ADD)) {
		sroce_qp_drop(qp, SROCE_DROP_STALE);
		return;
	}
	wqe = sroce_req_wqe(qp, idx);
	status = sroce_sgl_copy(qp, (const struct sroce_sge *)(wqe + 1),
				wqe->num_sge, 0, &orig, sizeof(orig),
				SROCE_MR_TO_MR, NULL);
	if (status != SROCE_WC_SUCCESS) {
		sroce_comp_fail(qp, idx, status);
		return;
	}
	req->una = sroce_psn_add(pkt->bth.psn, 1);
	sroce_comp_progress(qp);
	sroce_comp_retire(qp);
}

void sroce_comp_packet(struct sroce_qp *qp, const struct sk_buff *skb,
		       const struct sroce_pkt *pkt)
{
	lockdep_assert_held(&qp->exec_lock);
	switch (pkt->op->kind) {
	case SROCE_KIND_ACK:
		sroce_comp_ack(qp, pkt);
		break;
	case SROCE_KIND_READ_RESP:
		sroce_comp_read_resp(qp, skb, pkt);
		break;
	case SROCE_KIND_ATOMIC_ACK:
		sroce_comp_atomic_ack(qp, pkt);
		break;
	default:
		sroce_qp_drop(qp, SROCE_DROP_STALE);
		break;
	}
}

/* The transport timer fired: go back to the oldest unacknowledged PSN. */
void sroce_comp_timeout(struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	struct sroce_req *req = &qp->req;

	lockdep_assert_held(&qp->exec_lock);
	/* SQD still retransmits the messages it is draining */
	if ((state != IB_QPS_RTS && state != IB_QPS_SQD) ||
	    req->una == req->snd_max || req->rnr_wait ||
	    timer_pending(&req->retrans_timer))
		return;
	/* the lazy timer (req.c) fired before the count restarted ran out */
	if (time_before(jiffies, sroce_req_deadline(req))) {
		mod_timer(&req->retrans_timer, sroce_req_deadline(req));
		return;
	}
	/*
	 * Packets of ours still in this host's network stack (a long qdisc,
	 * the transmit bound of tx.c, a driver that completes late): the peer
	 * cannot answer what it has not received.  Like TCP with a segment
	 * still in the host queue, wait another timeout without resending or
	 * counting a retry; a dead link drops what is queued, which ends it.
	 */
	if (sroce_tx_inflight(qp)) {
		sroce_req_arm_timer(qp);
		return;
	}
	if (req->backoff < SROCE_REQ_MAX_BACKOFF)
		req->backoff++;
	sroce_comp_retry(qp, req->una, SROCE_COMP_RETX_TIMEOUT);
}

void sroce_comp_rnr_done(struct sroce_qp *qp)
{
	lockdep_assert_held(&qp->exec_lock);
	if (timer_pending(&qp->req.rnr_timer))
		return;
	qp->req.rnr_wait = false;
}

/*
 * Error state: every WQE not yet completed ends with WR_FLUSH_ERR, at most
 * budget of them per call, since userspace may keep posting.  Returns true
 * if the budget ran out.
 */
bool sroce_comp_flush(struct sroce_qp *qp, int budget)
{
	struct sroce_req *req = &qp->req;
	enum sroce_wc_status status;
	struct sroce_swqe *w;
	bool more = false;

	lockdep_assert_held(&qp->exec_lock);
	req->seen_producer = sroce_queue_peer_producer(&qp->sq);
	for (;;) {
		if (req->comp == req->fetched && !sroce_req_fetch(qp))
			break;
		if (budget-- <= 0) {
			more = true;
			break;
		}
		w = sroce_req_swqe(qp, req->comp);
		/* a WQE that failed on its own reports why */
		status = w->status != SROCE_WC_SUCCESS && w->started ?
			 w->status : SROCE_WC_WR_FLUSH_ERR;
		sroce_comp_pop(qp, w, true, status);
	}
	req->cur = req->comp;
	req->cur_off = 0;
	req->rd_atomic = 0;
	return more;
}
