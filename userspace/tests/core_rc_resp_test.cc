// The RC responder's PSN and opcode-sequence classification
// (kernel/core/rc.c), and requester and responder together.  Expectations
// restate IBTA Vol. 1, 9.7 and 9.9 (core_rc_util.h); packets for the
// responder are built byte by byte and go through sroce_pkt_parse(), as on
// the receive path.  An XRC responder (IBTA Annex A14) decides as an RC
// one: the cases take XRC requests too.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core_rc_util.h"

extern "C" {
#include "kernel/core/uc.h"
}

namespace {

using namespace sroce_test::rc;
using sroce_test::PacketSpec;
using sroce_test::Pos;
using sroce_test::SpecOp;

// ---------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------

TEST(CoreRc, RespSequenceMatrix)
{
	for (uint32_t epsn : {0u, 0xffffffu, kHalf}) {
		for (sroce_rc_seq seq : kSeqs) {
			for (uint8_t op : reliable_requests()) {
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
		// the RC opcode and its XRC twin
		for (uint8_t op : {c.op, uint8_t(c.op | 0xa0)}) {
			EXPECT_RESP(decide(epsn, c.seq, false, good(op, epsn)),
				    SROCE_RC_RESP_NAK_INVALID) << c.what << " " << int(op);
			// even after a sequence error NAK: only this packet
			// may be NAK'd, and it is the expected one
			EXPECT_RESP(decide(epsn, c.seq, true, good(op, epsn)),
				    SROCE_RC_RESP_NAK_INVALID) << c.what << " " << int(op);
		}
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
		for (uint8_t op : {0x04, 0xa4}) {	// SEND ONLY, RC and XRC
			const Parsed p = good(op, c.psn);

			EXPECT_RESP(decide(c.epsn, SROCE_RC_SEQ_IDLE, false, p), c.want)
				<< std::hex << "epsn " << c.epsn << " psn " << c.psn;
			EXPECT_RESP(decide(c.epsn, SROCE_RC_SEQ_IDLE, true, p),
				    c.want_after_nak)
				<< std::hex << "epsn " << c.epsn << " psn " << c.psn;
		}
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

// base: 0x00 for RC's opcodes, 0xa0 for XRC's.
std::vector<RequestError> request_errors(uint32_t psn, uint8_t base)
{
	std::vector<RequestError> v;
	PacketSpec s;
	const auto spec_for = [base](uint8_t op, uint32_t p) {
		return sroce_test::rc::spec_for(uint8_t(base | op), p);
	};

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
			std::vector<RequestError> errors = request_errors(at(epsn, d), 0x00);
			const auto x = request_errors(at(epsn, d), 0xa0);
			errors.insert(errors.end(), x.begin(), x.end());
			for (const RequestError &e : errors) {
				const Parsed p = parse(e.spec);

				SCOPED_TRACE(testing::Message() << e.what << std::hex
					     << " opcode " << int(e.spec.opcode)
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
		for (uint8_t op : reliable_requests()) {
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
	// pad, payload length, DMA length, atomic VA, FETH, XRC SRQ
	EXPECT_EQ(n, 6);
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
			for (uint8_t op : {0x04, 0xa4}) {
				Parsed p = good(op, at(epsn, d));

				p.reason = reason;
				for (sroce_rc_seq seq : kSeqs)
					EXPECT_RESP(decide(epsn, seq, false, p),
						    SROCE_RC_RESP_DROP)
						<< sroce_pkt_drop_name(reason)
						<< " d " << d << " op " << int(op);
			}
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

// A responder only acts on RC and XRC requests: responses (of either),
// UC, UD and CNPs drop.
TEST(CoreRc, RespNonRequestsDrop)
{
	int n = 0;

	for (const SpecOp &op : sroce_test::spec_ops()) {
		if ((op.transport == 'R' || op.transport == 'X') && op.request)
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
	// 6 RC responses, 6 XRC responses, 12 UC, 2 UD, CNP
	EXPECT_EQ(n, 27);
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
			for (uint8_t op : reliable_requests()) {
				if (!fits(seq, op) || op == 0x0c || op == 0xac)
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
				for (uint8_t op : {0x0c, 0xac}) {	// RC, XRC
					PacketSpec s = spec_for(op, epsn);
					s.dma_len = c.dma_len;
					const Parsed p = must_parse(s);
					const sroce_rc_resp_state st = advance(
						{epsn, SROCE_RC_SEQ_IDLE, true}, p, pmtu);

					SCOPED_TRACE(testing::Message()
						     << "pmtu " << pmtu << " dma_len "
						     << c.dma_len << " op " << int(op));
					EXPECT_EQ(st.epsn, at(epsn, c.psns));
					EXPECT_EQ(st.seq, SROCE_RC_SEQ_IDLE);
					EXPECT_FALSE(st.nak_sent);
				}
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
		for (uint8_t base : {0x00, 0xa0}) {	// RC, XRC
			sroce_rc_resp_state st = {0xfffffd, SROCE_RC_SEQ_IDLE, false};

			SCOPED_TRACE(testing::Message() << "base " << int(base));
			for (size_t i = 0; i < f.ops.size(); i++) {
				const Parsed p = good(uint8_t(base | f.ops[i]), st.epsn);
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
}

// An XRC request is classified exactly as its RC twin, whatever the
// responder's state, the PSN and the parser's verdict.
TEST(CoreRc, RespXrcDecidesAsRc)
{
	for (uint32_t epsn : {0u, 0x7fffffu, 0xffffffu}) {
		for (sroce_rc_seq seq : kSeqs) {
			for (uint8_t xop : kXrcRequests) {
				const uint8_t rop = xop & 0x1f;

				for (int64_t d : {int64_t(0), int64_t(-1), int64_t(1),
						  -int64_t(kHalf), int64_t(kHalf) - 1}) {
					const uint32_t psn = at(epsn, d);
					Parsed x = good(xop, psn), r = good(rop, psn);

					ASSERT_EQ(x.pkt.op->transport, SROCE_TRANSPORT_XRC);
					for (sroce_drop reason :
					     {SROCE_DROP_NONE, SROCE_DROP_BAD_DMA_LEN,
					      SROCE_DROP_TRUNCATED}) {
						x.reason = r.reason = reason;
						for (bool nak_sent : {false, true})
							EXPECT_RESP(decide(epsn, seq, nak_sent, x),
								    decide(epsn, seq, nak_sent, r))
								<< std::hex << "op " << int(xop)
								<< " epsn " << epsn << " d " << d
								<< " " << sroce_pkt_drop_name(reason)
								<< " seq " << seq_str(seq);
					}
				}
			}
		}
	}
}

// ---------------------------------------------------------------------
// Requester and responder together
// ---------------------------------------------------------------------

// The packets of one message as the requester cuts it: opcodes from
// sroce_rc_req_opcode(), PMTU-sized payloads but the last.
std::vector<PacketSpec> packetize(sroce_rc_msg msg, uint32_t len, uint32_t pmtu,
				  uint32_t psn,
				  sroce_transport tr = SROCE_TRANSPORT_RC)
{
	std::vector<PacketSpec> v;
	const bool one = msg == SROCE_RC_MSG_READ || msg == SROCE_RC_MSG_CMP_SWAP ||
			 msg == SROCE_RC_MSG_FETCH_ADD ||
			 msg == SROCE_RC_MSG_FLUSH ||
			 msg == SROCE_RC_MSG_ATOMIC_WRITE;
	const uint32_t n = one ? 1 : sroce_rc_npkts(len, pmtu);

	for (uint32_t i = 0; i < n; i++) {
		PacketSpec s;

		s.opcode = sroce_req_opcode(tr, msg, i == 0, i == n - 1);
		s.psn = at(psn, i);
		s.dma_len = len;
		/* of the one-packet messages, ATOMIC WRITE carries its data */
		if (!one || msg == SROCE_RC_MSG_ATOMIC_WRITE) {
			s.payload = i < n - 1 ? pmtu : len - (n - 1) * pmtu;
			s.pad = uint8_t((4 - s.payload % 4) % 4);
		}
		v.push_back(s);
	}
	return v;
}

TEST(CoreRc, RequesterMessagesExecuteAtTheResponder)
{
	for (const sroce_transport tr : {SROCE_TRANSPORT_RC, SROCE_TRANSPORT_XRC}) {
		for (uint32_t pmtu : {256u, 1024u, 4096u}) {
			sroce_rc_resp_state st = {0xfffff0, SROCE_RC_SEQ_IDLE, false};
			uint32_t next = st.epsn;	// the requester's next PSN

			for (const MsgOps &m : kMsgOps) {
				const bool atomic = !m.multi && m.msg != SROCE_RC_MSG_READ;

				// XRC has no FLUSH or ATOMIC WRITE (CoreUc.Xrc*)
				if (tr == SROCE_TRANSPORT_XRC &&
				    (m.msg == SROCE_RC_MSG_FLUSH ||
				     m.msg == SROCE_RC_MSG_ATOMIC_WRITE))
					continue;

				for (uint32_t len : {0u, 1u, pmtu - 1, pmtu, pmtu + 1,
						     3 * pmtu + 5}) {
					if (atomic)
						len = 8;
					SCOPED_TRACE(testing::Message() << m.name << " len " << len
						     << " pmtu " << pmtu << " transport " << tr);
					const auto pkts = packetize(m.msg, len, pmtu, next, tr);

					ASSERT_EQ(pkts.size(), m.multi ? naive_npkts(len, pmtu) : 1);
					for (const PacketSpec &s : pkts) {
						const Parsed p = must_parse(s);

						ASSERT_EQ(p.pkt.op->transport, tr);
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
