// SPDX-License-Identifier: GPL-2.0
/*
 * Responder of the connected transports: executes incoming RC and UC
 * requests and answers RC ones.
 *
 * sroce_rc_resp_decide() (kernel/core/rc.c) classifies each request; here
 * the expected ones are carried out against memory and the RQ:
 *  - SEND fills the receive WQE taken at its first packet from the QP's RQ
 *    or, if it has one, its SRQ (sroce_resp_take_rwqe(); an empty queue
 *    gets an RNR NAK and the PSN does not move);
 *  - RDMA WRITE checks the R_Key once per packet, so a region deregistered
 *    mid-message stops the write at that packet;
 *  - RDMA READ answers with response packets read from the region, at most
 *    SROCE_RESP_READ_BURST per pass so that a large read cannot flood the
 *    transmit queue; requests behind it wait (responses go out in order);
 *  - atomics run under one device-wide lock (IB_ATOMIC_HCA) and their
 *    results are kept for duplicates, which get the saved answer instead of
 *    being executed twice;
 *  - ATOMIC WRITE and FLUSH (IBTA 1.5, Annex A19) are answered by an RDMA
 *    READ response ONLY without payload, as rdma_rxe answers and expects;
 *    a duplicate gets that answer again without being executed again;
 *  - an R_Key is an MR's or a bound memory window's (kernel/mw.c); a
 *    SEND_WITH_INV invalidates the one its IETH names when the message
 *    completes.
 * Duplicates of SENDs and WRITEs are acknowledged again, duplicate READs are
 * answered again from memory.  ACKs are coalesced: one per batch of packets,
 * for the last one that asked (see kernel/exec.c).
 *
 * Errors follow IBTA 9.9.3: an invalid request or access violation gets a
 * NAK and puts the QP in the error state; a local problem with the receive
 * WQE (too small, bad lkey) completes that WQE in error too.  An error no
 * receive completion reports raises IB_EVENT_QP_REQ_ERR (invalid request),
 * IB_EVENT_QP_ACCESS_ERR (R_Key violation) or IB_EVENT_QP_FATAL on this,
 * the responder's, QP; the requester learns it from its NAKed WQE's
 * completion.
 *
 * An XRC target QP (sroce_qp_is_xrc()) is an RC responder whose every
 * request names, in its XRCETH, the XRC SRQ that supplies its receive WQE,
 * CQ and protection domain; see "XRC" in Documentation/architecture.md.
 *
 * UC (sroce_resp_uc_packet()) executes SENDs and WRITEs the same way but
 * answers nothing: a message with a lost packet, or one the responder
 * cannot carry out, is dropped as a whole, the receive WQE it was filling
 * waits for the next SEND, and the QP carries on.
 */
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "core/uc.h"

#include "device.h"
#include "dp/exec.h"
#include "dp/resp.h"
#include "dp/sgl.h"
#include "dp/tx.h"
#include "obj/cq.h"
#include "obj/mr.h"
#include "obj/mw.h"
#include "obj/qp.h"
#include "obj/srq.h"
#include "stats.h"

#define SROCE_RESP_READ_BURST	64

/* Atomics of every QP are atomic with respect to each other. */
static DEFINE_SPINLOCK(sroce_resp_atomic_lock);

/*
 * The SRQ receive WQEs come from: that of a QP attached to one, the one
 * the request being executed names at an XRC target, else NULL.
 */
static struct sroce_srq *sroce_resp_srq(struct sroce_qp *qp)
{
	return qp->ibqp.srq ? to_sroce_srq(qp->ibqp.srq) : qp->resp.xsrq;
}

/*
 * XRC target: make the SRQ with number srqn, if it is still the one of
 * that serial, resp.xsrq (NULL if it is gone) until sroce_resp_xrc_put(),
 * which puts back the resp.xsrq returned here.
 */
static struct sroce_srq *sroce_resp_xrc_get(struct sroce_qp *qp, u32 srqn,
					    u64 serial)
{
	struct sroce_srq *prev = qp->resp.xsrq;
	struct sroce_srq *srq;

	srq = sroce_srq_get_xrc(to_sroce_dev(qp->ibqp.device), srqn, qp->xrcd);
	if (srq && srq->serial != serial) {
		sroce_srq_put(srq);
		srq = NULL;
	}
	qp->resp.xsrq = srq;
	return prev;
}

static void sroce_resp_xrc_put(struct sroce_qp *qp, struct sroce_srq *prev)
{
	if (qp->resp.xsrq)
		sroce_srq_put(qp->resp.xsrq);
	qp->resp.xsrq = prev;
}

/*
 * XRC target: every request names the XRC SRQ of the target's domain
 * whose PD its keys are checked against and whose WQEs a SEND consumes
 * (IBTA A14).  The later packets of a SEND must name the SRQ its first
 * did.  Anything else is an invalid request.
 */
static enum sroce_drop sroce_resp_xrc_enter(struct sroce_qp *qp,
					    const struct sroce_pkt *pkt,
					    enum sroce_drop reason)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_srq *srq;

	srq = sroce_srq_get_xrc(to_sroce_dev(qp->ibqp.device), pkt->xrc_srqn,
				qp->xrcd);
	if (srq && resp->have_rwqe && pkt->op->kind == SROCE_KIND_SEND &&
	    !(pkt->op->flags & SROCE_OPF_FIRST) &&
	    srq->serial != resp->rwqe_srq_serial) {
		sroce_srq_put(srq);
		srq = NULL;
	}
	resp->xsrq = srq;
	if (!srq && reason == SROCE_DROP_NONE)
		return SROCE_DROP_BAD_XRC_SRQ;
	return reason;
}

