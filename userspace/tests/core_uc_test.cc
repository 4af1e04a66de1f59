// UC and UD transport decisions (kernel/core/uc.c): the request opcodes of
// each transport (XRC's and its response opcodes too) and the UC
// responder's resynchronisation.  Expectations
// restate IBTA Vol. 1, 9.2 (opcodes) and chapter 9's unreliable services
// here; packets for the responder are built byte by byte and go through
// sroce_pkt_parse(), as on the receive path.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/uc.h"
}

namespace {

using sroce_test::Bytes;
using sroce_test::PacketSpec;
using sroce_test::Pos;

constexpr uint32_t kMask = (1u << 24) - 1;

struct Case {
	bool first, last;
	Pos pos;
};
constexpr Case kPositions[] = {
	{true, true, Pos::Only},
	{true, false, Pos::First},
	{false, false, Pos::Middle},
	{false, true, Pos::Last},
};

TEST(CoreUc, RcOpcodesAreTheRcTable)
{
	for (int m = 0; m < SROCE_RC_MSG_NR; m++)
		for (const Case &c : kPositions)
			EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_RC,
						   sroce_rc_msg(m), c.first, c.last),
				  sroce_rc_req_opcode(sroce_rc_msg(m), c.first,
						      c.last));
}

// UC carries SEND and WRITE (with immediate) in every position: each opcode
// is a UC one of the spec's table at that position and of that kind.
TEST(CoreUc, UcCarriesSendsAndWrites)
{
	const struct {
		sroce_rc_msg msg;
		bool carried;
	} msgs[] = {
		{SROCE_RC_MSG_SEND, true},	{SROCE_RC_MSG_SEND_IMM, true},
		{SROCE_RC_MSG_WRITE, true},	{SROCE_RC_MSG_WRITE_IMM, true},
		{SROCE_RC_MSG_SEND_INV, false},	{SROCE_RC_MSG_READ, false},
		{SROCE_RC_MSG_CMP_SWAP, false},	{SROCE_RC_MSG_FETCH_ADD, false},
		{SROCE_RC_MSG_FLUSH, false},	{SROCE_RC_MSG_ATOMIC_WRITE, false},
	};

	for (const auto &m : msgs) {
		for (const Case &c : kPositions) {
			uint8_t op = sroce_req_opcode(SROCE_TRANSPORT_UC, m.msg,
						      c.first, c.last);
			SCOPED_TRACE(testing::Message() << "msg " << m.msg
				     << " first " << c.first << " last " << c.last);
			if (!m.carried) {
				EXPECT_EQ(op, 0xff);
				continue;
			}
			const sroce_test::SpecOp *spec = sroce_test::spec_op(op);
			ASSERT_NE(spec, nullptr) << int(op);
			EXPECT_EQ(spec->transport, 'U');
			EXPECT_EQ(spec->pos, c.pos);
			EXPECT_TRUE(spec->request);
			EXPECT_EQ(op & 0x1f,
				  sroce_rc_req_opcode(m.msg, c.first, c.last));
		}
	}
}

// XRC (IBTA Annex A14) carries every RC request but FLUSH and ATOMIC
// WRITE, whose XRC opcodes sroce does not know: the RC opcode in the XRC
// range (0xa0 | RC's), a request of the spec's XRC table at that position.
TEST(CoreUc, XrcCarriesRcRequests)
{
	for (int m = 0; m < SROCE_RC_MSG_NR; m++) {
		const sroce_rc_msg msg = sroce_rc_msg(m);
		const bool carried = msg != SROCE_RC_MSG_FLUSH &&
				     msg != SROCE_RC_MSG_ATOMIC_WRITE;

		for (const Case &c : kPositions) {
			const uint8_t op = sroce_req_opcode(SROCE_TRANSPORT_XRC,
							    msg, c.first, c.last);
			const uint8_t rc = sroce_rc_req_opcode(msg, c.first, c.last);
			SCOPED_TRACE(testing::Message() << "msg " << m << " first "
				     << c.first << " last " << c.last);
			if (!carried) {
				EXPECT_EQ(op, 0xff);
				EXPECT_EQ(sroce_opcode_lookup(uint8_t(0xa0 | rc)),
					  nullptr);
				continue;
			}
			EXPECT_EQ(op, 0xa0 | rc);
			const sroce_test::SpecOp *spec = sroce_test::spec_op(op);
			ASSERT_NE(spec, nullptr) << int(op);
			EXPECT_EQ(spec->transport, 'X');
			EXPECT_TRUE(spec->request);
			EXPECT_EQ(spec->exts.front(), sroce_test::Ext::XRCETH);
			// READ and the atomics are one packet whatever is asked
			const sroce_test::SpecOp *rspec = sroce_test::spec_op(rc);
			ASSERT_NE(rspec, nullptr);
			EXPECT_EQ(spec->pos, rspec->pos);
			const sroce_opcode_info *info = sroce_opcode_lookup(op);
			ASSERT_NE(info, nullptr);
			EXPECT_EQ(info->transport, SROCE_TRANSPORT_XRC);
		}
	}
	EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_XRC, SROCE_RC_MSG_NR, true,
				   true), 0xff);
}

