// libFuzzer target of the protocol core's transport decisions: what the RC
// responder, the RC requester (ACK/NAK handling) and the UC responder do
// with a packet from a hostile peer, given a state also taken from the
// input.
//
// The input is a 12-byte state followed by the UDP payload of a RoCE v2
// packet (BTH through ICRC), parsed as the receive path parses it:
//   bytes 0-2   requester's oldest unacknowledged PSN (una)
//   bytes 3-5   requester's next PSN to send (next)
//   bytes 6-8   responder's expected PSN (epsn)
//   byte  9     responder's message state (seq, modulo 3) and nak_sent (bit 7)
//   byte  10    path MTU selector (256 << (value % 5))
//   byte  11    AETH syndrome for the ACK decision when the packet has none
// Besides "no crash, no out-of-bounds access, no undefined behaviour", the
// target checks that every decision is one the IBTA rules allow and traps
// if not:
//  * RC responder: only a request of a reliable transport (RC, or XRC,
//    whose responder decides the same) is acted on; the
//    expected PSN with a fitting opcode executes, a PSN behind is a
//    duplicate, one ahead is NAKed once; executing advances the expected
//    PSN by one (a READ by its response packets) and the message state by
//    the opcode's FIRST/LAST flags;
//  * RC requester: an ACK acknowledges only PSNs that are outstanding, a
//    NAK names an outstanding PSN and acknowledges exactly those before it,
//    a fatal NAK carries an error status, nothing else moves the window;
//  * UC responder: it executes only the expected PSN continuing the message
//    or a FIRST/ONLY (resynchronising to its PSN), and reports a lost
//    message only when one was in progress;
//  * requester opcodes: every opcode the requester may send is a request
//    of its transport, with the FIRST/LAST flags asked for (READ and
//    atomics: always ONLY); XRC's carry an XRCETH and are RC's in the XRC
//    range, without FLUSH and ATOMIC WRITE; an XRC responder's response
//    opcodes are RC's in the XRC range, responses without an XRCETH.
#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" {
#include "kernel/core/hdr.h"
#include "kernel/core/opcode.h"
#include "kernel/core/pkt.h"
#include "kernel/core/psn.h"
#include "kernel/core/rc.h"
#include "kernel/core/uc.h"
}

namespace {

constexpr size_t kStateLen = 12;

void check(bool ok)
{
	if (!ok)
		__builtin_trap();
}

uint32_t psn24(const uint8_t *p)
{
	return (uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]) &
	       SROCE_PSN_MASK;
}

bool is_request_of(const sroce_pkt &pkt, sroce_transport tr)
{
	return pkt.op && pkt.op->transport == tr &&
	       (pkt.op->flags & SROCE_OPF_REQUEST);
}

bool is_reliable_request(const sroce_pkt &pkt)
{
	return is_request_of(pkt, SROCE_TRANSPORT_RC) ||
	       is_request_of(pkt, SROCE_TRANSPORT_XRC);
}

bool starts(const sroce_pkt &pkt)
{
	return pkt.op->flags & SROCE_OPF_FIRST;
}

void rc_responder(const sroce_rc_resp_state &st0, const sroce_pkt &pkt,
		  sroce_drop reason, uint32_t pmtu)
{
	const sroce_rc_resp_action a = sroce_rc_resp_decide(&st0, &pkt, reason);
	const bool usable = reason == SROCE_DROP_NONE ||
			    sroce_pkt_drop_is_request_error(reason);

	check(a >= SROCE_RC_RESP_EXECUTE && a <= SROCE_RC_RESP_NAK_INVALID);
	if (!is_reliable_request(pkt) || !usable) {
		check(a == SROCE_RC_RESP_DROP);
		return;
	}
	const int d = sroce_psn_diff(pkt.bth.psn, st0.epsn);
	if (d < 0)
		check(a == SROCE_RC_RESP_DUPLICATE);
	else if (d > 0)
		check(a == (st0.nak_sent ? SROCE_RC_RESP_DROP :
					   SROCE_RC_RESP_NAK_SEQ));
	else
		check(a == SROCE_RC_RESP_EXECUTE ||
		      a == SROCE_RC_RESP_NAK_INVALID);
	if (a != SROCE_RC_RESP_EXECUTE)
		return;
	check(reason == SROCE_DROP_NONE);
	// between messages only a FIRST or ONLY, inside one never
	check(starts(pkt) == (st0.seq == SROCE_RC_SEQ_IDLE));

	sroce_rc_resp_state st = st0;
	sroce_rc_resp_advance(&st, &pkt, pmtu);
	const uint32_t n = pkt.op->kind == SROCE_KIND_READ_REQ ?
				   sroce_rc_npkts(pkt.reth.dma_len, pmtu) : 1;
	check(st.epsn == sroce_psn_add(st0.epsn, n));
	check(!st.nak_sent);
	if (pkt.op->flags & SROCE_OPF_LAST)
		check(st.seq == SROCE_RC_SEQ_IDLE);
	else
		check(st.seq == (pkt.op->kind == SROCE_KIND_SEND ?
					 SROCE_RC_SEQ_SEND :
					 SROCE_RC_SEQ_WRITE));
}