/*
 * log2 of the slot size of the ring receive WQEs come from: the SRQ's
 * (which a resize replaces, but with slots of the same size) or the QP's
 * own RQ.
 */
static u32 sroce_resp_rwq_shift(struct sroce_qp *qp)
{
	struct sroce_srq *srq = sroce_resp_srq(qp);

	return srq ? srq->slot_shift : qp->rq.slot_shift;
}

/* An XRC target takes WQEs from SRQs of any slot size. */
#define SROCE_RESP_XRC_RWQE_LEN	(sizeof(struct sroce_recv_wqe) + \
				 SROCE_MAX_SRQ_SGE * sizeof(struct sroce_sge))

int sroce_resp_init(struct sroce_qp *qp)
{
	size_t len = qp->ibqp.qp_type == IB_QPT_XRC_TGT ?
		     roundup_pow_of_two(SROCE_RESP_XRC_RWQE_LEN) :
		     BIT(sroce_resp_rwq_shift(qp));

	qp->resp.rwqe = kmalloc(len, sroce_obj_gfp(qp->user));
	return qp->resp.rwqe ? 0 : -ENOMEM;
}

void sroce_resp_cleanup(struct sroce_qp *qp)
{
	kfree(qp->resp.rwqe);
}

/*
 * RESET: forget posted receives without completions.  The WQEs of an SRQ
 * are not the QP's to forget, only the one it had taken.
 */
void sroce_resp_reset(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	u32 producer;

	resp->have_rwqe = false;
	resp->rd_pkts = 0;
	if (!sroce_qp_has_rq(qp))
		return;
	producer = sroce_queue_peer_producer(&qp->rq);
	if (!sroce_ring_valid(producer, resp->rq_cons, qp->rq.num_slots))
		producer = resp->rq_cons;
	resp->rq_cons = producer;
	sroce_queue_publish_consumer(&qp->rq, producer);
}

/* -> RTR: expect rq_psn. */
void sroce_resp_start(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;

	resp->st.epsn = qp->rq_psn;
	resp->st.seq = SROCE_RC_SEQ_IDLE;
	resp->st.nak_sent = false;
	resp->msn = 0;
	resp->have_rwqe = false;
	resp->ack_pending = false;
	resp->rd_pkts = 0;
	resp->atomic_next = 0;
	memset(resp->atomics, 0, sizeof(resp->atomics));
}

static u8 sroce_resp_ack_syndrome(void)
{
	return sroce_hdr_syndrome(SROCE_AETH_ACK, SROCE_AETH_CREDIT_INVALID);
}

void sroce_resp_send_ack(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;

	if (!resp->ack_pending)
		return;
	resp->ack_pending = false;
	sroce_tx_ack(qp, resp->ack_psn, sroce_resp_ack_syndrome(), resp->msn);
}

/* A NAK naming psn; it acknowledges everything before psn as well. */
static void sroce_resp_nak_at(struct sroce_qp *qp, u32 psn,
			      enum sroce_aeth_kind kind, u8 value)
{
	qp->resp.ack_pending = false;
	sroce_tx_ack(qp, psn, sroce_hdr_syndrome(kind, value), qp->resp.msn);
}

static void sroce_resp_nak(struct sroce_qp *qp, enum sroce_aeth_kind kind,
			   u8 value)
{
	sroce_resp_nak_at(qp, qp->resp.st.epsn, kind, value);
}

/*
 * Post a receive completion to the CQ of an XRC target's WQE: the CQ of
 * the SRQ it came from, if that still exists.  Returns -1 if the CQ is
 * full, 0 otherwise.
 */
static int sroce_resp_xrc_cqe(struct sroce_qp *qp, struct sroce_cqe *cqe,
			      bool solicited)
{
	struct sroce_srq *held;
	int err = 0;

	held = sroce_resp_xrc_get(qp, qp->resp.rwqe_srqn,
				  qp->resp.rwqe_srq_serial);
	if (qp->resp.xsrq)
		err = sroce_cq_post(to_sroce_cq(sroce_srq_cq(qp->resp.xsrq)),
				    cqe, solicited);
	sroce_resp_xrc_put(qp, held);
	return err;
}

static void sroce_resp_cqe(struct sroce_qp *qp, enum sroce_wc_status status,
			   u32 opcode, u32 byte_len, u32 flags, u32 ex,
			   bool solicited)
{
	struct sroce_cqe cqe = {
		.wr_id = qp->resp.rwqe->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.ex = ex,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->dest_qp_num,
		.wc_flags = flags,
		.port_num = 1,
	};
	int err;

	qp->resp.have_rwqe = false;
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT)
		err = sroce_resp_xrc_cqe(qp, &cqe, solicited);
	else
		err = sroce_cq_post(to_sroce_cq(qp->ibqp.recv_cq), &cqe,
				    solicited);
	/* a completion lost to a full CQ can only be reported by an event */
	if (err)
		sroce_exec_set_error_event(qp, IB_EVENT_QP_FATAL);
	else if (status == SROCE_WC_SUCCESS)
		sroce_qp_stats_inc(qp, SROCE_STAT_RDMA_RECVS);
}

