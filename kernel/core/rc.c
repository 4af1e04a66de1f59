// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reliable Connected transport decisions (see rc.h).
 */
#include "rc.h"

/* Opcodes of each message kind: only, first, middle, last. */
struct sroce_rc_msg_ops {
	u8 only, first, middle, last;
};

static const struct sroce_rc_msg_ops sroce_rc_msg_ops[SROCE_RC_MSG_NR] = {
	[SROCE_RC_MSG_SEND] = {
		SROCE_OP_RC_SEND_ONLY, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_LAST },
	[SROCE_RC_MSG_SEND_IMM] = {
		SROCE_OP_RC_SEND_ONLY_IMM, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_LAST_IMM },
	[SROCE_RC_MSG_SEND_INV] = {
		SROCE_OP_RC_SEND_ONLY_INV, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_LAST_INV },
	[SROCE_RC_MSG_WRITE] = {
		SROCE_OP_RC_WRITE_ONLY, SROCE_OP_RC_WRITE_FIRST,
		SROCE_OP_RC_WRITE_MIDDLE, SROCE_OP_RC_WRITE_LAST },
	[SROCE_RC_MSG_WRITE_IMM] = {
		SROCE_OP_RC_WRITE_ONLY_IMM, SROCE_OP_RC_WRITE_FIRST,
		SROCE_OP_RC_WRITE_MIDDLE, SROCE_OP_RC_WRITE_LAST_IMM },
	[SROCE_RC_MSG_READ] = {
		SROCE_OP_RC_READ_REQUEST, SROCE_OP_RC_READ_REQUEST,
		SROCE_OP_RC_READ_REQUEST, SROCE_OP_RC_READ_REQUEST },
	[SROCE_RC_MSG_CMP_SWAP] = {
		SROCE_OP_RC_CMP_SWAP, SROCE_OP_RC_CMP_SWAP,
		SROCE_OP_RC_CMP_SWAP, SROCE_OP_RC_CMP_SWAP },
	[SROCE_RC_MSG_FETCH_ADD] = {
		SROCE_OP_RC_FETCH_ADD, SROCE_OP_RC_FETCH_ADD,
		SROCE_OP_RC_FETCH_ADD, SROCE_OP_RC_FETCH_ADD },
	[SROCE_RC_MSG_FLUSH] = {
		SROCE_OP_RC_FLUSH, SROCE_OP_RC_FLUSH,
		SROCE_OP_RC_FLUSH, SROCE_OP_RC_FLUSH },
	[SROCE_RC_MSG_ATOMIC_WRITE] = {
		SROCE_OP_RC_ATOMIC_WRITE, SROCE_OP_RC_ATOMIC_WRITE,
		SROCE_OP_RC_ATOMIC_WRITE, SROCE_OP_RC_ATOMIC_WRITE },
};

u8 sroce_rc_req_opcode(enum sroce_rc_msg msg, bool first, bool last)
{
	const struct sroce_rc_msg_ops *ops;

	if ((unsigned int)msg >= SROCE_RC_MSG_NR)
		return 0xff;
	ops = &sroce_rc_msg_ops[msg];
	if (first && last)
		return ops->only;
	if (first)
		return ops->first;
	return last ? ops->last : ops->middle;
}

u8 sroce_rc_read_resp_opcode(bool first, bool last)
{
	if (first && last)
		return SROCE_OP_RC_READ_RESPONSE_ONLY;
	if (first)
		return SROCE_OP_RC_READ_RESPONSE_FIRST;
	return last ? SROCE_OP_RC_READ_RESPONSE_LAST :
		      SROCE_OP_RC_READ_RESPONSE_MIDDLE;
}

static enum sroce_wc_status sroce_rc_nak_status(u8 code)
{
	switch (code) {
	case SROCE_NAK_INVALID_REQ:
		return SROCE_WC_REM_INV_REQ_ERR;
	case SROCE_NAK_REM_ACCESS_ERR:
		return SROCE_WC_REM_ACCESS_ERR;
	case SROCE_NAK_REM_OP_ERR:
		return SROCE_WC_REM_OP_ERR;
	case SROCE_NAK_INVALID_RD_REQ:
		/* RD only; an RC peer sending it is confused */
		return SROCE_WC_REM_INV_REQ_ERR;
	default:
		return SROCE_WC_BAD_RESP_ERR;
	}
}

