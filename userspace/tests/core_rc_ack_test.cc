// How the RC requester interprets ACKs and NAKs (kernel/core/rc.c): the
// window, stale and duplicate responses, every AETH syndrome, against a
// model written here from IBTA Vol. 1, 9.7.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core_rc_util.h"

namespace {

using namespace sroce_test::rc;

// ---------------------------------------------------------------------
// Requester: ACK and NAK interpretation
// ---------------------------------------------------------------------

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

} // namespace