/* IBTA 11.6.3.1: the affiliated error of a request refused with nak_code. */
static enum ib_event_type sroce_resp_nak_event(u8 nak_code)
{
	switch (nak_code) {
	case SROCE_NAK_INVALID_REQ:
		return IB_EVENT_QP_REQ_ERR;
	case SROCE_NAK_REM_ACCESS_ERR:
		return IB_EVENT_QP_ACCESS_ERR;
	default:
		return IB_EVENT_QP_FATAL;
	}
}

/*
 * A request the responder cannot carry out: NAK it and put the QP in the
 * error state.  A receive WQE in progress completes with recv_status, and
 * that completion reports the error; without one (RDMA, atomics, an
 * invalid first packet) the matching affiliated event does.
 */
static void sroce_resp_fatal_at(struct sroce_qp *qp, u32 psn, u8 nak_code,
				enum sroce_wc_status recv_status)
{
	bool reported;

	/* UC: the caller drops the message, keeping its receive WQE */
	if (!sroce_qp_is_reliable(qp))
		return;
	if (nak_code == SROCE_NAK_REM_ACCESS_ERR)
		sroce_qp_stats_inc(qp, SROCE_STAT_RESP_ACCESS_ERR);
	reported = qp->resp.have_rwqe;
	if (reported)
		sroce_resp_cqe(qp, recv_status, IB_WC_RECV, 0, 0, 0, false);
	sroce_resp_nak_at(qp, psn, SROCE_AETH_NAK, nak_code);
	if (reported)
		sroce_exec_set_error(qp, recv_status);
	else
		sroce_exec_set_error_event(qp, sroce_resp_nak_event(nak_code));
}

static void sroce_resp_fatal(struct sroce_qp *qp, u8 nak_code,
			     enum sroce_wc_status recv_status)
{
	sroce_resp_fatal_at(qp, qp->resp.st.epsn, nak_code, recv_status);
}

/* The next WQE of the QP's own RQ into rwqe; false if none is posted. */
static bool sroce_resp_take_rq(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	u32 producer = sroce_queue_peer_producer(&qp->rq);

	if (!sroce_ring_used(producer, resp->rq_cons, qp->rq.num_slots))
		return false;
	memcpy(resp->rwqe, sroce_queue_slot(&qp->rq, resp->rq_cons),
	       BIT(qp->rq.slot_shift));
	resp->rq_cons++;
	sroce_queue_publish_consumer(&qp->rq, resp->rq_cons);
	return true;
}

/* None posted: RC answers with an RNR NAK, UC and UD drop the message. */
static void sroce_resp_no_rwqe(struct sroce_qp *qp)
{
	if (!sroce_qp_is_reliable(qp)) {
		sroce_qp_drop(qp, SROCE_DROP_NO_RECV);
		return;
	}
	sroce_qp_stats_inc(qp, SROCE_STAT_SEND_RNR);
	sroce_resp_nak(qp, SROCE_AETH_RNR_NAK, qp->min_rnr_timer);
	/* packets already behind it must not cut the wait short */
	qp->resp.st.nak_sent = true;
}

/**
 * sroce_resp_take_rwqe - take the receive WQE for a new message
 * @qp: the receiving QP, of any type; qp->exec_lock held
 *
 * Copies the next receive WQE into qp->resp.rwqe: from the QP's SRQ if it
 * was created with one (shared with the other QPs attached to it, whose
 * engines may be taking WQEs at the same time, see kernel/srq.c),
 * otherwise from its RQ.  A WQE still held from a UC message that was
 * dropped half-way is used again instead.  If none is posted, an RC QP
 * answers with an RNR NAK; UC and UD drop the message.  A WQE naming more
 * SGEs than its queue's slots hold is a local fault on every transport: it
 * completes with LOC_QP_OP_ERR and the QP goes to the error state (an RC
 * requester is told with a remote operational error NAK).
 *
 * Return: true with resp->rwqe a well-formed WQE and resp->rcv_off 0.
 */
bool sroce_resp_take_rwqe(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_srq *srq = sroce_resp_srq(qp);
	size_t room = BIT(sroce_resp_rwq_shift(qp)) -
		      sizeof(struct sroce_recv_wqe);
	u32 max_sge = srq ? srq->max_sge : qp->cap.max_recv_sge;

	lockdep_assert_held(&qp->exec_lock);
	if (resp->have_rwqe) {
		resp->rcv_off = 0;
		return true;
	}
	if (srq ? !sroce_srq_take(srq, resp->rwqe) : !sroce_resp_take_rq(qp)) {
		sroce_resp_no_rwqe(qp);
		return false;
	}
	resp->have_rwqe = true;
	resp->rcv_off = 0;
	if (resp->xsrq) {
		resp->rwqe_srqn = resp->xsrq->srqn;
		resp->rwqe_srq_serial = resp->xsrq->serial;
	}
	if (resp->rwqe->num_sge > max_sge ||
	    resp->rwqe->num_sge * sizeof(struct sroce_sge) > room) {
		sroce_resp_cqe(qp, SROCE_WC_LOC_QP_OP_ERR, IB_WC_RECV, 0, 0, 0,
			       false);
		if (sroce_qp_is_reliable(qp))
			sroce_resp_nak(qp, SROCE_AETH_NAK,
				       SROCE_NAK_REM_OP_ERR);
		sroce_exec_set_error(qp, SROCE_WC_LOC_QP_OP_ERR);
		return false;
	}
	return true;
}