void rc_requester(uint32_t una, uint32_t next, uint32_t psn, uint8_t syndrome)
{
	sroce_rc_ack ack;
	const uint32_t outstanding = sroce_psn_sub(next, una);

	std::memset(&ack, 0xa5, sizeof(ack));
	sroce_rc_ack_decide(una, next, psn, syndrome, &ack);
	check(ack.action >= SROCE_RC_ACK_STALE &&
	      ack.action <= SROCE_RC_ACK_ERROR);
	check(ack.psn == sroce_psn_mask(psn));
	const sroce_aeth_kind kind = sroce_hdr_syndrome_kind(syndrome);
	switch (ack.action) {
	case SROCE_RC_ACK_STALE:
		check(!ack.acked);
		break;
	case SROCE_RC_ACK_ADVANCE:
		check(kind == SROCE_AETH_ACK);
		check(ack.acked);
		check(sroce_psn_in_range(ack.acked_psn, una, outstanding));
		break;
	case SROCE_RC_ACK_RETRY:
	case SROCE_RC_ACK_RNR:
	case SROCE_RC_ACK_ERROR:
		check(kind == (ack.action == SROCE_RC_ACK_RNR ?
				       SROCE_AETH_RNR_NAK : SROCE_AETH_NAK));
		check(sroce_psn_in_range(psn, una, outstanding));
		check(ack.acked == (sroce_psn_mask(psn) != una));
		if (ack.acked)
			check(ack.acked_psn == sroce_psn_sub(psn, 1));
		if (ack.action == SROCE_RC_ACK_ERROR)
			check(ack.status != SROCE_WC_SUCCESS);
		if (ack.action == SROCE_RC_ACK_RNR)
			check(ack.rnr_us == sroce_hdr_rnr_timer_us(
						    sroce_hdr_syndrome_value(syndrome)));
		break;
	}
}

void uc_responder(const sroce_rc_resp_state &st0, const sroce_pkt &pkt,
		  sroce_drop reason)
{
	sroce_rc_resp_state st = st0;
	bool lost = true;
	const sroce_uc_resp_action a = sroce_uc_resp_decide(&st, &pkt, reason,
							    &lost);

	check(a == SROCE_UC_RESP_EXECUTE || a == SROCE_UC_RESP_DROP);
	if (!is_request_of(pkt, SROCE_TRANSPORT_UC) ||
	    reason != SROCE_DROP_NONE) {
		check(a == SROCE_UC_RESP_DROP);
		check(!lost);
		check(st.epsn == st0.epsn && st.seq == st0.seq);
		return;
	}
	if (lost)
		check(st0.seq != SROCE_RC_SEQ_IDLE);
	if (a == SROCE_UC_RESP_DROP) {
		// a packet that continues a message it cannot belong to
		check(!starts(pkt));
		check(st.seq == SROCE_RC_SEQ_IDLE);
		return;
	}
	if (st.epsn != st0.epsn || lost || st.seq != st0.seq) {
		// resynchronised: only to a message's start, at its PSN
		check(starts(pkt));
		check(st.epsn == pkt.bth.psn);
		check(st.seq == SROCE_RC_SEQ_IDLE);
	} else {
		check(pkt.bth.psn == st0.epsn);
	}
}

