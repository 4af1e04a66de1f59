/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Reliable Connected transport decisions (IBTA Vol. 1, 9.7 and 9.9) that
 * depend only on PSNs, opcodes and AETH contents, never on memory or queues:
 *
 *  - requester: which opcode each packet of a message carries, how many
 *    PSNs a message takes, what an incoming ACK or NAK means for the
 *    outstanding PSN window, retry counters and the transport timer;
 *  - responder: whether a request packet is the next one, a duplicate or
 *    from the future, whether its opcode fits the message in progress, and
 *    how the expected PSN moves once it is executed.
 *
 * The kernel's requester, completer and responder (kernel/req.c,
 * kernel/comp.c, kernel/resp.c) act on these answers; they hold the state
 * and touch memory, this file only decides.
 */
#ifndef SROCE_CORE_RC_H
#define SROCE_CORE_RC_H

#include "core_env.h"
#include "pkt.h"
#include "psn.h"

/*
 * Work completion statuses: the values of libibverbs' enum ibv_wc_status,
 * which equal the kernel's enum ib_wc_status.
 */
enum sroce_wc_status {
	SROCE_WC_SUCCESS = 0,
	SROCE_WC_LOC_LEN_ERR = 1,
	SROCE_WC_LOC_QP_OP_ERR = 2,
	SROCE_WC_LOC_PROT_ERR = 4,
	SROCE_WC_WR_FLUSH_ERR = 5,
	SROCE_WC_MW_BIND_ERR = 6,	/* also failed LOCAL_INV and REG_MR */
	SROCE_WC_BAD_RESP_ERR = 7,
	SROCE_WC_LOC_ACCESS_ERR = 8,
	SROCE_WC_REM_INV_REQ_ERR = 9,
	SROCE_WC_REM_ACCESS_ERR = 10,
	SROCE_WC_REM_OP_ERR = 11,
	SROCE_WC_RETRY_EXC_ERR = 12,
	SROCE_WC_RNR_RETRY_EXC_ERR = 13,
	SROCE_WC_FATAL_ERR = 19,
	SROCE_WC_GENERAL_ERR = 21,
};

/* The messages an RC requester sends. */
enum sroce_rc_msg {
	SROCE_RC_MSG_SEND,
	SROCE_RC_MSG_SEND_IMM,
	SROCE_RC_MSG_SEND_INV,
	SROCE_RC_MSG_WRITE,
	SROCE_RC_MSG_WRITE_IMM,
	SROCE_RC_MSG_READ,
	SROCE_RC_MSG_CMP_SWAP,
	SROCE_RC_MSG_FETCH_ADD,
	SROCE_RC_MSG_FLUSH,
	SROCE_RC_MSG_ATOMIC_WRITE,
	SROCE_RC_MSG_NR,
};

/*
 * Opcode of one request packet of a message: first and last say where the
 * packet sits (both for a single-packet message).  READ, the atomics,
 * FLUSH and ATOMIC WRITE are always a single request packet.  Returns 0xff for an invalid msg.
 */
u8 sroce_rc_req_opcode(enum sroce_rc_msg msg, bool first, bool last);

/* Opcode of one RDMA READ response packet. */
u8 sroce_rc_read_resp_opcode(bool first, bool last);

/*
 * Packets (and so PSNs) a message of len bytes takes at path MTU pmtu: at
 * least one, since an empty message is still one packet.  An RDMA READ
 * request takes as many PSNs as its responses.
 */
static inline u32 sroce_rc_npkts(u64 len, u32 pmtu)
{
	return len ? (u32)((len + pmtu - 1) / pmtu) : 1;
}

/*
 * Local ACK timeout (IBTA 9.7.6.1.3): 4.096 us * 2^timeout, in
 * microseconds rounded up; 0 means the timer is off (returns 0).
 */
static inline u64 sroce_rc_timeout_us(u8 timeout)
{
	if (!timeout)
		return 0;
	if (timeout > 31)
		timeout = 31;
	return ((4096ull << timeout) + 999) / 1000;
}

/*
 * Retry counters (IBTA 9.7.5.2.8, 10.2.4.2): *left starts at the QP's
 * retry_cnt or rnr_retry and is consumed by one per retry; the value 7 of
 * rnr_retry means "retry for ever" and is never consumed (infinite7).
 * Returns false when no retry is left: the WQE completes with
 * RETRY_EXC_ERR or RNR_RETRY_EXC_ERR.
 */