static bool sroce_resp_send(struct sroce_qp *qp, const struct sk_buff *skb,
			    const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	const struct sroce_opcode_info *op = pkt->op;
	enum sroce_wc_status status;
	u32 flags = 0, ex = 0;

	if ((op->flags & SROCE_OPF_FIRST) && !sroce_resp_take_rwqe(qp))
		return false;
	status = sroce_sgl_copy(qp, (const struct sroce_sge *)(resp->rwqe + 1),
				resp->rwqe->num_sge, resp->rcv_off,
				skb->data + pkt->payload_off, pkt->payload_len,
				SROCE_MR_TO_MR, NULL);
	if (status != SROCE_WC_SUCCESS) {
		sroce_resp_fatal(qp, status == SROCE_WC_LOC_LEN_ERR ?
				 SROCE_NAK_INVALID_REQ : SROCE_NAK_REM_OP_ERR,
				 status);
		return false;
	}
	resp->rcv_off += pkt->payload_len;
	if (!(op->flags & SROCE_OPF_LAST))
		return true;
	if (op->flags & SROCE_OPF_IMM) {
		flags = SROCE_CQE_WC_WITH_IMM;
		ex = (__force u32)cpu_to_be32(pkt->imm);
	} else if (op->flags & SROCE_OPF_INV) {
		/* an R_Key this QP may not invalidate: invalid request */
		if (sroce_mw_invalidate(qp, pkt->ieth_rkey, true)) {
			sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
					 SROCE_WC_REM_INV_REQ_ERR);
			return false;
		}
		flags = SROCE_CQE_WC_WITH_INV;
		ex = pkt->ieth_rkey;
	}
	sroce_resp_cqe(qp, SROCE_WC_SUCCESS, IB_WC_RECV, resp->rcv_off, flags,
		       ex, pkt->bth.se);
	resp->msn = sroce_psn_add(resp->msn, 1);
	return true;
}

/*
 * Look up an R_Key (an MR's or a memory window's) for [va, va + len) with
 * the access the request needs; *addr is where va lands in the MR, which
 * the copy takes (a zero-based window's va is an offset into it).
 */
static struct sroce_mr *sroce_resp_rkey(struct sroce_qp *qp, u32 rkey,
					u32 access, u64 va, u64 len, u64 *addr)
{
	enum sroce_mr_fault fault;

	return sroce_mw_get_rkey(qp, rkey, access, va, len, addr, &fault);
}

/*
 * The QP itself does not allow the operation (qp_access_flags): an invalid
 * request (IBTA 9.7.5.2.3, C9-50), not an access error of a memory region.
 */
static bool sroce_resp_qp_allows(struct sroce_qp *qp, u32 access)
{
	if (qp->access & access)
		return true;
	sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ, SROCE_WC_REM_INV_REQ_ERR);
	return false;
}

static bool sroce_resp_write(struct sroce_qp *qp, const struct sk_buff *skb,
			     const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	const struct sroce_opcode_info *op = pkt->op;
	u32 len = pkt->payload_len;
	struct sroce_mr *mr = NULL;
	u64 addr;

	if ((op->flags & SROCE_OPF_FIRST) &&
	    !sroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE))
		return false;
	if (op->flags & SROCE_OPF_FIRST) {
		resp->wr_va = pkt->reth.va;
		resp->wr_rkey = pkt->reth.rkey;
		resp->wr_left = pkt->reth.dma_len;
		resp->wr_total = pkt->reth.dma_len;
		/* the whole range, so a refused write writes nothing */
		if (resp->wr_left) {
			mr = sroce_resp_rkey(qp, resp->wr_rkey,
					     IB_ACCESS_REMOTE_WRITE,
					     resp->wr_va, resp->wr_left, &addr);
			if (!mr) {
				sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
						 SROCE_WC_REM_ACCESS_ERR);
				return false;
			}
			sroce_mr_put(mr);
			mr = NULL;
		}
	}
	if (len > resp->wr_left ||
	    ((op->flags & SROCE_OPF_LAST) && len != resp->wr_left)) {
		sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
				 SROCE_WC_REM_INV_REQ_ERR);
		return false;
	}
	/* Zero-length writes carry no valid R_Key (IBTA 9.4.4). */
	if (len) {
		mr = sroce_resp_rkey(qp, resp->wr_rkey, IB_ACCESS_REMOTE_WRITE,
				     resp->wr_va, len, &addr);
		if (!mr) {
			sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
					 SROCE_WC_REM_ACCESS_ERR);
			return false;
		}
	}
	if ((op->flags & SROCE_OPF_IMM) && !sroce_resp_take_rwqe(qp)) {
		if (mr)
			sroce_mr_put(mr);
		return false;
	}
	if (len && sroce_mr_copy(mr, resp->wr_rkey, IB_ACCESS_REMOTE_WRITE,
				 addr, skb->data + pkt->payload_off,
				 len, SROCE_MR_TO_MR, NULL)) {
		/* a fast-register MR invalidated since the lookup */
		sroce_mr_put(mr);
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	if (mr)
		sroce_mr_put(mr);
	resp->wr_va += len;
	resp->wr_left -= len;
	if (!(op->flags & SROCE_OPF_LAST))
		return true;
	if (op->flags & SROCE_OPF_IMM)
		sroce_resp_cqe(qp, SROCE_WC_SUCCESS, IB_WC_RECV_RDMA_WITH_IMM,
			       resp->wr_total, SROCE_CQE_WC_WITH_IMM,
			       (__force u32)cpu_to_be32(pkt->imm),
			       pkt->bth.se);
	resp->msn = sroce_psn_add(resp->msn, 1);
	return true;
}

