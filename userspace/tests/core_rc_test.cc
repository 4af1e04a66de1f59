// RC transport decisions (kernel/core/rc.c): requester opcodes, packet
// counts, the local ACK timer, retry counters, ACK/NAK interpretation, and
// the responder's PSN and opcode-sequence classification.  Expectations
// restate IBTA Vol. 1, 9.7 (reliable service) and 9.9 (responder) here,
// independently of the code; packets for the responder are built byte by
// byte and go through sroce_pkt_parse(), as on the receive path.
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

namespace {

using sroce_test::Bytes;
using sroce_test::PacketSpec;
using sroce_test::Pos;
using sroce_test::SpecOp;

constexpr uint32_t kSpace = 1u << 24;
constexpr uint32_t kMask = kSpace - 1;
constexpr uint32_t kHalf = 1u << 23;
constexpr uint64_t kMaxMsg = 1ull << 31;
const uint32_t kPmtus[] = {256, 512, 1024, 2048, 4096};

// psn + n modulo 2^24, n may be negative.
uint32_t at(uint32_t psn, int64_t n)
{
	return static_cast<uint32_t>((int64_t(psn) + n) & kMask);
}

// ---------------------------------------------------------------------
// Requester: opcodes, packet counts, timer, retry counters
// ---------------------------------------------------------------------

// IBTA 9.2 opcode numbers of each message, restated: only, first, middle,
// last.  Only the last (or only) packet carries ImmDt or IETH; READ and the
// atomics are one request packet whatever their length.
struct MsgOps {
	sroce_rc_msg msg;
	const char *name;
	uint8_t only, first, middle, last;
	bool multi;	// can span several request packets
};

const MsgOps kMsgOps[] = {
	{SROCE_RC_MSG_SEND, "SEND", 0x04, 0x00, 0x01, 0x02, true},
	{SROCE_RC_MSG_SEND_IMM, "SEND_IMM", 0x05, 0x00, 0x01, 0x03, true},
	{SROCE_RC_MSG_SEND_INV, "SEND_INV", 0x17, 0x00, 0x01, 0x16, true},
	{SROCE_RC_MSG_WRITE, "WRITE", 0x0a, 0x06, 0x07, 0x08, true},
	{SROCE_RC_MSG_WRITE_IMM, "WRITE_IMM", 0x0b, 0x06, 0x07, 0x09, true},
	{SROCE_RC_MSG_READ, "READ", 0x0c, 0x0c, 0x0c, 0x0c, false},
	{SROCE_RC_MSG_CMP_SWAP, "CMP_SWAP", 0x13, 0x13, 0x13, 0x13, false},
	{SROCE_RC_MSG_FETCH_ADD, "FETCH_ADD", 0x14, 0x14, 0x14, 0x14, false},
};
static_assert(std::size(kMsgOps) == SROCE_RC_MSG_NR);

TEST(CoreRc, ReqOpcodeEveryMessageAndPosition)
{
	for (const MsgOps &m : kMsgOps) {
		SCOPED_TRACE(m.name);
		const struct {
			bool first, last;
			uint8_t want;
			Pos pos;
		} cases[] = {
			{true, true, m.only, Pos::Only},
			{true, false, m.first, Pos::First},
			{false, false, m.middle, Pos::Middle},
			{false, true, m.last, Pos::Last},
		};

		for (const auto &c : cases) {
			const uint8_t op = sroce_rc_req_opcode(m.msg, c.first, c.last);

			EXPECT_EQ(op, c.want) << "first " << c.first << " last " << c.last;
			// ... and the spec table agrees it is an RC request
			// sitting at that position of its message
			const SpecOp *s = sroce_test::spec_op(op);
			ASSERT_NE(s, nullptr);
			EXPECT_EQ(s->transport, 'R');
			EXPECT_TRUE(s->request);
			EXPECT_EQ(s->pos, m.multi ? c.pos : Pos::Only) << s->name;
		}
	}
}

TEST(CoreRc, ReqOpcodeInvalidMessage)
{
	// Values an enum of this range can hold in C++ without UB; the C
	// caller may pass anything, the check is an unsigned compare.
	for (int m : {int(SROCE_RC_MSG_NR), int(SROCE_RC_MSG_NR) + 1, 15})
		for (bool first : {false, true})
			for (bool last : {false, true})
				EXPECT_EQ(sroce_rc_req_opcode(static_cast<sroce_rc_msg>(m),
							      first, last), 0xff)
					<< m << first << last;
}

TEST(CoreRc, ReadResponseOpcodes)
{
	EXPECT_EQ(sroce_rc_read_resp_opcode(true, true), 0x10);	// only
	EXPECT_EQ(sroce_rc_read_resp_opcode(true, false), 0x0d);	// first
	EXPECT_EQ(sroce_rc_read_resp_opcode(false, false), 0x0e);	// middle
	EXPECT_EQ(sroce_rc_read_resp_opcode(false, true), 0x0f);	// last
	for (bool first : {false, true})
		for (bool last : {false, true}) {
			const SpecOp *s = sroce_test::spec_op(
				sroce_rc_read_resp_opcode(first, last));

			ASSERT_NE(s, nullptr);
			EXPECT_TRUE(s->response);
			EXPECT_EQ(s->reply, 0);
			EXPECT_EQ(s->exts.empty(), !first && !last) << s->name;
		}
}

// A message is cut into PMTU-sized packets; the last carries the rest (up
// to a whole PMTU), and an empty message is still one packet.
uint64_t naive_npkts(uint64_t len, uint32_t pmtu)
{
	uint64_t n = 1;

	while (len > pmtu) {
		len -= pmtu;
		n++;
	}
	return n;
}

TEST(CoreRc, NpktsBoundaries)
{
	for (uint32_t pmtu : kPmtus) {
		SCOPED_TRACE(pmtu);
		const struct {
			uint64_t len;
			uint32_t want;
		} cases[] = {
			{0, 1},
			{1, 1},
			{pmtu - 1, 1},
			{pmtu, 1},
			{pmtu + 1, 2},
			{2ull * pmtu, 2},
			{2ull * pmtu + 1, 3},
			{kMaxMsg - 1, uint32_t(kMaxMsg / pmtu)},
			{kMaxMsg, uint32_t(kMaxMsg / pmtu)},
			{kMaxMsg + 1, uint32_t(kMaxMsg / pmtu) + 1},
		};

		for (const auto &c : cases)
			EXPECT_EQ(sroce_rc_npkts(c.len, pmtu), c.want) << c.len;
		for (uint64_t len = 0; len <= 3ull * pmtu + 1; len++)
			ASSERT_EQ(sroce_rc_npkts(len, pmtu), naive_npkts(len, pmtu))
				<< len;
	}
	// the largest message at the smallest MTU: 2^23 PSNs, half the space
	EXPECT_EQ(sroce_rc_npkts(kMaxMsg, 256), kHalf);
}

// Local ACK timeout (IBTA 9.7.6.1.3): 4.096 us * 2^timeout; 0 = no timer.
TEST(CoreRc, TimeoutMicroseconds)
{
	EXPECT_EQ(sroce_rc_timeout_us(0), 0u);
	EXPECT_EQ(sroce_rc_timeout_us(1), 9u);		// 8.192 us
	EXPECT_EQ(sroce_rc_timeout_us(2), 17u);		// 16.384 us
	EXPECT_EQ(sroce_rc_timeout_us(14), 67109u);	// 67.108864 ms
	EXPECT_EQ(sroce_rc_timeout_us(18), 1073742u);	// 1.073741824 s
	EXPECT_EQ(sroce_rc_timeout_us(31), 8796093023ull); // 8796.09 s

	// every code: rounded up to whole microseconds, never early
	for (uint8_t t = 1; t <= 31; t++) {
		const uint64_t ns = 4096ull << t;
		const uint64_t us = sroce_rc_timeout_us(t);

		EXPECT_GE(us * 1000, ns) << int(t);
		EXPECT_LT((us - 1) * 1000, ns) << int(t);
		EXPECT_GT(us, sroce_rc_timeout_us(t - 1)) << int(t);
	}
	// the field is 5 bits: anything larger is the longest timeout, never
	// "off" and never a shorter one
	for (uint8_t t : {32, 33, 63, 64, 128, 255})
		EXPECT_EQ(sroce_rc_timeout_us(t), sroce_rc_timeout_us(31)) << int(t);
}

// How many retries a counter starting at start allows (capped at cap).
int retries(uint8_t start, bool infinite7, uint8_t *end, int cap = 1000)
{
	uint8_t left = start;
	int n = 0;

	while (n < cap && sroce_rc_retry_consume(&left, infinite7))
		n++;
	*end = left;
	return n;
}

TEST(CoreRc, RetryConsume)
{
	uint8_t end;

	// retry_cnt is always finite: 7 means seven retries
	for (uint8_t start = 0; start <= 7; start++) {
		EXPECT_EQ(retries(start, false, &end), start);
		EXPECT_EQ(end, 0);
		EXPECT_FALSE(sroce_rc_retry_consume(&end, false));
		EXPECT_EQ(end, 0) << "an exhausted counter stays at 0";
	}
	// rnr_retry 0..6 is finite too ...
	for (uint8_t start = 0; start <= 6; start++) {
		EXPECT_EQ(retries(start, true, &end), start);
		EXPECT_EQ(end, 0);
	}
	// ... and 7 retries for ever without being consumed
	EXPECT_EQ(retries(7, true, &end, 100000), 100000);
	EXPECT_EQ(end, 7);

	// step by step
	uint8_t left = 3;

	EXPECT_TRUE(sroce_rc_retry_consume(&left, false));
	EXPECT_EQ(left, 2);
	EXPECT_TRUE(sroce_rc_retry_consume(&left, true));
	EXPECT_EQ(left, 1);
	EXPECT_TRUE(sroce_rc_retry_consume(&left, false));
	EXPECT_EQ(left, 0);
	EXPECT_FALSE(sroce_rc_retry_consume(&left, true));
	EXPECT_EQ(left, 0);
}

// ---------------------------------------------------------------------
// Requester: ACK and NAK interpretation
// ---------------------------------------------------------------------

// AETH syndromes written out bit by bit (IBTA 9.3.5): bit 7 reserved, bits
// 6:5 = 00 ACK (credit code), 01 RNR NAK (timer code), 11 NAK (code).
constexpr uint8_t ack_syn(uint8_t credit = 31)
{
	return credit & 0x1f;
}

constexpr uint8_t rnr_syn(uint8_t timer)
{
	return 0x20 | (timer & 0x1f);
}

constexpr uint8_t nak_syn(uint8_t code)
{
	return 0x60 | (code & 0x1f);
}

constexpr uint8_t kNakSeq = 0, kNakInvReq = 1, kNakRemAccess = 2,
	kNakRemOp = 3, kNakInvRd = 4;

std::string ack_str(sroce_rc_ack_action a)
{
	switch (a) {
	case SROCE_RC_ACK_STALE:
		return "STALE";
	case SROCE_RC_ACK_ADVANCE:
		return "ADVANCE";
	case SROCE_RC_ACK_RETRY:
		return "RETRY";
	case SROCE_RC_ACK_RNR:
		return "RNR";
	case SROCE_RC_ACK_ERROR:
		return "ERROR";
	}
	return "ack_action " + std::to_string(int(a));
}

#define EXPECT_ACK(got, want) EXPECT_EQ(ack_str(got), ack_str(want))

sroce_rc_ack ack_decide(uint32_t una, uint32_t next, uint32_t psn, uint8_t syn)
{
	sroce_rc_ack out;

	// poison: every field the result reports must be written
	std::memset(static_cast<void *>(&out), 0x5a, sizeof(out));
	sroce_rc_ack_decide(una, next, psn, syn, &out);
	return out;
}

// Outstanding windows [una, una + n): small, large, and across the wrap.
struct Window {
	uint32_t una, n;
};

const Window kWindows[] = {
	{0, 1}, {0, 10}, {5, 3}, {0x123456, 1000},
	{0xffffff, 1},		// una at the top, next = 0
	{0xffffff, 2},		// [0xffffff, 0]
	{0xfffffe, 4},		// [0xfffffe, 1]
	{0xfffff0, 0x20},
	{0x7ffffe, 4},		// across the half
	{0x800000, 100},
	{0xabcdef, kHalf},	// the largest window IBTA allows
};

// Offsets into a window worth testing: both ends and the middle.
std::vector<uint32_t> offsets(uint32_t n)
{
	std::vector<uint32_t> v = {0};

	if (n > 2)
		v.push_back(n / 2);
	if (n > 1)
		v.push_back(n - 1);
	return v;
}

TEST(CoreRc, AckInWindowAdvances)
{
	for (const Window &w : kWindows) {
		const uint32_t next = at(w.una, w.n);

		for (uint32_t k : offsets(w.n)) {
			for (uint8_t credit : {0, 1, 17, 30, 31}) {
				const uint32_t psn = at(w.una, k);
				const sroce_rc_ack a =
					ack_decide(w.una, next, psn, ack_syn(credit));

				SCOPED_TRACE(testing::Message() << std::hex << "una " << w.una
					     << " next " << next << " psn " << psn);
				EXPECT_ACK(a.action, SROCE_RC_ACK_ADVANCE);
				EXPECT_TRUE(a.acked);
				EXPECT_EQ(a.acked_psn, psn);
				EXPECT_EQ(a.psn, psn);
			}
		}
	}
}

TEST(CoreRc, AckOutsideWindowIsStale)
{
	for (const Window &w : kWindows) {
		const uint32_t next = at(w.una, w.n);
		// una - 1 was acknowledged already (a re-ACK of a duplicate);
		// next and beyond were never sent
		std::vector<uint32_t> psns = {at(w.una, -1), at(w.una, -2), next,
					      at(next, 1), at(w.una, -int64_t(kHalf))};

		if (w.n < kHalf)
			psns.push_back(at(w.una, kHalf));
		for (uint32_t psn : psns) {
			const sroce_rc_ack a = ack_decide(w.una, next, psn, ack_syn());

			EXPECT_ACK(a.action, SROCE_RC_ACK_STALE)
				<< std::hex << "una " << w.una << " next " << next
				<< " psn " << psn;
			EXPECT_FALSE(a.acked);
		}
	}
}

TEST(CoreRc, AckWindowAcrossTheWrap)
{
	// outstanding 0xfffffe, 0xffffff, 0, 1
	const uint32_t una = 0xfffffe, next = 2;
	const struct {
		uint32_t psn;
		sroce_rc_ack_action want;
	} cases[] = {
		{0xfffffc, SROCE_RC_ACK_STALE},
		{0xfffffd, SROCE_RC_ACK_STALE},		// una - 1
		{0xfffffe, SROCE_RC_ACK_ADVANCE},
		{0xffffff, SROCE_RC_ACK_ADVANCE},
		{0x000000, SROCE_RC_ACK_ADVANCE},
		{0x000001, SROCE_RC_ACK_ADVANCE},
		{0x000002, SROCE_RC_ACK_STALE},		// next
		{0x000003, SROCE_RC_ACK_STALE},
		{0x7ffffe, SROCE_RC_ACK_STALE},
	};

	for (const auto &c : cases) {
		const sroce_rc_ack a = ack_decide(una, next, c.psn, ack_syn());

		EXPECT_ACK(a.action, c.want) << std::hex << c.psn;
		if (c.want == SROCE_RC_ACK_ADVANCE) {
			EXPECT_EQ(a.acked_psn, c.psn);
		}
	}
	// a NAK across the wrap acknowledges what precedes it
	sroce_rc_ack a = ack_decide(una, next, 0, nak_syn(kNakSeq));

	EXPECT_ACK(a.action, SROCE_RC_ACK_RETRY);
	EXPECT_TRUE(a.acked);
	EXPECT_EQ(a.acked_psn, 0xffffffu);
	a = ack_decide(una, next, 1, rnr_syn(3));
	EXPECT_ACK(a.action, SROCE_RC_ACK_RNR);
	EXPECT_EQ(a.acked_psn, 0u);
	a = ack_decide(una, next, 0xfffffd, nak_syn(kNakSeq));
	EXPECT_ACK(a.action, SROCE_RC_ACK_STALE);
	a = ack_decide(una, next, 2, nak_syn(kNakSeq));
	EXPECT_ACK(a.action, SROCE_RC_ACK_STALE);
}

TEST(CoreRc, EmptyWindowIsStale)
{
	for (uint32_t una : {0u, 1u, 0xffffffu, kHalf, 0x123456u}) {
		for (int64_t d = -3; d <= 3; d++) {
			for (unsigned syn = 0; syn < 256; syn++) {
				const uint32_t psn = at(una, d);
				const sroce_rc_ack a =
					ack_decide(una, una, psn, uint8_t(syn));

				EXPECT_ACK(a.action, SROCE_RC_ACK_STALE)
					<< std::hex << "una " << una << " psn " << psn
					<< " syndrome " << syn;
				EXPECT_FALSE(a.acked);
			}
		}
	}
}

TEST(CoreRc, NakSequenceError)
{
	for (const Window &w : kWindows) {
		const uint32_t next = at(w.una, w.n);

		for (uint32_t k : offsets(w.n)) {
			const uint32_t psn = at(w.una, k);
			const sroce_rc_ack a =
				ack_decide(w.una, next, psn, nak_syn(kNakSeq));

			SCOPED_TRACE(testing::Message() << std::hex << "una " << w.una
				     << " next " << next << " psn " << psn);
			EXPECT_ACK(a.action, SROCE_RC_ACK_RETRY);
			EXPECT_EQ(a.psn, psn);
			// the NAK implicitly acknowledges every PSN before it
			EXPECT_EQ(a.acked, k != 0);
			if (k) {
				EXPECT_EQ(a.acked_psn, at(psn, -1));
			}
		}
	}
}

TEST(CoreRc, RnrNakCarriesTheTimer)
{
	const uint32_t una = 0xfffffe, next = 0x10;

	for (uint8_t code = 0; code < 32; code++) {
		SCOPED_TRACE(int(code));
		sroce_rc_ack a = ack_decide(una, next, una, rnr_syn(code));

		EXPECT_ACK(a.action, SROCE_RC_ACK_RNR);
		EXPECT_FALSE(a.acked);
		EXPECT_EQ(a.psn, una);
		EXPECT_EQ(a.rnr_us, sroce_hdr_rnr_timer_us(code));

		a = ack_decide(una, next, 3, rnr_syn(code));
		EXPECT_ACK(a.action, SROCE_RC_ACK_RNR);
		EXPECT_TRUE(a.acked);
		EXPECT_EQ(a.acked_psn, 2u);
		EXPECT_EQ(a.psn, 3u);
		EXPECT_EQ(a.rnr_us, sroce_hdr_rnr_timer_us(code));
	}
	// IBTA's table: code 0 is the longest wait, then 0.01 ms upwards
	EXPECT_EQ(ack_decide(una, next, una, rnr_syn(0)).rnr_us, 655360u);
	EXPECT_EQ(ack_decide(una, next, una, rnr_syn(1)).rnr_us, 10u);
	EXPECT_EQ(ack_decide(una, next, una, rnr_syn(14)).rnr_us, 1280u);
	EXPECT_EQ(ack_decide(una, next, una, rnr_syn(25)).rnr_us, 61440u);
	EXPECT_EQ(ack_decide(una, next, una, rnr_syn(31)).rnr_us, 491520u);
}

// The completion status of each fatal NAK code.
struct FatalNak {
	uint8_t code;
	sroce_wc_status status;
	int ibv;	// the value libibverbs gives it
};

const FatalNak kFatalNaks[] = {
	{kNakInvReq, SROCE_WC_REM_INV_REQ_ERR, 9},
	{kNakRemAccess, SROCE_WC_REM_ACCESS_ERR, 10},
	{kNakRemOp, SROCE_WC_REM_OP_ERR, 11},
	// invalid RD request: RC has no RD; the peer's request was invalid
	{kNakInvRd, SROCE_WC_REM_INV_REQ_ERR, 9},
};

TEST(CoreRc, FatalNaks)
{
	for (const FatalNak &f : kFatalNaks) {
		SCOPED_TRACE(int(f.code));
		for (const Window &w : kWindows) {
			const uint32_t next = at(w.una, w.n);

			for (uint32_t k : offsets(w.n)) {
				const uint32_t psn = at(w.una, k);
				const sroce_rc_ack a =
					ack_decide(w.una, next, psn, nak_syn(f.code));

				EXPECT_ACK(a.action, SROCE_RC_ACK_ERROR);
				EXPECT_EQ(a.status, f.status);
				EXPECT_EQ(int(a.status), f.ibv);
				EXPECT_EQ(a.psn, psn);
				EXPECT_EQ(a.acked, k != 0);
				if (k) {
					EXPECT_EQ(a.acked_psn, at(psn, -1));
				}
			}
			// outside the window the NAK is nobody's
			EXPECT_ACK(ack_decide(w.una, next, at(w.una, -1),
					      nak_syn(f.code)).action,
				   SROCE_RC_ACK_STALE);
			EXPECT_ACK(ack_decide(w.una, next, next,
					      nak_syn(f.code)).action,
				   SROCE_RC_ACK_STALE);
		}
	}
}

TEST(CoreRc, NakOutsideWindowIsStale)
{
	for (const Window &w : kWindows) {
		const uint32_t next = at(w.una, w.n);

		for (uint8_t syn : {nak_syn(kNakSeq), rnr_syn(0), rnr_syn(31),
				    nak_syn(kNakInvReq), nak_syn(kNakRemOp)}) {
			for (uint32_t psn : {at(w.una, -1), next, at(next, 1),
					     at(w.una, -int64_t(kHalf))}) {
				const sroce_rc_ack a = ack_decide(w.una, next, psn, syn);

				EXPECT_ACK(a.action, SROCE_RC_ACK_STALE)
					<< std::hex << "una " << w.una << " next " << next
					<< " psn " << psn << " syndrome " << int(syn);
				EXPECT_FALSE(a.acked);
			}
		}
	}
}

// Every syndrome, classified from the bit layout alone.
sroce_rc_ack_action ref_action(uint8_t syn)
{
	if (syn & 0x80)
		return SROCE_RC_ACK_STALE;		// reserved bit
	switch ((syn >> 5) & 3) {
	case 0:
		return SROCE_RC_ACK_ADVANCE;
	case 1:
		return SROCE_RC_ACK_RNR;
	case 2:
		return SROCE_RC_ACK_STALE;		// reserved kind
	default:
		if ((syn & 0x1f) == kNakSeq)
			return SROCE_RC_ACK_RETRY;
		if ((syn & 0x1f) <= kNakInvRd)
			return SROCE_RC_ACK_ERROR;
		return SROCE_RC_ACK_STALE;		// reserved NAK codes 5-31
	}
}

TEST(CoreRc, EverySyndrome)
{
	const uint32_t una = 0xfffffe, next = 0x10, psn = 0x000005;
	int reserved = 0;

	for (unsigned s = 0; s < 256; s++) {
		const uint8_t syn = uint8_t(s);
		const sroce_rc_ack a = ack_decide(una, next, psn, syn);
		const sroce_rc_ack_action want = ref_action(syn);

		EXPECT_ACK(a.action, want) << "syndrome 0x" << std::hex << s;
		if (want == SROCE_RC_ACK_STALE) {
			reserved++;
			EXPECT_FALSE(a.acked) << s;
		} else {
			EXPECT_TRUE(a.acked) << s;
			EXPECT_EQ(a.acked_psn,
				  want == SROCE_RC_ACK_ADVANCE ? psn : psn - 1) << s;
		}
	}
	// 128 with bit 7, 32 of kind 10b, 27 NAK codes 5..31
	EXPECT_EQ(reserved, 128 + 32 + 27);
}

// 24-bit windows and random PSNs against a model written with plain
// modular arithmetic.
TEST(CoreRc, AckDecideMatchesModel)
{
	std::mt19937 rng(4791);
	std::uniform_int_distribution<uint32_t> any_psn(0, kMask);
	std::uniform_int_distribution<uint32_t> any_len(0, kHalf);
	std::uniform_int_distribution<int> near(-3, 3);
	std::uniform_int_distribution<unsigned> any_syn(0, 255);

	for (int i = 0; i < 100000; i++) {
		const uint32_t una = any_psn(rng);
		const uint32_t n = (i & 1) ? any_len(rng) : any_len(rng) % 8;
		const uint32_t next = at(una, n);
		uint32_t psn;

		switch (i % 4) {
		case 0:
			psn = any_psn(rng);
			break;
		case 1:
			psn = at(una, near(rng));
			break;
		case 2:
			psn = at(next, near(rng));
			break;
		default:
			psn = at(una, n ? any_psn(rng) % n : 0);
			break;
		}
		const uint8_t syn = uint8_t(any_syn(rng));
		const sroce_rc_ack a = ack_decide(una, next, psn, syn);
		const uint32_t off = (psn - una) & kMask;
		sroce_rc_ack_action want = ref_action(syn);

		if (off >= n)
			want = SROCE_RC_ACK_STALE;
		ASSERT_EQ(ack_str(a.action), ack_str(want))
			<< std::hex << "una " << una << " next " << next << " psn "
			<< psn << " syndrome " << unsigned(syn);
		ASSERT_EQ(a.psn, psn);
		if (want == SROCE_RC_ACK_STALE) {
			ASSERT_FALSE(a.acked);
		} else if (want == SROCE_RC_ACK_ADVANCE) {
			ASSERT_TRUE(a.acked);
			ASSERT_EQ(a.acked_psn, psn);
		} else {
			ASSERT_EQ(a.acked, off != 0);
			if (off) {
				ASSERT_EQ(a.acked_psn, at(psn, -1));
			}
		}
	}
}

#ifdef SROCE_TEST_HAVE_VERBS
// rc.h promises the values of enum ibv_wc_status.
static_assert(int(SROCE_WC_SUCCESS) == int(IBV_WC_SUCCESS));
static_assert(int(SROCE_WC_LOC_LEN_ERR) == int(IBV_WC_LOC_LEN_ERR));
static_assert(int(SROCE_WC_LOC_QP_OP_ERR) == int(IBV_WC_LOC_QP_OP_ERR));
static_assert(int(SROCE_WC_LOC_PROT_ERR) == int(IBV_WC_LOC_PROT_ERR));
static_assert(int(SROCE_WC_WR_FLUSH_ERR) == int(IBV_WC_WR_FLUSH_ERR));
static_assert(int(SROCE_WC_BAD_RESP_ERR) == int(IBV_WC_BAD_RESP_ERR));
static_assert(int(SROCE_WC_LOC_ACCESS_ERR) == int(IBV_WC_LOC_ACCESS_ERR));
static_assert(int(SROCE_WC_REM_INV_REQ_ERR) == int(IBV_WC_REM_INV_REQ_ERR));
static_assert(int(SROCE_WC_REM_ACCESS_ERR) == int(IBV_WC_REM_ACCESS_ERR));
static_assert(int(SROCE_WC_REM_OP_ERR) == int(IBV_WC_REM_OP_ERR));
static_assert(int(SROCE_WC_RETRY_EXC_ERR) == int(IBV_WC_RETRY_EXC_ERR));
static_assert(int(SROCE_WC_RNR_RETRY_EXC_ERR) == int(IBV_WC_RNR_RETRY_EXC_ERR));
static_assert(int(SROCE_WC_FATAL_ERR) == int(IBV_WC_FATAL_ERR));
static_assert(int(SROCE_WC_GENERAL_ERR) == int(IBV_WC_GENERAL_ERR));
#endif

// ---------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------

struct Parsed {
	sroce_drop reason;
	sroce_pkt pkt;
};

// Parses from an exactly-sized heap copy, as the receive path would.
Parsed parse(const PacketSpec &s)
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
PacketSpec spec_for(uint8_t opcode, uint32_t psn)
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
	if (opcode == 0x0c)
		s.dma_len = 3000;
	return s;
}