static inline bool sroce_rc_retry_consume(u8 *left, bool infinite7)
{
	if (infinite7 && *left == 7)
		return true;
	if (!*left)
		return false;
	(*left)--;
	return true;
}

/* What an ACK or NAK means to the requester. */
enum sroce_rc_ack_action {
	SROCE_RC_ACK_STALE,	/* acknowledges nothing outstanding: ignore */
	SROCE_RC_ACK_ADVANCE,	/* everything up to acked_psn is done */
	SROCE_RC_ACK_RETRY,	/* PSN sequence error: resend from psn */
	SROCE_RC_ACK_RNR,	/* receiver not ready: wait, resend from psn */
	SROCE_RC_ACK_ERROR,	/* fatal NAK: the WQE holding psn fails */
};

struct sroce_rc_ack {
	enum sroce_rc_ack_action action;
	/*
	 * Every PSN before psn (ADVANCE: up to and including psn) is
	 * acknowledged; acked says whether that covers any outstanding PSN.
	 */
	bool acked;
	u32 acked_psn;		/* last PSN acknowledged, if acked */
	u32 psn;		/* the PSN the ACK or NAK names */
	u32 rnr_us;		/* RNR: how long to wait */
	enum sroce_wc_status status;	/* ERROR: the WQE's completion */
};

/*
 * Decide what an AETH with syndrome and PSN psn means to a requester whose
 * oldest unacknowledged PSN is una and whose next new PSN is next (so
 * [una, next) is outstanding).  A positive ACK names the last PSN it
 * covers, in [una - 1, next - 1]; a NAK names the PSN the responder
 * expected, in [una, next - 1].  Anything outside those windows, or a
 * reserved syndrome, is STALE.
 */
void sroce_rc_ack_decide(u32 una, u32 next, u32 psn, u8 syndrome,
			 struct sroce_rc_ack *out);

/* Where the responder is inside a multi-packet request message. */
enum sroce_rc_seq {
	SROCE_RC_SEQ_IDLE,	/* between messages: FIRST or ONLY comes */
	SROCE_RC_SEQ_SEND,	/* inside a SEND: MIDDLE or LAST of a SEND */
	SROCE_RC_SEQ_WRITE,	/* inside an RDMA WRITE */
};

struct sroce_rc_resp_state {
	u32 epsn;		/* the PSN the responder expects next */
	enum sroce_rc_seq seq;
	bool nak_sent;		/* a sequence error NAK for epsn went out */
};

enum sroce_rc_resp_action {
	SROCE_RC_RESP_EXECUTE,	/* the expected packet: carry it out */
	SROCE_RC_RESP_DUPLICATE, /* behind epsn: re-ACK or replay */
	SROCE_RC_RESP_NAK_SEQ,	/* ahead of epsn: NAK "PSN sequence error" */
	SROCE_RC_RESP_DROP,	/* ahead and NAK'd already, or no request */
	SROCE_RC_RESP_NAK_INVALID, /* expected PSN, invalid request */
};

/*
 * Classify an RC packet arriving at a responder.  pkt was parsed by
 * sroce_pkt_parse() with result reason: SROCE_DROP_NONE or a request error
 * (sroce_pkt_drop_is_request_error()).  A request error or an opcode that
 * does not fit st->seq is only acted on (NAK_INVALID) at the expected PSN;
 * behind it the packet is a duplicate, ahead of it a sequence error.
 * Responses and packets of other transports than RC and XRC are DROP (the
 * caller has matched the transport to the QP's).
 */
enum sroce_rc_resp_action
sroce_rc_resp_decide(const struct sroce_rc_resp_state *st,
		     const struct sroce_pkt *pkt, enum sroce_drop reason);

/*
 * Move the responder past a packet it executed: the expected PSN advances
 * by one, or by the number of response packets for an RDMA READ request
 * at path MTU pmtu, and the message state follows the opcode.
 */
void sroce_rc_resp_advance(struct sroce_rc_resp_state *st,
			   const struct sroce_pkt *pkt, u32 pmtu);

#endif /* SROCE_CORE_RC_H */