/*
 * The READ in progress cannot go on: its R_Key stopped being valid, or a
 * copy from the region failed.  NAK the response the requester waits for.
 */
static void sroce_resp_read_refused(struct sroce_qp *qp)
{
	qp->resp.rd_pkts = 0;
	sroce_resp_fatal_at(qp, qp->resp.rd_psn, SROCE_NAK_REM_ACCESS_ERR,
			    SROCE_WC_REM_ACCESS_ERR);
}

/*
 * One response packet of the READ in progress, its payload read through the
 * R_Key looked up again for this packet (a fast-register MR may have been
 * invalidated since the last one).  Returns 0, -EAGAIN if the packet could
 * not be built now (retried later), or -EACCES if the READ was refused.
 */
static int sroce_resp_read_pkt(struct sroce_qp *qp, u32 len, bool first,
			       bool last)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_aeth aeth = {
		.syndrome = sroce_resp_ack_syndrome(),
		.msn = resp->msn,
	};
	struct sroce_mr *mr = NULL;
	struct sroce_tx tx;
	u64 addr = 0;
	int err = 0;
	u8 opcode;

	if (len) {
		mr = sroce_resp_rkey(qp, resp->rd_rkey, IB_ACCESS_REMOTE_READ,
				     resp->rd_va, len, &addr);
		if (!mr)
			return -EACCES;
	}
	opcode = sroce_rc_read_resp_opcode(first, last);
	opcode = sroce_tx_resp_opcode(qp, opcode);
	if (sroce_tx_start(qp, &tx, opcode, resp->rd_psn, len, false,
			   false)) {
		err = -EAGAIN;
		goto out;
	}
	if (tx.op->hdrs & SROCE_HDR_AETH)
		sroce_hdr_aeth_encode(sroce_tx_ext(&tx, SROCE_EXT_AETH), &aeth);
	/* bytes a failed copy did not write must never reach the wire */
	if (len && sroce_mr_copy(mr, resp->rd_rkey, IB_ACCESS_REMOTE_READ,
				 addr, tx.payload, len, SROCE_MR_FROM_MR,
				 sroce_tx_payload_crc(qp, &tx, len))) {
		sroce_tx_abort(&tx);
		err = -EACCES;
		goto out;
	}
	sroce_tx_send(qp, &tx);
out:
	if (mr)
		sroce_mr_put(mr);
	return err;
}

/*
 * Send up to SROCE_RESP_READ_BURST packets of the READ in progress.  An
 * R_Key that stopped being valid half-way ends the read with a NAK.
 */
static void sroce_resp_read_burst(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	u32 len;
	int n, err;

	for (n = 0; n < SROCE_RESP_READ_BURST && resp->rd_pkts; n++) {
		if (!sroce_tx_may_send(qp))
			break;
		len = min_t(u64, resp->rd_left, qp->pmtu);
		err = sroce_resp_read_pkt(qp, len, resp->rd_first,
					  resp->rd_pkts == 1);
		if (err == -EAGAIN)
			break;
		if (err) {
			sroce_resp_read_refused(qp);
			return;
		}
		resp->rd_first = false;
		resp->rd_va += len;
		resp->rd_left -= len;
		resp->rd_psn = sroce_psn_add(resp->rd_psn, 1);
		resp->rd_pkts--;
	}
}

/* Start answering a READ (new or duplicate) whose request had psn. */
static bool sroce_resp_read(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	const struct sroce_reth *reth = &pkt->reth;
	struct sroce_mr *mr;
	u64 addr;

	if (reth->dma_len) {
		mr = sroce_resp_rkey(qp, reth->rkey, IB_ACCESS_REMOTE_READ,
				     reth->va, reth->dma_len, &addr);
		if (!mr)
			return false;
		sroce_mr_put(mr);
	}
	resp->ack_pending = false;
	resp->rd_va = reth->va;
	resp->rd_rkey = reth->rkey;
	if (resp->xsrq) {
		resp->rd_srqn = resp->xsrq->srqn;
		resp->rd_srq_serial = resp->xsrq->serial;
	}
	resp->rd_left = reth->dma_len;
	resp->rd_psn = pkt->bth.psn;
	resp->rd_pkts = sroce_rc_npkts(reth->dma_len, qp->pmtu);
	resp->rd_first = true;
	return true;
}

static void sroce_resp_atomic_ack(struct sroce_qp *qp, u32 psn, u64 orig)
{
	struct sroce_aeth aeth = {
		.syndrome = sroce_resp_ack_syndrome(),
		.msn = qp->resp.msn,
	};
	struct sroce_tx tx;

	qp->resp.ack_pending = false;
	if (sroce_tx_start(qp, &tx,
			   sroce_tx_resp_opcode(qp, SROCE_OP_RC_ATOMIC_ACK),
			   psn, 0, false, false))
		return;
	sroce_hdr_aeth_encode(sroce_tx_ext(&tx, SROCE_EXT_AETH), &aeth);
	sroce_hdr_atomic_ack_eth_encode(sroce_tx_ext(&tx,
						     SROCE_EXT_ATOMIC_ACK_ETH),
					orig);
	sroce_tx_send(qp, &tx);
}

