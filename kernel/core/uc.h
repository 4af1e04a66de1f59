/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Unreliable Connected and Unreliable Datagram transport decisions (IBTA
 * Vol. 1, chapter 9: UC and UD service) that depend only on PSNs and
 * opcodes.
 *
 * UC carries SENDs and RDMA WRITEs like RC, with the same segmentation, but
 * nothing is acknowledged and nothing is sent twice: a lost packet loses
 * its whole message, and the responder simply starts over at the next
 * message's first packet, whatever its PSN.  UD carries single-packet
 * SENDs only.
 */
#ifndef SROCE_CORE_UC_H
#define SROCE_CORE_UC_H

#include "core_env.h"
#include "pkt.h"
#include "rc.h"

/*
 * Opcode of one request packet of msg on transport tr: the RC opcodes of
 * sroce_rc_req_opcode(), the same in the XRC range (without FLUSH and
 * ATOMIC WRITE), RC's SENDs and WRITEs in the UC range, or a UD SEND ONLY.
 * Returns 0xff if tr does not carry msg, or (UD) if the packet is not a
 * whole message.
 */
u8 sroce_req_opcode(enum sroce_transport tr, enum sroce_rc_msg msg,
		    bool first, bool last);

/*
 * The opcode a responder of transport tr (RC or XRC) sends for the RC
 * response opcode rc_opcode (ACK, atomic ACK, read responses).
 */
u8 sroce_resp_opcode(enum sroce_transport tr, u8 rc_opcode);

enum sroce_uc_resp_action {
	SROCE_UC_RESP_EXECUTE,	/* carry it out (st may have resynchronised) */
	SROCE_UC_RESP_DROP,	/* not a request, or inside a lost message */
};

/*
 * Classify a UC packet arriving at a responder and resynchronise st.  The
 * packet with the expected PSN that fits the message in progress is
 * executed.  Anything else means packets were lost: the message in
 * progress is abandoned (*lost is set if there was one), and if the packet
 * starts a message (FIRST or ONLY) the responder starts over there, with
 * epsn at its PSN; otherwise it is dropped, like everything else until the
 * next message begins.  Only well-formed UC requests (reason
 * SROCE_DROP_NONE) are executed.
 */
enum sroce_uc_resp_action
sroce_uc_resp_decide(struct sroce_rc_resp_state *st,
		     const struct sroce_pkt *pkt, enum sroce_drop reason,
		     bool *lost);

#endif /* SROCE_CORE_UC_H */