Parsed must_parse(const PacketSpec &s)
{
	Parsed p = parse(s);

	if (p.reason != SROCE_DROP_NONE || !p.pkt.op)
		throw std::runtime_error(std::string("test packet dropped: ") +
					 sroce_pkt_drop_name(p.reason));
	return p;
}

Parsed good(uint8_t opcode, uint32_t psn)
{
	return must_parse(spec_for(opcode, psn));
}

std::string resp_str(sroce_rc_resp_action a)
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

const char *seq_str(sroce_rc_seq s)
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

sroce_rc_resp_action decide(uint32_t epsn, sroce_rc_seq seq, bool nak_sent,
			    const Parsed &p)
{
	const sroce_rc_resp_state st = {epsn, seq, nak_sent};

	return sroce_rc_resp_decide(&st, &p.pkt, p.reason);
}

const sroce_rc_seq kSeqs[] = {SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_SEND,
			      SROCE_RC_SEQ_WRITE};

// Every RC request opcode.
const uint8_t kRcRequests[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
			       0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x13,
			       0x14, 0x16, 0x17};

// The responder's opcode sequence rules (IBTA 9.8.3 / 9.9.3.2), restated:
// between messages anything that starts one (FIRST, ONLY, READ request,
// atomics); inside a SEND only SEND MIDDLE or LAST; inside an RDMA WRITE
// only WRITE MIDDLE or LAST.
bool fits(sroce_rc_seq seq, uint8_t op)
{
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

// Where the responder is after executing op.
sroce_rc_seq after(uint8_t op)
{
	if (op == 0x00 || op == 0x01)
		return SROCE_RC_SEQ_SEND;
	if (op == 0x06 || op == 0x07)
		return SROCE_RC_SEQ_WRITE;
	return SROCE_RC_SEQ_IDLE;
}

TEST(CoreRc, RespSequenceMatrix)
{
	for (uint32_t epsn : {0u, 0xffffffu, kHalf}) {
		for (sroce_rc_seq seq : kSeqs) {
			for (uint8_t op : kRcRequests) {
				for (bool nak_sent : {false, true}) {
					SCOPED_TRACE(testing::Message()
						     << std::hex << "epsn " << epsn
						     << " seq " << seq_str(seq) << " op 0x"
						     << int(op) << " nak_sent " << nak_sent);
					EXPECT_RESP(decide(epsn, seq, nak_sent, good(op, epsn)),
						    fits(seq, op) ?
						    SROCE_RC_RESP_EXECUTE :
						    SROCE_RC_RESP_NAK_INVALID);
					// the sequence is only checked at epsn
					for (int64_t d : {int64_t(-1), int64_t(-2),
							  -int64_t(kHalf)})
						EXPECT_RESP(decide(epsn, seq, nak_sent,
								   good(op, at(epsn, d))),
							    SROCE_RC_RESP_DUPLICATE) << d;
					for (int64_t d : {int64_t(1), int64_t(2),
							  int64_t(kHalf) - 1})
						EXPECT_RESP(decide(epsn, seq, nak_sent,
								   good(op, at(epsn, d))),
							    nak_sent ? SROCE_RC_RESP_DROP :
							    SROCE_RC_RESP_NAK_SEQ) << d;
				}
			}
		}
	}
}

// The violations by name (all NAK "invalid request" at the expected PSN).
TEST(CoreRc, RespSequenceViolations)
{
	const uint32_t epsn = 0x000100;
	const struct {
		sroce_rc_seq seq;
		uint8_t op;
		const char *what;
	} cases[] = {
		{SROCE_RC_SEQ_SEND, 0x00, "SEND FIRST inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x04, "SEND ONLY inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x06, "WRITE FIRST inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x07, "WRITE MIDDLE inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x09, "WRITE LAST IMM inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x0c, "READ request inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x13, "CMP_SWAP inside a SEND"},
		{SROCE_RC_SEQ_SEND, 0x14, "FETCH_ADD inside a SEND"},
		{SROCE_RC_SEQ_WRITE, 0x06, "WRITE FIRST inside a WRITE"},
		{SROCE_RC_SEQ_WRITE, 0x0b, "WRITE ONLY IMM inside a WRITE"},
		{SROCE_RC_SEQ_WRITE, 0x01, "SEND MIDDLE inside a WRITE"},
		{SROCE_RC_SEQ_WRITE, 0x16, "SEND LAST INV inside a WRITE"},
		{SROCE_RC_SEQ_WRITE, 0x0c, "READ request inside a WRITE"},
		{SROCE_RC_SEQ_WRITE, 0x13, "CMP_SWAP inside a WRITE"},
		{SROCE_RC_SEQ_IDLE, 0x01, "SEND MIDDLE between messages"},
		{SROCE_RC_SEQ_IDLE, 0x02, "SEND LAST between messages"},
		{SROCE_RC_SEQ_IDLE, 0x03, "SEND LAST IMM between messages"},
		{SROCE_RC_SEQ_IDLE, 0x16, "SEND LAST INV between messages"},
		{SROCE_RC_SEQ_IDLE, 0x07, "WRITE MIDDLE between messages"},
		{SROCE_RC_SEQ_IDLE, 0x08, "WRITE LAST between messages"},
		{SROCE_RC_SEQ_IDLE, 0x09, "WRITE LAST IMM between messages"},
	};

	for (const auto &c : cases) {
		EXPECT_RESP(decide(epsn, c.seq, false, good(c.op, epsn)),
			    SROCE_RC_RESP_NAK_INVALID) << c.what;
		// even after a sequence error NAK: only this packet may be
		// NAK'd, and it is the expected one
		EXPECT_RESP(decide(epsn, c.seq, true, good(c.op, epsn)),
			    SROCE_RC_RESP_NAK_INVALID) << c.what;
	}
}

TEST(CoreRc, RespPsnClassesAcrossTheWrap)
{
	const struct {
		uint32_t epsn, psn;
		sroce_rc_resp_action want, want_after_nak;
	} cases[] = {
		{0, 0, SROCE_RC_RESP_EXECUTE, SROCE_RC_RESP_EXECUTE},
		{0, 0xffffff, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
		{0, 0x800001, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
		// exactly 2^23 away: the oldest duplicate, not the future
		{0, 0x800000, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
		{0, 0x7fffff, SROCE_RC_RESP_NAK_SEQ, SROCE_RC_RESP_DROP},
		{0, 1, SROCE_RC_RESP_NAK_SEQ, SROCE_RC_RESP_DROP},
		{0xffffff, 0xffffff, SROCE_RC_RESP_EXECUTE, SROCE_RC_RESP_EXECUTE},
		{0xffffff, 0, SROCE_RC_RESP_NAK_SEQ, SROCE_RC_RESP_DROP},
		{0xffffff, 0x7ffffe, SROCE_RC_RESP_NAK_SEQ, SROCE_RC_RESP_DROP},
		{0xffffff, 0x7fffff, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
		{0xffffff, 0xfffffe, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
		{0xfffffe, 0x000001, SROCE_RC_RESP_NAK_SEQ, SROCE_RC_RESP_DROP},
		{0x000002, 0xfffffe, SROCE_RC_RESP_DUPLICATE, SROCE_RC_RESP_DUPLICATE},
	};

	for (const auto &c : cases) {
		const Parsed p = good(0x04, c.psn);	// SEND ONLY

		EXPECT_RESP(decide(c.epsn, SROCE_RC_SEQ_IDLE, false, p), c.want)
			<< std::hex << "epsn " << c.epsn << " psn " << c.psn;
		EXPECT_RESP(decide(c.epsn, SROCE_RC_SEQ_IDLE, true, p),
			    c.want_after_nak)
			<< std::hex << "epsn " << c.epsn << " psn " << c.psn;
	}
}

// Every PSN around a few expected PSNs, against a model.
TEST(CoreRc, RespPsnMatchesModel)
{
	const Parsed p0 = good(0x0a, 0);	// WRITE ONLY
	std::mt19937 rng(0x5eed);
	std::uniform_int_distribution<uint32_t> any_psn(0, kMask);

	for (int i = 0; i < 100000; i++) {
		const uint32_t epsn = any_psn(rng);
		const uint32_t psn = (i & 1) ? any_psn(rng) : at(epsn, int(i % 7) - 3);
		const bool nak_sent = i & 2;
		const uint32_t off = (psn - epsn) & kMask;
		Parsed p = p0;
		sroce_rc_resp_action want;

		p.pkt.bth.psn = psn;
		if (off == 0)
			want = SROCE_RC_RESP_EXECUTE;
		else if (off < kHalf)
			want = nak_sent ? SROCE_RC_RESP_DROP : SROCE_RC_RESP_NAK_SEQ;
		else
			want = SROCE_RC_RESP_DUPLICATE;
		ASSERT_EQ(resp_str(decide(epsn, SROCE_RC_SEQ_IDLE, nak_sent, p)),
			  resp_str(want))
			<< std::hex << "epsn " << epsn << " psn " << psn;
	}
}

// Real request errors, produced by the parser.
struct RequestError {
	const char *what;
	PacketSpec spec;
	sroce_drop reason;
	sroce_rc_seq fitting;	// a state in which the opcode would fit
};

std::vector<RequestError> request_errors(uint32_t psn)
{
	std::vector<RequestError> v;
	PacketSpec s;

	s = spec_for(0x00, psn);	// SEND FIRST with a pad count
	s.payload = 1023;
	s.pad = 1;
	v.push_back({"pad on SEND FIRST", s, SROCE_DROP_PAD_NOT_LAST,
		     SROCE_RC_SEQ_IDLE});
	s = spec_for(0x01, psn);	// SEND MIDDLE not a PMTU
	s.payload = 100;
	v.push_back({"short SEND MIDDLE", s, SROCE_DROP_BAD_PAYLOAD_LEN,
		     SROCE_RC_SEQ_SEND});
	s = spec_for(0x0a, psn);	// WRITE ONLY announcing more
	s.dma_len = uint32_t(s.payload + 1);
	v.push_back({"WRITE ONLY dma_len != payload", s, SROCE_DROP_BAD_DMA_LEN,
		     SROCE_RC_SEQ_IDLE});
	s = spec_for(0x0c, psn);	// READ of more than 2^31
	s.dma_len = 0x80000001u;
	v.push_back({"READ beyond 2^31", s, SROCE_DROP_BAD_DMA_LEN,
		     SROCE_RC_SEQ_IDLE});
	s = spec_for(0x14, psn);	// FETCH_ADD at a misaligned VA
	s.va = 0x1004;
	v.push_back({"misaligned FETCH_ADD", s, SROCE_DROP_MISALIGNED_ATOMIC,
		     SROCE_RC_SEQ_IDLE});
	return v;
}

TEST(CoreRc, RespRequestErrors)
{
	for (uint32_t epsn : {0x000010u, 0xffffffu, 0u}) {
		for (int64_t d : {0, -1, -5, 1, 5}) {
			for (const RequestError &e : request_errors(at(epsn, d))) {
				const Parsed p = parse(e.spec);

				SCOPED_TRACE(testing::Message() << e.what << std::hex
					     << " epsn " << epsn << " d " << d);
				ASSERT_EQ(std::string(sroce_pkt_drop_name(p.reason)),
					  sroce_pkt_drop_name(e.reason));
				ASSERT_NE(p.pkt.op, nullptr);
				for (bool nak_sent : {false, true}) {
					sroce_rc_resp_action want;

					if (d == 0)
						want = SROCE_RC_RESP_NAK_INVALID;
					else if (d < 0)
						want = SROCE_RC_RESP_DUPLICATE;
					else
						want = nak_sent ? SROCE_RC_RESP_DROP :
							SROCE_RC_RESP_NAK_SEQ;
					for (sroce_rc_seq seq : kSeqs)
						EXPECT_RESP(decide(epsn, seq, nak_sent, p), want)
							<< seq_str(seq) << " nak_sent " << nak_sent;
				}
			}
		}
	}
}

// Any request-error reason makes an otherwise fitting packet at the
// expected PSN an invalid request; behind or ahead the PSN decides.
TEST(CoreRc, RespEveryRequestErrorReason)
{
	const uint32_t epsn = 0xfffffe;
	int n = 0;

	for (int r = SROCE_DROP_NONE + 1; r < SROCE_DROP_NR; r++) {
		const sroce_drop reason = static_cast<sroce_drop>(r);

		if (!sroce_pkt_drop_is_request_error(reason))
			continue;
		n++;
		SCOPED_TRACE(sroce_pkt_drop_name(reason));
		for (uint8_t op : kRcRequests) {
			for (sroce_rc_seq seq : kSeqs) {
				Parsed p = good(op, epsn);

				p.reason = reason;
				EXPECT_RESP(decide(epsn, seq, false, p),
					    SROCE_RC_RESP_NAK_INVALID);
				p.pkt.bth.psn = at(epsn, -1);
				EXPECT_RESP(decide(epsn, seq, false, p),
					    SROCE_RC_RESP_DUPLICATE);
				p.pkt.bth.psn = at(epsn, 3);
				EXPECT_RESP(decide(epsn, seq, false, p),
					    SROCE_RC_RESP_NAK_SEQ);
				EXPECT_RESP(decide(epsn, seq, true, p),
					    SROCE_RC_RESP_DROP);
			}
		}
	}
	EXPECT_EQ(n, 4);	// pad, payload length, DMA length, atomic VA
}

// Malformed packets are dropped silently whatever their PSN (IBTA 9.6).
TEST(CoreRc, RespMalformedPacketsDrop)
{
	const uint32_t epsn = 0x4242;

	for (int r = SROCE_DROP_NONE + 1; r < SROCE_DROP_NR; r++) {
		const sroce_drop reason = static_cast<sroce_drop>(r);

		if (sroce_pkt_drop_is_request_error(reason))
			continue;
		for (int64_t d : {0, -1, 1}) {
			Parsed p = good(0x04, at(epsn, d));

			p.reason = reason;
			for (sroce_rc_seq seq : kSeqs)
				EXPECT_RESP(decide(epsn, seq, false, p),
					    SROCE_RC_RESP_DROP)
					<< sroce_pkt_drop_name(reason) << " d " << d;
		}
	}

	// real ones: a foreign partition (opcode known) ...
	PacketSpec s = spec_for(0x04, epsn);
	s.pkey = 0x1234;
	Parsed p = parse(s);
	ASSERT_EQ(p.reason, SROCE_DROP_BAD_PKEY);
	ASSERT_NE(p.pkt.op, nullptr);
	EXPECT_RESP(decide(epsn, SROCE_RC_SEQ_IDLE, false, p), SROCE_RC_RESP_DROP);

	// ... an unknown opcode (no opcode row at all) ...
	s = spec_for(0x04, epsn);
	s.opcode = 0x15;
	p = parse(s);
	ASSERT_EQ(p.reason, SROCE_DROP_UNKNOWN_OPCODE);
	ASSERT_EQ(p.pkt.op, nullptr);
	EXPECT_RESP(decide(epsn, SROCE_RC_SEQ_IDLE, false, p), SROCE_RC_RESP_DROP);

	// ... and a packet that never got an opcode row
	Parsed empty{};
	empty.pkt.bth.psn = epsn;
	EXPECT_RESP(decide(epsn, SROCE_RC_SEQ_IDLE, false, empty),
		    SROCE_RC_RESP_DROP);
}

// A responder only acts on RC requests: responses, UC, UD and CNPs drop.
TEST(CoreRc, RespNonRequestsDrop)
{
	int n = 0;

	for (const SpecOp &op : sroce_test::spec_ops()) {
		if (op.transport == 'R' && op.request)
			continue;
		n++;
		for (uint32_t epsn : {0u, 0xffffffu}) {
			for (int64_t d : {0, -1, 1}) {
				const Parsed p = good(op.opcode, at(epsn, d));

				for (sroce_rc_seq seq : kSeqs)
					for (bool nak_sent : {false, true})
						EXPECT_RESP(decide(epsn, seq, nak_sent, p),
							    SROCE_RC_RESP_DROP)
							<< op.name << " d " << d;
			}
		}
		// a request error on such a packet changes nothing
		if (op.pos == Pos::First) {
			PacketSpec s = spec_for(op.opcode, 7);
			s.payload = 100;
			const Parsed p = parse(s);

			ASSERT_TRUE(sroce_pkt_drop_is_request_error(p.reason))
				<< op.name;
			EXPECT_RESP(decide(7, SROCE_RC_SEQ_IDLE, false, p),
				    SROCE_RC_RESP_DROP) << op.name;
		}
	}
	// 6 responses, 12 UC, 2 UD, CNP
	EXPECT_EQ(n, 21);
}

sroce_rc_resp_state advance(sroce_rc_resp_state st, const Parsed &p,
			    uint32_t pmtu = 1024)
{
	sroce_rc_resp_advance(&st, &p.pkt, pmtu);
	return st;
}

TEST(CoreRc, RespAdvanceByOne)
{
	for (uint32_t epsn : {0u, 0x7fffffu, 0xfffffeu, 0xffffffu}) {
		for (sroce_rc_seq seq : kSeqs) {
			for (uint8_t op : kRcRequests) {
				if (!fits(seq, op) || op == 0x0c)
					continue;
				for (bool nak_sent : {false, true}) {
					const sroce_rc_resp_state st = advance(
						{epsn, seq, nak_sent}, good(op, epsn));

					SCOPED_TRACE(testing::Message()
						     << std::hex << "epsn " << epsn << " seq "
						     << seq_str(seq) << " op 0x" << int(op));
					EXPECT_EQ(st.epsn, at(epsn, 1));
					EXPECT_STREQ(seq_str(st.seq), seq_str(after(op)));
					EXPECT_FALSE(st.nak_sent);
				}
			}
		}
	}
}

// An RDMA READ request takes one PSN per response packet (IBTA 9.7.1).
TEST(CoreRc, RespAdvanceOverRead)
{
	for (uint32_t pmtu : kPmtus) {
		const struct {
			uint32_t dma_len, psns;
		} cases[] = {
			{0, 1},			// still one (empty) response
			{1, 1},
			{pmtu - 1, 1},
			{pmtu, 1},
			{pmtu + 1, 2},
			{3 * pmtu, 3},
			{3 * pmtu + 7, 4},
			{0x80000000u, 0x80000000u / pmtu},
		};

		for (const auto &c : cases) {
			for (uint32_t epsn : {0x000100u, 0xfffffeu}) {
				PacketSpec s = spec_for(0x0c, epsn);
				s.dma_len = c.dma_len;
				const Parsed p = must_parse(s);
				const sroce_rc_resp_state st =
					advance({epsn, SROCE_RC_SEQ_IDLE, true}, p, pmtu);

				SCOPED_TRACE(testing::Message() << "pmtu " << pmtu
					     << " dma_len " << c.dma_len);
				EXPECT_EQ(st.epsn, at(epsn, c.psns));
				EXPECT_EQ(st.seq, SROCE_RC_SEQ_IDLE);
				EXPECT_FALSE(st.nak_sent);
			}
		}
	}
	// the PSNs in between are then duplicates (a re-issued READ may
	// start at any of them), and the next one is expected
	const Parsed read = good(0x0c, 0xfffffe);	// 3000 bytes
	const sroce_rc_resp_state st =
		advance({0xfffffe, SROCE_RC_SEQ_IDLE, false}, read, 1024);

	ASSERT_EQ(st.epsn, 1u);
	for (uint32_t psn : {0xfffffeu, 0xffffffu, 0u})
		EXPECT_RESP(decide(st.epsn, st.seq, st.nak_sent, good(0x0c, psn)),
			    SROCE_RC_RESP_DUPLICATE) << psn;
	EXPECT_RESP(decide(st.epsn, st.seq, st.nak_sent, good(0x04, 1)),
		    SROCE_RC_RESP_EXECUTE);
}

// Multi-packet messages move the responder through its states.
TEST(CoreRc, RespAdvanceThroughMessages)
{
	const struct {
		std::vector<uint8_t> ops;
		std::vector<sroce_rc_seq> states;	// after each packet
	} flows[] = {
		{{0x00, 0x01, 0x01, 0x02},
		 {SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_SEND,
		  SROCE_RC_SEQ_IDLE}},
		{{0x00, 0x03}, {SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_IDLE}},
		{{0x00, 0x01, 0x16},
		 {SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_IDLE}},
		{{0x06, 0x07, 0x08},
		 {SROCE_RC_SEQ_WRITE, SROCE_RC_SEQ_WRITE, SROCE_RC_SEQ_IDLE}},
		{{0x06, 0x09}, {SROCE_RC_SEQ_WRITE, SROCE_RC_SEQ_IDLE}},
		{{0x04, 0x05, 0x17, 0x0a, 0x0b, 0x13, 0x14},
		 {SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_IDLE,
		  SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_IDLE,
		  SROCE_RC_SEQ_IDLE}},
		{{0x00, 0x02, 0x06, 0x08, 0x0c, 0x00, 0x16},
		 {SROCE_RC_SEQ_SEND, SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_WRITE,
		  SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_IDLE, SROCE_RC_SEQ_SEND,
		  SROCE_RC_SEQ_IDLE}},
	};

	for (const auto &f : flows) {
		sroce_rc_resp_state st = {0xfffffd, SROCE_RC_SEQ_IDLE, false};

		for (size_t i = 0; i < f.ops.size(); i++) {
			const Parsed p = good(f.ops[i], st.epsn);
			const uint32_t before = st.epsn;

			ASSERT_EQ(resp_str(sroce_rc_resp_decide(&st, &p.pkt, p.reason)),
				  resp_str(SROCE_RC_RESP_EXECUTE)) << "packet " << i;
			sroce_rc_resp_advance(&st, &p.pkt, 1024);
			EXPECT_STREQ(seq_str(st.seq), seq_str(f.states[i]))
				<< "packet " << i;
			// READ of 3000 bytes at 1024: three PSNs
			EXPECT_EQ(st.epsn, at(before, f.ops[i] == 0x0c ? 3 : 1));
		}
	}
}

// ---------------------------------------------------------------------
// Requester and responder together
// ---------------------------------------------------------------------

// The packets of one message as the requester cuts it: opcodes from
// sroce_rc_req_opcode(), PMTU-sized payloads but the last.
std::vector<PacketSpec> packetize(sroce_rc_msg msg, uint32_t len, uint32_t pmtu,
				  uint32_t psn)
{
	std::vector<PacketSpec> v;
	const bool one = msg == SROCE_RC_MSG_READ || msg == SROCE_RC_MSG_CMP_SWAP ||
			 msg == SROCE_RC_MSG_FETCH_ADD;
	const uint32_t n = one ? 1 : sroce_rc_npkts(len, pmtu);

	for (uint32_t i = 0; i < n; i++) {
		PacketSpec s;

		s.opcode = sroce_rc_req_opcode(msg, i == 0, i == n - 1);
		s.psn = at(psn, i);
		s.dma_len = len;
		if (!one) {
			s.payload = i < n - 1 ? pmtu : len - (n - 1) * pmtu;
			s.pad = uint8_t((4 - s.payload % 4) % 4);
		}
		v.push_back(s);
	}
	return v;
}

TEST(CoreRc, RequesterMessagesExecuteAtTheResponder)
{
	for (uint32_t pmtu : {256u, 1024u, 4096u}) {
		sroce_rc_resp_state st = {0xfffff0, SROCE_RC_SEQ_IDLE, false};
		uint32_t next = st.epsn;	// the requester's next PSN

		for (const MsgOps &m : kMsgOps) {
			const bool atomic = !m.multi && m.msg != SROCE_RC_MSG_READ;

			for (uint32_t len : {0u, 1u, pmtu - 1, pmtu, pmtu + 1,
					     3 * pmtu + 5}) {
				if (atomic)
					len = 8;
				SCOPED_TRACE(testing::Message() << m.name << " len " << len
					     << " pmtu " << pmtu);
				const auto pkts = packetize(m.msg, len, pmtu, next);

				ASSERT_EQ(pkts.size(), m.multi ? naive_npkts(len, pmtu) : 1);
				for (const PacketSpec &s : pkts) {
					const Parsed p = must_parse(s);

					ASSERT_EQ(resp_str(sroce_rc_resp_decide(&st, &p.pkt,
										p.reason)),
						  resp_str(SROCE_RC_RESP_EXECUTE))
						<< std::hex << "psn " << s.psn;
					sroce_rc_resp_advance(&st, &p.pkt, pmtu);
				}
				// both sides agree on the PSNs the message took: one
				// per request packet, a READ one per response packet
				next = at(next, m.msg == SROCE_RC_MSG_READ ?
					  naive_npkts(len, pmtu) : pkts.size());
				EXPECT_EQ(st.epsn, next);
				EXPECT_EQ(st.seq, SROCE_RC_SEQ_IDLE);
			}
		}
	}
}

// A lost packet across the PSN wrap: NAK once, drop the rest, resume when
// the requester goes back.
TEST(CoreRc, LossAndRetryAcrossTheWrap)
{
	// requester: SEND of 3 packets at 0xfffffe, then WRITE ONLY at 1
	const auto send = packetize(SROCE_RC_MSG_SEND, 2048 + 100, 1024, 0xfffffe);
	const auto write = packetize(SROCE_RC_MSG_WRITE, 64, 1024, 1);
	ASSERT_EQ(send.size(), 3u);
	ASSERT_EQ(write.size(), 1u);
	uint32_t una = 0xfffffe;
	const uint32_t next = 2;

	sroce_rc_resp_state st = {0xfffffe, SROCE_RC_SEQ_IDLE, false};
	Parsed p = must_parse(send[0]);
	ASSERT_EQ(sroce_rc_resp_decide(&st, &p.pkt, p.reason), SROCE_RC_RESP_EXECUTE);
	sroce_rc_resp_advance(&st, &p.pkt, 1024);
	EXPECT_EQ(st.seq, SROCE_RC_SEQ_SEND);

	// send[1] (PSN 0xffffff) is lost; send[2] (PSN 0) is ahead
	p = must_parse(send[2]);
	ASSERT_EQ(sroce_rc_resp_decide(&st, &p.pkt, p.reason), SROCE_RC_RESP_NAK_SEQ);
	st.nak_sent = true;	// the NAK names st.epsn
	const uint32_t nak_psn = st.epsn;
	EXPECT_EQ(nak_psn, 0xffffffu);
	p = must_parse(write[0]);
	EXPECT_EQ(sroce_rc_resp_decide(&st, &p.pkt, p.reason), SROCE_RC_RESP_DROP);

	// the requester learns that 0xfffffe arrived and resends from the NAK
	sroce_rc_ack a;
	sroce_rc_ack_decide(una, next, nak_psn, nak_syn(kNakSeq), &a);
	ASSERT_EQ(a.action, SROCE_RC_ACK_RETRY);
	ASSERT_TRUE(a.acked);
	EXPECT_EQ(a.acked_psn, 0xfffffeu);
	una = a.psn;

	for (const PacketSpec &s : {send[1], send[2], write[0]}) {
		p = must_parse(s);
		ASSERT_EQ(sroce_rc_resp_decide(&st, &p.pkt, p.reason),
			  SROCE_RC_RESP_EXECUTE) << s.psn;
		sroce_rc_resp_advance(&st, &p.pkt, 1024);
		EXPECT_FALSE(st.nak_sent);
	}
	EXPECT_EQ(st.epsn, next);
	EXPECT_EQ(st.seq, SROCE_RC_SEQ_IDLE);

	// the late original of PSN 0 is a duplicate now
	p = must_parse(send[2]);
	EXPECT_EQ(sroce_rc_resp_decide(&st, &p.pkt, p.reason),
		  SROCE_RC_RESP_DUPLICATE);

	// one coalesced ACK for the WRITE covers everything; its re-ACK is stale
	sroce_rc_ack_decide(una, next, 1, ack_syn(), &a);
	EXPECT_EQ(a.action, SROCE_RC_ACK_ADVANCE);
	EXPECT_EQ(a.acked_psn, 1u);
	una = at(a.acked_psn, 1);
	sroce_rc_ack_decide(una, next, 1, ack_syn(), &a);
	EXPECT_EQ(a.action, SROCE_RC_ACK_STALE);
}

} // namespace
