// The RC requester's decisions (kernel/core/rc.c): the opcodes of each
// message and position, packet counts, the local ACK timer and the retry
// counters.  Expectations restate IBTA Vol. 1, 9.7 here (core_rc_util.h),
// independently of the code.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>

#include "core_rc_util.h"

namespace {

using namespace sroce_test::rc;
using sroce_test::Pos;
using sroce_test::SpecOp;

// ---------------------------------------------------------------------
// Requester: opcodes, packet counts, timer, retry counters
// ---------------------------------------------------------------------

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

} // namespace