static bool sroce_resp_atomic(struct sroce_qp *qp, const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	const struct sroce_atomic_eth *ae = &pkt->atomic;
	struct sroce_atomic_res *res;
	struct sroce_mr *mr;
	u64 addr, orig;
	int err;

	if (!sroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_ATOMIC))
		return false;
	mr = sroce_resp_rkey(qp, ae->rkey, IB_ACCESS_REMOTE_ATOMIC, ae->va,
			     sizeof(u64), &addr);
	if (!mr) {
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	spin_lock_bh(&sroce_resp_atomic_lock);
	err = sroce_mr_atomic(mr, ae->rkey, addr,
			      pkt->op->kind == SROCE_KIND_FETCH_ADD ?
			      SROCE_MR_FETCH_ADD : SROCE_MR_CMP_SWAP,
			      ae->compare, ae->swap_add, &orig);
	spin_unlock_bh(&sroce_resp_atomic_lock);
	sroce_mr_put(mr);
	if (err == -EINVAL) {		/* a misaligned address */
		sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
				 SROCE_WC_REM_INV_REQ_ERR);
		return false;
	}
	if (err) {	/* a fast-register MR invalidated since the lookup */
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	resp->msn = sroce_psn_add(resp->msn, 1);
	res = &resp->atomics[resp->atomic_next++ % SROCE_RC_MAX_ATOMIC_RES];
	res->psn = pkt->bth.psn;
	res->orig = orig;
	res->valid = true;
	sroce_resp_atomic_ack(qp, pkt->bth.psn, orig);
	return true;
}

/*
 * The answer to an ATOMIC WRITE or a FLUSH at psn: an RDMA READ response
 * ONLY without payload, which also acknowledges everything before it.  A
 * lost one is recovered like any response: the requester sends the request
 * again and gets the answer of a duplicate.
 */
static void sroce_resp_empty_read_resp(struct sroce_qp *qp, u32 psn)
{
	struct sroce_aeth aeth = {
		.syndrome = sroce_resp_ack_syndrome(),
		.msn = qp->resp.msn,
	};
	struct sroce_tx tx;

	qp->resp.ack_pending = false;
	if (sroce_tx_start(qp, &tx, SROCE_OP_RC_READ_RESPONSE_ONLY, psn, 0,
			   false, false))
		return;
	sroce_hdr_aeth_encode(sroce_tx_ext(&tx, SROCE_EXT_AETH), &aeth);
	sroce_tx_send(qp, &tx);
}

/*
 * ATOMIC WRITE (IBTA A19.5): the QP and the region must allow remote
 * writes (as for rdma_rxe; remote atomic access is not asked for), the
 * word is 8-byte aligned (sroce_pkt_parse() refused anything else as an
 * invalid request, and sroce_mr_atomic() checks the memory's own
 * alignment) and is stored in one piece, under the lock the other atomics
 * take, after every earlier request of the QP was placed.
 */
static bool sroce_resp_atomic_write(struct sroce_qp *qp,
				    const struct sk_buff *skb,
				    const struct sroce_pkt *pkt)
{
	const struct sroce_reth *reth = &pkt->reth;
	struct sroce_mr *mr;
	u64 addr, val, orig;
	int err;

	if (!sroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE))
		return false;
	mr = sroce_resp_rkey(qp, reth->rkey, IB_ACCESS_REMOTE_WRITE, reth->va,
			     SROCE_ATOMIC_WRITE_LEN, &addr);
	if (!mr) {
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	/* the requester's bytes, as they were in its memory */
	memcpy(&val, skb->data + pkt->payload_off, sizeof(val));
	spin_lock_bh(&sroce_resp_atomic_lock);
	err = sroce_mr_atomic(mr, reth->rkey, addr, SROCE_MR_WRITE, 0, val,
			      &orig);
	spin_unlock_bh(&sroce_resp_atomic_lock);
	sroce_mr_put(mr);
	if (err == -EINVAL) {
		sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
				 SROCE_WC_REM_INV_REQ_ERR);
		return false;
	}
	if (err) {
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	qp->resp.msn = sroce_psn_add(qp->resp.msn, 1);
	sroce_resp_empty_read_resp(qp, pkt->bth.psn);
	return true;
}

/* The access bits a FLUSH of placement type plt needs, of QP and region. */
static u32 sroce_resp_flush_access(u8 plt)
{
	u32 access = 0;

	if (plt & SROCE_FLUSH_GLOBAL)
		access |= SROCE_ACCESS_FLUSH_GLOBAL;
	if (plt & SROCE_FLUSH_PERSISTENT)
		access |= SROCE_ACCESS_FLUSH_PERSISTENT;
	return access;
}

/*
 * The region a FLUSH names: the RETH's range, or (selectivity "memory
 * region") the whole MR its R_Key names, whatever the RETH says.  A memory
 * window never grants a FLUSH (windows carry remote read, write and atomic
 * rights only).
 */
static struct sroce_mr *sroce_resp_flush_mr(struct sroce_qp *qp,
					    const struct sroce_pkt *pkt,
					    u32 access)
{
	struct sroce_dev *sdev = to_sroce_dev(qp->ibqp.device);
	const struct sroce_reth *reth = &pkt->reth;
	struct sroce_mr *mr;
	u64 va, addr;

	if (pkt->feth.sel == SROCE_FLUSH_RANGE)
		return sroce_resp_rkey(qp, reth->rkey, access, reth->va,
				       reth->dma_len, &addr);
	mr = sroce_mr_find(sdev, reth->rkey);
	if (!mr)
		return NULL;
	va = READ_ONCE(mr->iova);
	sroce_mr_put(mr);
	return sroce_resp_rkey(qp, reth->rkey, access, va, 0, &addr);
}