// Responses: an XRC responder answers with RC's response opcodes moved to
// the XRC range; an RC one with RC's.
TEST(CoreUc, ResponseOpcodes)
{
	const uint8_t rc_responses[] = {0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12};

	for (uint8_t r : rc_responses) {
		EXPECT_EQ(sroce_resp_opcode(SROCE_TRANSPORT_RC, r), r);
		const uint8_t x = sroce_resp_opcode(SROCE_TRANSPORT_XRC, r);
		EXPECT_EQ(x, 0xa0 | r);

		const sroce_test::SpecOp *xs = sroce_test::spec_op(x);
		const sroce_test::SpecOp *rs = sroce_test::spec_op(r);
		ASSERT_NE(xs, nullptr) << int(x);
		ASSERT_NE(rs, nullptr) << int(r);
		EXPECT_EQ(xs->transport, 'X');
		EXPECT_TRUE(xs->response);
		EXPECT_EQ(xs->pos, rs->pos);
		EXPECT_EQ(xs->exts, rs->exts) << xs->name;	// no XRCETH
		EXPECT_EQ(std::string(xs->name), std::string("X") + rs->name);
	}
	// the read response opcodes of every position
	for (bool first : {false, true})
		for (bool last : {false, true}) {
			const uint8_t r = sroce_rc_read_resp_opcode(first, last);
			const sroce_opcode_info *x = sroce_opcode_lookup(
				sroce_resp_opcode(SROCE_TRANSPORT_XRC, r));

			ASSERT_NE(x, nullptr);
			EXPECT_EQ(x->kind, SROCE_KIND_READ_RESP);
			EXPECT_EQ(bool(x->flags & SROCE_OPF_FIRST), first);
			EXPECT_EQ(bool(x->flags & SROCE_OPF_LAST), last);
		}
	EXPECT_EQ(sroce_opcode_lookup(sroce_resp_opcode(SROCE_TRANSPORT_XRC,
						       SROCE_OP_RC_ACK))->kind,
		  SROCE_KIND_ACK);
	EXPECT_EQ(sroce_opcode_lookup(sroce_resp_opcode(
			  SROCE_TRANSPORT_XRC, SROCE_OP_RC_ATOMIC_ACK))->kind,
		  SROCE_KIND_ATOMIC_ACK);
}

TEST(CoreUc, UdCarriesSingleSends)
{
	EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_UD, SROCE_RC_MSG_SEND, true,
				   true), 0x64);
	EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_UD, SROCE_RC_MSG_SEND_IMM,
				   true, true), 0x65);
	for (const Case &c : kPositions) {
		if (c.pos == Pos::Only)
			continue;
		EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_UD, SROCE_RC_MSG_SEND,
					   c.first, c.last), 0xff);
	}
	for (sroce_rc_msg m : {SROCE_RC_MSG_WRITE, SROCE_RC_MSG_READ,
			       SROCE_RC_MSG_SEND_INV, SROCE_RC_MSG_FETCH_ADD})
		EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_UD, m, true, true), 0xff);
	EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_RD, SROCE_RC_MSG_SEND, true,
				   true), 0xff);
	EXPECT_EQ(sroce_req_opcode(SROCE_TRANSPORT_UC, SROCE_RC_MSG_NR, true,
				   true), 0xff);
}

// ---------------------------------------------------------------------
// UC responder
// ---------------------------------------------------------------------

// A parsed packet and the buffer it points into.
struct Pkt {
	std::unique_ptr<uint8_t[]> buf;
	sroce_pkt pkt{};
	sroce_drop reason{};
};

Pkt make(uint8_t opcode, uint32_t psn)
{
	const sroce_test::SpecOp *op = sroce_test::spec_op(opcode);
	PacketSpec s;
	Pkt p;

	if (!op)
		throw std::invalid_argument("opcode");
	s.opcode = opcode;
	s.psn = psn & kMask;
	if (op->payload)
		s.payload = (op->pos == Pos::First || op->pos == Pos::Middle) ?
			1024 : 40;
	s.dma_len = uint32_t(op->pos == Pos::First ? 4 * s.payload : s.payload);
	const Bytes b = sroce_test::build_udp_payload(s);
	p.buf = std::make_unique<uint8_t[]>(b.size());
	std::memcpy(p.buf.get(), b.data(), b.size());
	p.reason = sroce_pkt_parse(p.buf.get(), uint32_t(b.size()), &p.pkt);
	if (p.reason != SROCE_DROP_NONE)
		throw std::runtime_error(sroce_pkt_drop_name(p.reason));
	return p;
}

