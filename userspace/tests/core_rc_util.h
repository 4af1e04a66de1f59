// What the tests of the RC transport decisions (kernel/core/rc.c) share:
// PSN arithmetic, the opcodes of each message, packet counts and AETH
// syndromes restated from IBTA Vol. 1, 9.7 (reliable service) and 9.9
// (responder), independently of the code, and the building and parsing of
// responder packets (byte by byte, through sroce_pkt_parse(), as on the
// receive path).  Used by core_rc_req_test.cc, core_rc_ack_test.cc and
// core_rc_resp_test.cc.
#ifndef SROCE_TEST_CORE_RC_UTIL_H
#define SROCE_TEST_CORE_RC_UTIL_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define SROCE_TEST_HAVE_VERBS 1
#endif

#include "core_test_util.h"

extern "C" {
#include "kernel/core/rc.h"
}

namespace sroce_test::rc {

inline constexpr uint32_t kSpace = 1u << 24;
inline constexpr uint32_t kMask = kSpace - 1;
inline constexpr uint32_t kHalf = 1u << 23;
inline constexpr uint64_t kMaxMsg = 1ull << 31;
inline const uint32_t kPmtus[] = {256, 512, 1024, 2048, 4096};

// psn + n modulo 2^24, n may be negative.
inline uint32_t at(uint32_t psn, int64_t n)
{
	return static_cast<uint32_t>((int64_t(psn) + n) & kMask);
}

// IBTA 9.2 opcode numbers of each message, restated: only, first, middle,
// last.  Only the last (or only) packet carries ImmDt or IETH; READ, the
// atomics, FLUSH and ATOMIC WRITE (IBTA A19) are one request packet
// whatever their length.
struct MsgOps {
	sroce_rc_msg msg;
	const char *name;
	uint8_t only, first, middle, last;
	bool multi;	// can span several request packets
};

inline const MsgOps kMsgOps[] = {
	{SROCE_RC_MSG_SEND, "SEND", 0x04, 0x00, 0x01, 0x02, true},
	{SROCE_RC_MSG_SEND_IMM, "SEND_IMM", 0x05, 0x00, 0x01, 0x03, true},
	{SROCE_RC_MSG_SEND_INV, "SEND_INV", 0x17, 0x00, 0x01, 0x16, true},
	{SROCE_RC_MSG_WRITE, "WRITE", 0x0a, 0x06, 0x07, 0x08, true},
	{SROCE_RC_MSG_WRITE_IMM, "WRITE_IMM", 0x0b, 0x06, 0x07, 0x09, true},
	{SROCE_RC_MSG_READ, "READ", 0x0c, 0x0c, 0x0c, 0x0c, false},
	{SROCE_RC_MSG_CMP_SWAP, "CMP_SWAP", 0x13, 0x13, 0x13, 0x13, false},
	{SROCE_RC_MSG_FETCH_ADD, "FETCH_ADD", 0x14, 0x14, 0x14, 0x14, false},
	{SROCE_RC_MSG_FLUSH, "FLUSH", 0x1c, 0x1c, 0x1c, 0x1c, false},
	{SROCE_RC_MSG_ATOMIC_WRITE, "ATOMIC_WRITE", 0x1d, 0x1d, 0x1d, 0x1d,
	 false},
};
static_assert(std::size(kMsgOps) == SROCE_RC_MSG_NR);

// A message is cut into PMTU-sized packets; the last carries the rest (up
// to a whole PMTU), and an empty message is still one packet.
inline uint64_t naive_npkts(uint64_t len, uint32_t pmtu)
{
	uint64_t n = 1;

	while (len > pmtu) {
		len -= pmtu;
		n++;
	}
	return n;
}

// AETH syndromes written out bit by bit (IBTA 9.3.5): bit 7 reserved, bits
// 6:5 = 00 ACK (credit code), 01 RNR NAK (timer code), 11 NAK (code).
inline constexpr uint8_t ack_syn(uint8_t credit = 31)
{
	return credit & 0x1f;
}

inline constexpr uint8_t rnr_syn(uint8_t timer)
{
	return 0x20 | (timer & 0x1f);
}

inline constexpr uint8_t nak_syn(uint8_t code)
{
	return 0x60 | (code & 0x1f);
}

inline constexpr uint8_t kNakSeq = 0, kNakInvReq = 1, kNakRemAccess = 2,
	kNakRemOp = 3, kNakInvRd = 4;

struct Parsed {
	sroce_drop reason;
	sroce_pkt pkt;
};

// Parses from an exactly-sized heap copy, as the receive path would.
inline Parsed parse(const PacketSpec &s)
{
	const Bytes b = sroce_test::build_udp_payload(s);
	auto copy = std::make_unique<uint8_t[]>(b.size());
	Parsed p{};

	std::memcpy(copy.get(), b.data(), b.size());
	p.reason = sroce_pkt_parse(copy.get(), uint32_t(b.size()), &p.pkt);
	return p;
}

// A well-formed packet of the opcode: first/middle carry a 1024-byte PMTU,
// WRITE first announces more than it carries, READ asks for 3000 bytes.
inline PacketSpec spec_for(uint8_t opcode, uint32_t psn)
{
	const SpecOp *op = sroce_test::spec_op(opcode);
	PacketSpec s;

	if (!op)
		throw std::invalid_argument("opcode");
	s.opcode = opcode;
	s.psn = psn;
	if (op->payload)
		s.payload = (op->pos == Pos::First || op->pos == Pos::Middle) ?
			1024 : 40;
	s.dma_len = uint32_t(op->pos == Pos::First ? 4 * s.payload : s.payload);
	if (opcode == 0x0c || opcode == 0xac)
		s.dma_len = 3000;
	return s;
}

inline Parsed must_parse(const PacketSpec &s)
{
	Parsed p = parse(s);

	if (p.reason != SROCE_DROP_NONE || !p.pkt.op)
		throw std::runtime_error(std::string("test packet dropped: ") +
					 sroce_pkt_drop_name(p.reason));
	return p;
}

inline Parsed good(uint8_t opcode, uint32_t psn)
{
	return must_parse(spec_for(opcode, psn));
}

inline std::string resp_str(sroce_rc_resp_action a)
{
	switch (a) {
	case SROCE_RC_RESP_EXECUTE:
		return "EXECUTE";
	case SROCE_RC_RESP_DUPLICATE:
		return "DUPLICATE";
	case SROCE_RC_RESP_NAK_SEQ:
		return "NAK_SEQ";
	case SROCE_RC_RESP_DROP:
		return "DROP";
	case SROCE_RC_RESP_NAK_INVALID:
		return "NAK_INVALID";
	}
	return "resp_action " + std::to_string(int(a));
}

#define EXPECT_RESP(got, want) EXPECT_EQ(resp_str(got), resp_str(want))

inline const char *seq_str(sroce_rc_seq s)
{
	switch (s) {
	case SROCE_RC_SEQ_IDLE:
		return "IDLE";
	case SROCE_RC_SEQ_SEND:
		return "SEND";
	case SROCE_RC_SEQ_WRITE:
		return "WRITE";
	}
	return "?";
}

inline sroce_rc_resp_action decide(uint32_t epsn, sroce_rc_seq seq, bool nak_sent,
				   const Parsed &p)
{
	const sroce_rc_resp_state st = {epsn, seq, nak_sent};

	return sroce_rc_resp_decide(&st, &p.pkt, p.reason);
}

inline const sroce_rc_seq kSeqs[] = {SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_SEND,
				     SROCE_RC_SEQ_WRITE};

// Every RC request opcode.
inline const uint8_t kRcRequests[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
				      0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x13,
				      0x14, 0x16, 0x17};

// Every XRC request opcode (IBTA Annex A14): RC's with transport 101b,
// without FLUSH and ATOMIC WRITE.  The responder treats them as RC's, so
// the rules below take either (by their low five bits).
inline const uint8_t kXrcRequests[] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5,
				       0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab,
				       0xac, 0xb3, 0xb4, 0xb6, 0xb7};