/*
 * FLUSH (IBTA A19.4).  sroce's memory is ordinary RAM that every CPU sees
 * coherently; what a FLUSH can ask for means here:
 *  - global visibility: every RDMA WRITE and ATOMIC WRITE this QP executed
 *    before the FLUSH (the responder executes a QP's requests in order,
 *    under its exec_lock) is visible to every CPU of the host, and so to
 *    any later reader, local or remote, before the FLUSH is answered: a
 *    full memory barrier between the placement and the response;
 *  - persistence: sroce cannot make user memory survive a power loss
 *    (pinned anonymous or page-cache pages, no pmem), so it does not offer
 *    it.  The device does not announce FLUSH_PERSISTENT, ib_core refuses
 *    the access bit in reg_mr, and a FLUSH asking for persistence finds no
 *    region that grants it: it is refused with a remote access error.
 * The QP must allow the placement type too (modify_qp access flags), as
 * rdma_rxe requires: otherwise the request is invalid.
 */
static bool sroce_resp_placement_flush(struct sroce_qp *qp,
				       const struct sroce_pkt *pkt)
{
	u32 access = sroce_resp_flush_access(pkt->feth.plt);
	struct sroce_mr *mr;

	if ((qp->access & access) != access) {
		sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
				 SROCE_WC_REM_INV_REQ_ERR);
		return false;
	}
	mr = sroce_resp_flush_mr(qp, pkt, access);
	if (!mr) {
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	}
	sroce_mr_put(mr);
	/* the earlier placements before the answer, on every CPU */
	smp_mb();
	qp->resp.msn = sroce_psn_add(qp->resp.msn, 1);
	sroce_resp_empty_read_resp(qp, pkt->bth.psn);
	return true;
}

static bool sroce_resp_execute(struct sroce_qp *qp, const struct sk_buff *skb,
			       const struct sroce_pkt *pkt)
{
	switch (pkt->op->kind) {
	case SROCE_KIND_SEND:
		return sroce_resp_send(qp, skb, pkt);
	case SROCE_KIND_WRITE:
		return sroce_resp_write(qp, skb, pkt);
	case SROCE_KIND_READ_REQ:
		if (!sroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_READ))
			return false;
		if (sroce_resp_read(qp, pkt)) {
			qp->resp.msn = sroce_psn_add(qp->resp.msn, 1);
			return true;
		}
		sroce_resp_fatal(qp, SROCE_NAK_REM_ACCESS_ERR,
				 SROCE_WC_REM_ACCESS_ERR);
		return false;
	case SROCE_KIND_CMP_SWAP:
	case SROCE_KIND_FETCH_ADD:
		return sroce_resp_atomic(qp, pkt);
	case SROCE_KIND_ATOMIC_WRITE:
		return sroce_resp_atomic_write(qp, skb, pkt);
	case SROCE_KIND_FLUSH:
		return sroce_resp_placement_flush(qp, pkt);
	default:
		return false;
	}
}

/* A request behind epsn: answer it again without executing it twice. */
static void sroce_resp_duplicate(struct sroce_qp *qp,
				 const struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	int i;

	switch (pkt->op->kind) {
	case SROCE_KIND_READ_REQ:
		if (!(qp->access & IB_ACCESS_REMOTE_READ) ||
		    !sroce_resp_read(qp, pkt))
			sroce_qp_drop(qp, SROCE_DROP_STALE);
		return;
	case SROCE_KIND_CMP_SWAP:
	case SROCE_KIND_FETCH_ADD:
		for (i = 0; i < SROCE_RC_MAX_ATOMIC_RES; i++) {
			if (resp->atomics[i].valid &&
			    resp->atomics[i].psn == pkt->bth.psn) {
				sroce_resp_atomic_ack(qp, pkt->bth.psn,
						      resp->atomics[i].orig);
				return;
			}
		}
		sroce_qp_drop(qp, SROCE_DROP_STALE);
		return;
	case SROCE_KIND_ATOMIC_WRITE:
	case SROCE_KIND_FLUSH:
		/*
		 * Executed already (behind epsn, and a refused one put the
		 * QP in error), and its answer carries no result.
		 */
		sroce_resp_empty_read_resp(qp, pkt->bth.psn);
		return;
	default:
		/* the ACK was lost: acknowledge everything received again */
		resp->ack_pending = true;
		resp->ack_psn = sroce_psn_sub(resp->st.epsn, 1);
		return;
	}
}

static void sroce_resp_rc_packet(struct sroce_qp *qp,
				 const struct sk_buff *skb,
				 const struct sroce_pkt *pkt,
				 enum sroce_drop reason)
{
	struct sroce_resp *resp = &qp->resp;

