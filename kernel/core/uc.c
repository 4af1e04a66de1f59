// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * UC and UD transport decisions; see uc.h.
 */
#include "uc.h"

/* The RC range is transport 0, so the other ranges differ in the top bits. */
#define SROCE_OPCODE_UC_BASE \
	((u8)(SROCE_TRANSPORT_UC << SROCE_OPCODE_TRANSPORT_SHIFT))
#define SROCE_OPCODE_XRC_BASE \
	((u8)(SROCE_TRANSPORT_XRC << SROCE_OPCODE_TRANSPORT_SHIFT))

/*
 * XRC has RC's requests but not IBTA 1.5's placement extensions, whose XRC
 * opcodes sroce does not know (neither does any peer it could talk to).
 */
static u8 sroce_xrc_req_opcode(enum sroce_rc_msg msg, bool first, bool last)
{
	if (msg == SROCE_RC_MSG_FLUSH || msg == SROCE_RC_MSG_ATOMIC_WRITE)
		return 0xff;
	return SROCE_OPCODE_XRC_BASE | sroce_rc_req_opcode(msg, first, last);
}

u8 sroce_resp_opcode(enum sroce_transport tr, u8 rc_opcode)
{
	return tr == SROCE_TRANSPORT_XRC ? SROCE_OPCODE_XRC_BASE | rc_opcode :
					   rc_opcode;
}

u8 sroce_req_opcode(enum sroce_transport tr, enum sroce_rc_msg msg,
		    bool first, bool last)
{
	switch (tr) {
	case SROCE_TRANSPORT_RC:
		return sroce_rc_req_opcode(msg, first, last);
	case SROCE_TRANSPORT_XRC:
		return sroce_xrc_req_opcode(msg, first, last);
	case SROCE_TRANSPORT_UC:
		if (msg != SROCE_RC_MSG_SEND && msg != SROCE_RC_MSG_SEND_IMM &&
		    msg != SROCE_RC_MSG_WRITE && msg != SROCE_RC_MSG_WRITE_IMM)
			return 0xff;
		return SROCE_OPCODE_UC_BASE | sroce_rc_req_opcode(msg, first, last);
	case SROCE_TRANSPORT_UD:
		if (!first || !last)
			return 0xff;
		if (msg == SROCE_RC_MSG_SEND)
			return SROCE_OP_UD_SEND_ONLY;
		if (msg == SROCE_RC_MSG_SEND_IMM)
			return SROCE_OP_UD_SEND_ONLY_IMM;
		return 0xff;
	default:
		return 0xff;
	}
}

/* Does op continue (or, between messages, start) the message of seq? */
static bool sroce_uc_seq_fits(enum sroce_rc_seq seq,
			      const struct sroce_opcode_info *op)
{
	bool starts = op->flags & SROCE_OPF_FIRST;

	if (seq == SROCE_RC_SEQ_IDLE)
		return starts;
	if (starts)
		return false;
	if (op->kind == SROCE_KIND_SEND)
		return seq == SROCE_RC_SEQ_SEND;
	return op->kind == SROCE_KIND_WRITE && seq == SROCE_RC_SEQ_WRITE;
}

enum sroce_uc_resp_action
sroce_uc_resp_decide(struct sroce_rc_resp_state *st,
		     const struct sroce_pkt *pkt, enum sroce_drop reason,
		     bool *lost)
{
	const struct sroce_opcode_info *op = pkt->op;

	*lost = false;
	if (!op || op->transport != SROCE_TRANSPORT_UC ||
	    !(op->flags & SROCE_OPF_REQUEST) || reason != SROCE_DROP_NONE)
		return SROCE_UC_RESP_DROP;
	if (pkt->bth.psn == st->epsn && sroce_uc_seq_fits(st->seq, op))
		return SROCE_UC_RESP_EXECUTE;

	*lost = st->seq != SROCE_RC_SEQ_IDLE;
	st->seq = SROCE_RC_SEQ_IDLE;
	if (!(op->flags & SROCE_OPF_FIRST))
		return SROCE_UC_RESP_DROP;
	st->epsn = pkt->bth.psn;
	return SROCE_UC_RESP_EXECUTE;
}