void sroce_rc_ack_decide(u32 una, u32 next, u32 psn, u8 syndrome,
			 struct sroce_rc_ack *out)
{
	u32 outstanding = sroce_psn_sub(next, una);
	enum sroce_aeth_kind kind = sroce_hdr_syndrome_kind(syndrome);
	u8 value = sroce_hdr_syndrome_value(syndrome);

	memset(out, 0, sizeof(*out));
	out->action = SROCE_RC_ACK_STALE;
	out->psn = sroce_psn_mask(psn);

	if (kind == SROCE_AETH_ACK) {
		/* [una - 1, next - 1]; una - 1 acknowledges nothing new */
		if (!sroce_psn_in_range(psn, sroce_psn_sub(una, 1),
					outstanding + 1) ||
		    sroce_psn_mask(psn) == sroce_psn_sub(una, 1))
			return;
		out->action = SROCE_RC_ACK_ADVANCE;
		out->acked = true;
		out->acked_psn = sroce_psn_mask(psn);
		return;
	}
	if (kind != SROCE_AETH_RNR_NAK && kind != SROCE_AETH_NAK)
		return;
	if (!sroce_psn_in_range(psn, una, outstanding))
		return;

	/* A NAK acknowledges every PSN before the one it names. */
	out->acked = sroce_psn_mask(psn) != sroce_psn_mask(una);
	out->acked_psn = sroce_psn_sub(psn, 1);
	if (kind == SROCE_AETH_RNR_NAK) {
		out->action = SROCE_RC_ACK_RNR;
		out->rnr_us = sroce_hdr_rnr_timer_us(value);
	} else if (value == SROCE_NAK_PSN_SEQ_ERR) {
		out->action = SROCE_RC_ACK_RETRY;
	} else {
		out->action = SROCE_RC_ACK_ERROR;
		out->status = sroce_rc_nak_status(value);
	}
}

/* Does an opcode fit the message state; and the state after it. */
static bool sroce_rc_seq_fits(enum sroce_rc_seq seq,
			      const struct sroce_opcode_info *op)
{
	bool starts = op->flags & SROCE_OPF_FIRST;
	enum sroce_rc_seq inside;

	if (seq == SROCE_RC_SEQ_IDLE)
		return starts;
	if (starts)
		return false;
	inside = op->kind == SROCE_KIND_SEND ? SROCE_RC_SEQ_SEND :
		 op->kind == SROCE_KIND_WRITE ? SROCE_RC_SEQ_WRITE :
		 SROCE_RC_SEQ_IDLE;
	return inside == seq;
}

enum sroce_rc_resp_action
sroce_rc_resp_decide(const struct sroce_rc_resp_state *st,
		     const struct sroce_pkt *pkt, enum sroce_drop reason)
{
	const struct sroce_opcode_info *op = pkt->op;
	int d;

	if (!op ||
	    !sroce_transport_is_reliable((enum sroce_transport)op->transport) ||
	    !(op->flags & SROCE_OPF_REQUEST))
		return SROCE_RC_RESP_DROP;
	if (reason != SROCE_DROP_NONE && !sroce_pkt_drop_is_request_error(reason))
		return SROCE_RC_RESP_DROP;

	d = sroce_psn_diff(pkt->bth.psn, st->epsn);
	if (d < 0)
		return SROCE_RC_RESP_DUPLICATE;
	if (d > 0)
		return st->nak_sent ? SROCE_RC_RESP_DROP :
				      SROCE_RC_RESP_NAK_SEQ;
	if (reason != SROCE_DROP_NONE || !sroce_rc_seq_fits(st->seq, op))
		return SROCE_RC_RESP_NAK_INVALID;
	return SROCE_RC_RESP_EXECUTE;
}

void sroce_rc_resp_advance(struct sroce_rc_resp_state *st,
			   const struct sroce_pkt *pkt, u32 pmtu)
{
	const struct sroce_opcode_info *op = pkt->op;
	u32 n = 1;

	if (op->kind == SROCE_KIND_READ_REQ)
		n = sroce_rc_npkts(pkt->reth.dma_len, pmtu);
	st->epsn = sroce_psn_add(st->epsn, n);
	st->nak_sent = false;
	if (op->flags & SROCE_OPF_LAST)
		st->seq = SROCE_RC_SEQ_IDLE;
	else if (op->kind == SROCE_KIND_SEND)
		st->seq = SROCE_RC_SEQ_SEND;
	else
		st->seq = SROCE_RC_SEQ_WRITE;
}