	switch (sroce_rc_resp_decide(&resp->st, pkt, reason)) {
	case SROCE_RC_RESP_EXECUTE:
		if (!sroce_resp_execute(qp, skb, pkt))
			return;
		sroce_rc_resp_advance(&resp->st, pkt, qp->pmtu);
		if (pkt->bth.ack_req && pkt->op->reply == SROCE_REPLY_ACK) {
			resp->ack_pending = true;
			resp->ack_psn = pkt->bth.psn;
		}
		return;
	case SROCE_RC_RESP_DUPLICATE:
		sroce_qp_stats_inc(qp, SROCE_STAT_DUP_REQ);
		sroce_resp_duplicate(qp, pkt);
		return;
	case SROCE_RC_RESP_NAK_SEQ:
		sroce_qp_stats_inc(qp, SROCE_STAT_OUT_OF_SEQ_REQ);
		sroce_resp_nak(qp, SROCE_AETH_NAK, SROCE_NAK_PSN_SEQ_ERR);
		resp->st.nak_sent = true;
		return;
	case SROCE_RC_RESP_NAK_INVALID:
		sroce_resp_fatal(qp, SROCE_NAK_INVALID_REQ,
				 SROCE_WC_REM_INV_REQ_ERR);
		return;
	default:
		sroce_qp_drop(qp, SROCE_DROP_STALE);
		return;
	}
}

void sroce_resp_packet(struct sroce_qp *qp, const struct sk_buff *skb,
		       const struct sroce_pkt *pkt, enum sroce_drop reason)
{
	lockdep_assert_held(&qp->exec_lock);
	if (qp->ibqp.qp_type != IB_QPT_XRC_TGT) {
		sroce_resp_rc_packet(qp, skb, pkt, reason);
		return;
	}
	reason = sroce_resp_xrc_enter(qp, pkt, reason);
	sroce_resp_rc_packet(qp, skb, pkt, reason);
	sroce_resp_xrc_put(qp, NULL);
}

/**
 * sroce_resp_uc_packet - a request arriving at a UC QP
 * @qp: the QP, able to receive; qp->exec_lock held
 * @skb: the packet
 * @pkt: its parse
 * @reason: sroce_pkt_parse()'s verdict
 *
 * Nothing is answered.  An invalid request (a request error of
 * sroce_pkt_parse(), a payload the path MTU does not allow) is dropped as
 * malformed and leaves the message in progress alone.  A packet out of
 * sequence abandons the message in progress; a message the responder
 * cannot carry out (no receive WQE, too small, a bad R_Key) is dropped
 * from there to its end.
 */
void sroce_resp_uc_packet(struct sroce_qp *qp, const struct sk_buff *skb,
			  const struct sroce_pkt *pkt, enum sroce_drop reason)
{
	struct sroce_resp *resp = &qp->resp;
	bool lost;

	lockdep_assert_held(&qp->exec_lock);
	/* an invalid request: silently dropped, the message state kept */
	if (reason != SROCE_DROP_NONE) {
		sroce_qp_drop(qp, SROCE_DROP_MALFORMED);
		return;
	}
	if (sroce_uc_resp_decide(&resp->st, pkt, reason, &lost) !=
	    SROCE_UC_RESP_EXECUTE) {
		sroce_qp_drop(qp, SROCE_DROP_LOST_MSG);
		return;
	}
	if (!sroce_resp_execute(qp, skb, pkt)) {
		/*
		 * Between messages only a FIRST or ONLY packet is taken, so
		 * the rest of this one is dropped.
		 */
		resp->st.seq = SROCE_RC_SEQ_IDLE;
		sroce_qp_drop(qp, SROCE_DROP_LOST_MSG);
		return;
	}
	sroce_rc_resp_advance(&resp->st, pkt, qp->pmtu);
}

/* A READ is being answered: the responder cannot take more requests. */
bool sroce_resp_busy(struct sroce_qp *qp)
{
	struct sroce_srq *held;

	if (!qp->resp.rd_pkts)
		return false;
	/* an XRC target reads with the PD of the SRQ the READ named */
	if (qp->ibqp.qp_type == IB_QPT_XRC_TGT) {
		held = sroce_resp_xrc_get(qp, qp->resp.rd_srqn,
					  qp->resp.rd_srq_serial);
		sroce_resp_read_burst(qp);
		sroce_resp_xrc_put(qp, held);
	} else {
		sroce_resp_read_burst(qp);
	}
	return qp->resp.rd_pkts;
}

/*
 * Error state: the receive in progress and every posted one are flushed,
 * at most budget posted ones per call (userspace may keep posting); returns
 * true if the budget ran out.  With an SRQ only the one in progress is the
 * QP's: the WQEs still in the SRQ wait there for the other QPs.
 */
bool sroce_resp_flush(struct sroce_qp *qp, int budget)
{
	struct sroce_resp *resp = &qp->resp;
	u32 producer;

	lockdep_assert_held(&qp->exec_lock);
	resp->rd_pkts = 0;
	resp->ack_pending = false;
	if (resp->have_rwqe)
		sroce_resp_cqe(qp, SROCE_WC_WR_FLUSH_ERR, IB_WC_RECV, 0, 0, 0,
			       false);
	if (!sroce_qp_has_rq(qp))
		return false;
	producer = sroce_queue_peer_producer(&qp->rq);
	while (sroce_ring_used(producer, resp->rq_cons, qp->rq.num_slots)) {
		if (budget-- <= 0)
			return true;
		memcpy(resp->rwqe, sroce_queue_slot(&qp->rq, resp->rq_cons),
		       sizeof(*resp->rwqe));
		resp->rq_cons++;
		/* the slot is free before its completion shows */
		sroce_queue_publish_consumer(&qp->rq, resp->rq_cons);
		sroce_resp_cqe(qp, SROCE_WC_WR_FLUSH_ERR, IB_WC_RECV, 0, 0, 0,
			       false);
	}
	return false;
}