// Both.
inline std::vector<uint8_t> reliable_requests()
{
	std::vector<uint8_t> v(std::begin(kRcRequests), std::end(kRcRequests));

	v.insert(v.end(), std::begin(kXrcRequests), std::end(kXrcRequests));
	return v;
}

// The responder's opcode sequence rules (IBTA 9.8.3 / 9.9.3.2), restated:
// between messages anything that starts one (FIRST, ONLY, READ request,
// atomics); inside a SEND only SEND MIDDLE or LAST; inside an RDMA WRITE
// only WRITE MIDDLE or LAST.  op is an RC or XRC request.
inline bool fits(sroce_rc_seq seq, uint8_t op)
{
	op &= 0x1f;
	switch (seq) {
	case SROCE_RC_SEQ_IDLE:
		for (uint8_t o : {0x00, 0x04, 0x05, 0x17, 0x06, 0x0a, 0x0b, 0x0c,
				  0x13, 0x14})
			if (o == op)
				return true;
		return false;
	case SROCE_RC_SEQ_SEND:
		return op == 0x01 || op == 0x02 || op == 0x03 || op == 0x16;
	case SROCE_RC_SEQ_WRITE:
		return op == 0x07 || op == 0x08 || op == 0x09;
	}
	return false;
}

// Where the responder is after executing op (RC or XRC).
inline sroce_rc_seq after(uint8_t op)
{
	op &= 0x1f;
	if (op == 0x00 || op == 0x01)
		return SROCE_RC_SEQ_SEND;
	if (op == 0x06 || op == 0x07)
		return SROCE_RC_SEQ_WRITE;
	return SROCE_RC_SEQ_IDLE;
}

} // namespace sroce_test::rc

#endif