// The responder after executing a packet, as kernel/dp/resp.c moves it.
struct Responder {
	sroce_rc_resp_state st{};
	bool lost = false;

	explicit Responder(uint32_t epsn) { st.epsn = epsn; }

	bool take(uint8_t opcode, uint32_t psn)
	{
		Pkt p = make(opcode, psn);

		if (sroce_uc_resp_decide(&st, &p.pkt, p.reason, &lost) !=
		    SROCE_UC_RESP_EXECUTE)
			return false;
		sroce_rc_resp_advance(&st, &p.pkt, 1024);
		return true;
	}
};

// UC SEND first/middle/last/only, WRITE first/middle/last/only.
constexpr uint8_t kSendFirst = 0x20, kSendMiddle = 0x21, kSendLast = 0x22,
		  kSendOnly = 0x24, kWriteFirst = 0x26, kWriteMiddle = 0x27,
		  kWriteLast = 0x28, kWriteOnly = 0x2a;

TEST(CoreUc, InOrderMessagesExecute)
{
	for (uint32_t start : {0u, 0xfffffeu, 0x123456u}) {
		Responder r(start);
		uint32_t psn = start;

		for (uint8_t op : {kSendOnly, kSendFirst, kSendMiddle, kSendLast,
				   kWriteFirst, kWriteLast, kWriteOnly}) {
			EXPECT_TRUE(r.take(op, psn)) << std::hex << int(op);
			EXPECT_FALSE(r.lost);
			psn = (psn + 1) & kMask;
		}
		EXPECT_EQ(r.st.epsn, psn);
		EXPECT_EQ(r.st.seq, SROCE_RC_SEQ_IDLE);
	}
}

// A lost middle packet loses the message: the rest of it is dropped, the
// next message starts wherever its PSN is.
TEST(CoreUc, LostPacketDropsTheMessage)
{
	Responder r(100);

	ASSERT_TRUE(r.take(kSendFirst, 100));
	EXPECT_EQ(r.st.seq, SROCE_RC_SEQ_SEND);
	// 101 is lost
	EXPECT_FALSE(r.take(kSendMiddle, 102));
	EXPECT_TRUE(r.lost);
	EXPECT_EQ(r.st.seq, SROCE_RC_SEQ_IDLE);
	EXPECT_FALSE(r.take(kSendLast, 103));
	EXPECT_FALSE(r.lost) << "nothing was in progress any more";
	EXPECT_TRUE(r.take(kWriteFirst, 104));
	EXPECT_EQ(r.st.epsn, 105u);
	EXPECT_TRUE(r.take(kWriteMiddle, 105));
	EXPECT_TRUE(r.take(kWriteLast, 106));
	EXPECT_EQ(r.st.seq, SROCE_RC_SEQ_IDLE);
}

// A message starting out of sequence (whole messages lost, or the peer's
// PSN unknown) is taken; one cut short by the next message is lost.
TEST(CoreUc, NewMessageResynchronises)
{
	Responder r(0);

	EXPECT_TRUE(r.take(kSendOnly, 0x7654));
	EXPECT_FALSE(r.lost);
	EXPECT_EQ(r.st.epsn, 0x7655u);
	ASSERT_TRUE(r.take(kWriteFirst, 0x7655));
	// the WRITE's last packet never comes: a SEND begins
	EXPECT_TRUE(r.take(kSendFirst, 0x7659));
	EXPECT_TRUE(r.lost);
	EXPECT_EQ(r.st.seq, SROCE_RC_SEQ_SEND);
	// at the expected PSN, a packet of the wrong message is a loss too
	EXPECT_FALSE(r.take(kWriteMiddle, 0x765a));
	EXPECT_TRUE(r.lost);
	EXPECT_TRUE(r.take(kWriteOnly, 0x765b));
	EXPECT_FALSE(r.lost);
}

// Only well-formed UC requests reach execution.
TEST(CoreUc, OtherPacketsDrop)
{
	sroce_rc_resp_state st{};
	bool lost = true;

	for (uint8_t op : {0x04, 0x0a, 0x0c, 0x11, 0x64, 0xa4, 0xaa, 0xb1}) {
		Pkt p = make(op, 0);

		st = {};
		EXPECT_EQ(sroce_uc_resp_decide(&st, &p.pkt, p.reason, &lost),
			  SROCE_UC_RESP_DROP) << std::hex << int(op);
		EXPECT_FALSE(lost);
	}
	Pkt p = make(kSendOnly, 0);
	st = {};
	EXPECT_EQ(sroce_uc_resp_decide(&st, &p.pkt, SROCE_DROP_PAD_NOT_LAST,
				       &lost), SROCE_UC_RESP_DROP);
	p.pkt.op = nullptr;
	EXPECT_EQ(sroce_uc_resp_decide(&st, &p.pkt, SROCE_DROP_NONE, &lost),
		  SROCE_UC_RESP_DROP);
}

}  // namespace