// Everything the requester may put on the wire parses as a request of its
// transport.  Cheap: one of 4 transports x 10 messages x 4 flag pairs per
// input.
void requester_opcodes(uint8_t pick)
{
	const sroce_transport tr[] = {SROCE_TRANSPORT_RC, SROCE_TRANSPORT_UC,
				      SROCE_TRANSPORT_UD, SROCE_TRANSPORT_XRC};
	const sroce_transport t = tr[pick % 4];

	for (int m = 0; m < SROCE_RC_MSG_NR; m++) {
		for (int fl = 0; fl < 4; fl++) {
			const bool first = fl & 1, last = fl & 2;
			const uint8_t opc = sroce_req_opcode(
				t, sroce_rc_msg(m), first, last);
			if (t == SROCE_TRANSPORT_XRC) {
				const uint8_t rc = sroce_rc_req_opcode(
					sroce_rc_msg(m), first, last);
				const bool placement =
					m == SROCE_RC_MSG_FLUSH ||
					m == SROCE_RC_MSG_ATOMIC_WRITE;
				check(opc == (placement ? 0xff : (0xa0 | rc)));
			}
			if (t == SROCE_TRANSPORT_RC || t == SROCE_TRANSPORT_XRC)
				check(opc != 0xff ||
				      (t == SROCE_TRANSPORT_XRC &&
				       (m == SROCE_RC_MSG_FLUSH ||
					m == SROCE_RC_MSG_ATOMIC_WRITE)));
			if (opc == 0xff)
				continue;
			const sroce_opcode_info *op = sroce_opcode_lookup(opc);
			check(op != nullptr);
			check(op->transport == t);
			check(op->flags & SROCE_OPF_REQUEST);
			check(sroce_opcode_has(op, SROCE_EXT_XRCETH) ==
			      (t == SROCE_TRANSPORT_XRC));
			if (t == SROCE_TRANSPORT_XRC)
				check(op->off[SROCE_EXT_XRCETH] == SROCE_BTH_LEN);
			// READ, atomics, FLUSH and ATOMIC WRITE are one
			// packet whatever is asked
			if (m == SROCE_RC_MSG_READ || m == SROCE_RC_MSG_CMP_SWAP ||
			    m == SROCE_RC_MSG_FETCH_ADD ||
			    m == SROCE_RC_MSG_FLUSH ||
			    m == SROCE_RC_MSG_ATOMIC_WRITE) {
				check((op->flags & SROCE_OPF_ONLY) ==
				      SROCE_OPF_ONLY);
				continue;
			}
			check(bool(op->flags & SROCE_OPF_FIRST) == first);
			check(bool(op->flags & SROCE_OPF_LAST) == last);
		}
	}
}

// The responder's opcodes: an RC response opcode stays itself on RC and
// becomes the XRC response of the same kind and position on XRC.
void responder_opcodes(uint8_t pick)
{
	const uint8_t rc = uint8_t(0x0d + pick % 6);	// READ RESPONSE ... ATOMIC ACK
	const sroce_opcode_info *r = sroce_opcode_lookup(rc);
	const uint8_t xrc = sroce_resp_opcode(SROCE_TRANSPORT_XRC, rc);
	const sroce_opcode_info *x = sroce_opcode_lookup(xrc);

	check(sroce_resp_opcode(SROCE_TRANSPORT_RC, rc) == rc);
	check(r != nullptr && x != nullptr);
	check(x->transport == SROCE_TRANSPORT_XRC);
	check(x->flags & SROCE_OPF_RESPONSE);
	check(x->kind == r->kind && x->flags == r->flags);
	check(x->hdrs == r->hdrs && x->hdr_len == r->hdr_len);
	check(!sroce_opcode_has(x, SROCE_EXT_XRCETH));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < kStateLen || size > 16384)
		return -1;

	const uint32_t una = psn24(data), next = psn24(data + 3);
	sroce_rc_resp_state st{};
	st.epsn = psn24(data + 6);
	st.seq = sroce_rc_seq(data[9] % 3);
	st.nak_sent = data[9] & 0x80;
	const uint32_t pmtu = 256u << (data[10] % 5);
	uint8_t syndrome = data[11];

	const uint8_t *bytes = data + kStateLen;
	const size_t len = size - kStateLen;
	sroce_pkt pkt;
	std::memset(&pkt, 0, sizeof(pkt));
	const sroce_drop reason = sroce_pkt_parse(bytes, uint32_t(len), &pkt);
	const bool parsed = reason == SROCE_DROP_NONE ||
			    sroce_pkt_drop_is_request_error(reason);
	if (!parsed)
		pkt.op = nullptr;	// what the receive path never acts on

	rc_responder(st, pkt, reason, pmtu);
	uc_responder(st, pkt, reason);
	uint32_t psn = psn24(data + 6);
	if (parsed && (pkt.op->hdrs & SROCE_HDR_AETH)) {
		syndrome = pkt.aeth.syndrome;
		psn = pkt.bth.psn;
	}
	rc_requester(una, next, psn, syndrome);
	requester_opcodes(data[11]);
	responder_opcodes(data[10]);
	return 0;
}
