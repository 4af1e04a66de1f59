// The opcode table (kernel/core/opcode.c) against the IBTA opcode list
// restated in core_test_util.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/hdr.h"
#include "kernel/core/opcode.h"
#include "kernel/core/port.h"
}

namespace {

using sroce_test::Ext;
using sroce_test::Pos;
using sroce_test::SpecOp;

sroce_ext to_core(Ext e)
{
	switch (e) {
	case Ext::DETH: return SROCE_EXT_DETH;
	case Ext::XRCETH: return SROCE_EXT_XRCETH;
	case Ext::FETH: return SROCE_EXT_FETH;
	case Ext::RETH: return SROCE_EXT_RETH;
	case Ext::AtomicETH: return SROCE_EXT_ATOMIC_ETH;
	case Ext::AETH: return SROCE_EXT_AETH;
	case Ext::AtomicAckETH: return SROCE_EXT_ATOMIC_ACK_ETH;
	case Ext::ImmDt: return SROCE_EXT_IMMDT;
	case Ext::IETH: return SROCE_EXT_IETH;
	case Ext::CNP: return SROCE_EXT_CNP;
	}
	return SROCE_EXT_NR;
}

TEST(CoreOpcode, KnownExactlyTheSpecOpcodes)
{
	int known = 0;

	for (int c = 0; c < 256; c++) {
		const auto op = static_cast<uint8_t>(c);
		const sroce_opcode_info *info = sroce_opcode_lookup(op);
		const SpecOp *spec = sroce_test::spec_op(op);

		EXPECT_EQ(info != nullptr, spec != nullptr) << "opcode 0x" << std::hex << c;
		if (info) {
			known++;
			EXPECT_EQ(info->opcode, op);
		}
	}
	// RC 25, UC 12, UD 2, CNP, XRC 23
	EXPECT_EQ(known, 63);
	EXPECT_EQ(sroce_test::spec_ops().size(), 63u);
}

TEST(CoreOpcode, UnknownOpcodesAreIdentifiable)
{
	// Reserved RC codes (0x1e: IBTA 1.5's unused slot), RC/UC/UD
	// operations that do not exist on that transport (UC FLUSH and
	// ATOMIC WRITE), every RD opcode, XRC's reserved codes and its FLUSH
	// and ATOMIC WRITE (0xbc, 0xbd: not known to sroce), other CNP-range
	// codes and the vendor range.
	std::vector<int> unknown = {0x15, 0x18, 0x1e, 0x1f, 0x2c, 0x2d, 0x3c,
				    0x3d, 0x30, 0x33, 0x3f, 0x60, 0x61, 0x63,
				    0x66,
				    0x6c, 0x7f, 0x80, 0x82, 0x9f, 0xff,
				    0xb5, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd,
				    0xbe, 0xbf};
	for (int c = 0x40; c < 0x60; c++)
		unknown.push_back(c);	// RD
	for (int c = 0xc0; c < 0x100; c++)
		unknown.push_back(c);	// manufacturer specific

	for (int c : unknown) {
		EXPECT_EQ(sroce_opcode_lookup(static_cast<uint8_t>(c)), nullptr) << c;
		EXPECT_STREQ(sroce_opcode_name(static_cast<uint8_t>(c)), "UNKNOWN");
	}
}

TEST(CoreOpcode, RowsMatchTheSpec)
{
	for (const SpecOp &s : sroce_test::spec_ops()) {
		SCOPED_TRACE(s.name);
		const sroce_opcode_info *info = sroce_opcode_lookup(s.opcode);
		ASSERT_NE(info, nullptr);

		EXPECT_STREQ(info->name, s.name);
		EXPECT_STREQ(sroce_opcode_name(s.opcode), s.name);

		const int tr = s.transport == 'R' ? SROCE_TRANSPORT_RC :
			       s.transport == 'U' ? SROCE_TRANSPORT_UC :
			       s.transport == 'D' ? SROCE_TRANSPORT_UD :
			       s.transport == 'X' ? SROCE_TRANSPORT_XRC :
						    SROCE_TRANSPORT_CNP;
		EXPECT_EQ(info->transport, tr);

		// headers present and their offsets, walking the spec order
		unsigned hdrs = 0;
		size_t off = SROCE_BTH_LEN;
		for (Ext e : s.exts) {
			const sroce_ext ce = to_core(e);

			hdrs |= SROCE_HDR(ce);
			EXPECT_EQ(info->off[ce], off) << "ext " << int(ce);
			EXPECT_TRUE(sroce_opcode_has(info, ce));
			off += sroce_test::ext_len(e);
		}
		EXPECT_EQ(info->hdrs, hdrs);
		EXPECT_EQ(info->hdr_len, off);
		EXPECT_EQ(info->hdr_len, sroce_test::spec_hdr_len(s));
		for (int e = 0; e < SROCE_EXT_NR; e++)
			if (!(hdrs & SROCE_HDR(e))) {
				EXPECT_EQ(info->off[e], 0) << "ext " << e;
				EXPECT_FALSE(sroce_opcode_has(info, sroce_ext(e)));
			}

		EXPECT_EQ(!!(info->flags & SROCE_OPF_PAYLOAD), s.payload);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_FIRST),
			  s.pos == Pos::First || s.pos == Pos::Only);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_MIDDLE), s.pos == Pos::Middle);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_LAST),
			  s.pos == Pos::Last || s.pos == Pos::Only);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_REQUEST), s.request);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_RESPONSE), s.response);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_IMM),
			  std::string(s.name).find("_IMM") != std::string::npos);
		EXPECT_EQ(!!(info->flags & SROCE_OPF_INV),
			  std::string(s.name).find("_INV") != std::string::npos);
		EXPECT_EQ(info->reply, s.reply);
		EXPECT_EQ(sroce_opcode_needs_reply(info), s.reply != 0);
	}
}

TEST(CoreOpcode, KindFollowsTheName)
{
	const std::pair<const char *, sroce_op_kind> kinds[] = {
		{"ATOMIC_WRITE", SROCE_KIND_ATOMIC_WRITE},
		{"FLUSH", SROCE_KIND_FLUSH},
		{"SEND", SROCE_KIND_SEND}, {"WRITE", SROCE_KIND_WRITE},
		{"READ_REQUEST", SROCE_KIND_READ_REQ},
		{"READ_RESPONSE", SROCE_KIND_READ_RESP},
		{"ATOMIC_ACK", SROCE_KIND_ATOMIC_ACK},
		{"CMP_SWAP", SROCE_KIND_CMP_SWAP},
		{"FETCH_ADD", SROCE_KIND_FETCH_ADD}, {"CNP", SROCE_KIND_CNP},
	};

	for (const SpecOp &s : sroce_test::spec_ops()) {
		const sroce_opcode_info *info = sroce_opcode_lookup(s.opcode);
		const std::string name = s.name;
		int want = -1;

		if (name == "RC_ACK" || name == "XRC_ACK")
			want = SROCE_KIND_ACK;
		for (const auto &[word, kind] : kinds)
			if (want < 0 && name.find(word) != std::string::npos)
				want = kind;
		EXPECT_EQ(info->kind, want) << s.name;
	}
}

TEST(CoreOpcode, NamesAreUnique)
{
	std::set<std::string> names;

	for (int c = 0; c < 256; c++)
		if (const auto *info = sroce_opcode_lookup(static_cast<uint8_t>(c))) {
			EXPECT_TRUE(names.insert(info->name).second) << info->name;
		}
}

TEST(CoreOpcode, TransportBits)
{
	for (int c = 0; c < 256; c++)
		EXPECT_EQ(sroce_opcode_transport(static_cast<uint8_t>(c)), c >> 5);
	EXPECT_EQ(sroce_opcode_transport(0x45), SROCE_TRANSPORT_RD);
	EXPECT_EQ(sroce_opcode_transport(0xa4), SROCE_TRANSPORT_XRC);
	EXPECT_EQ(sroce_opcode_transport(0x81), SROCE_TRANSPORT_CNP);
}

// The XRC rows (IBTA Annex A14) are RC's with transport 101b: each XRC
// opcode is known exactly when its RC twin is, except FLUSH and ATOMIC
// WRITE; a request has the same kind, reply, flags and headers plus an
// XRCETH right after the BTH, so every other header and the payload sit 4
// bytes further on; a response is RC's row unchanged but the transport.
TEST(CoreOpcode, XrcRowsAreRcRowsWithAnXrceth)
{
	int n = 0;

	for (int c = 0xa0; c < 0xc0; c++) {
		const auto xop = static_cast<uint8_t>(c);
		const auto rop = static_cast<uint8_t>(c & 0x1f);
		const sroce_opcode_info *x = sroce_opcode_lookup(xop);
		const sroce_opcode_info *r = sroce_opcode_lookup(rop);

		SCOPED_TRACE(testing::Message() << "opcode 0x" << std::hex << c);
		if (!r || r->kind == SROCE_KIND_FLUSH ||
		    r->kind == SROCE_KIND_ATOMIC_WRITE) {
			EXPECT_EQ(x, nullptr);
			continue;
		}
		ASSERT_NE(x, nullptr);
		n++;
		EXPECT_EQ(x->opcode, xop);
		EXPECT_EQ(x->transport, SROCE_TRANSPORT_XRC);
		EXPECT_EQ(sroce_opcode_transport(xop), SROCE_TRANSPORT_XRC);
		EXPECT_EQ(std::string(x->name), std::string("X") + r->name);
		EXPECT_EQ(x->kind, r->kind);
		EXPECT_EQ(x->reply, r->reply);
		EXPECT_EQ(x->flags, r->flags);

		if (r->flags & SROCE_OPF_RESPONSE) {
			EXPECT_EQ(x->hdrs, r->hdrs);
			EXPECT_FALSE(sroce_opcode_has(x, SROCE_EXT_XRCETH));
			EXPECT_EQ(x->hdr_len, r->hdr_len);
			for (int e = 0; e < SROCE_EXT_NR; e++)
				EXPECT_EQ(x->off[e], r->off[e]) << "ext " << e;
			continue;
		}
		ASSERT_TRUE(r->flags & SROCE_OPF_REQUEST);
		EXPECT_FALSE(sroce_opcode_has(r, SROCE_EXT_XRCETH));
		EXPECT_EQ(x->hdrs, r->hdrs | SROCE_HDR_XRCETH);
		EXPECT_EQ(x->off[SROCE_EXT_XRCETH], SROCE_BTH_LEN);
		EXPECT_EQ(x->hdr_len, r->hdr_len + SROCE_XRCETH_LEN);
		for (int e = 0; e < SROCE_EXT_NR; e++) {
			if (e == SROCE_EXT_XRCETH)
				continue;
			EXPECT_EQ(x->off[e],
				  r->off[e] ? r->off[e] + SROCE_XRCETH_LEN : 0)
				<< "ext " << e;
		}
	}
	// 17 requests, 6 responses
	EXPECT_EQ(n, 23);
}

// A few XRC rows spelled out byte by byte.
TEST(CoreOpcode, XrcHeaderOffsets)
{
	const struct {
		uint8_t opcode;
		sroce_ext ext;
		unsigned off;
		unsigned hdr_len;
	} cases[] = {
		{0xa4, SROCE_EXT_XRCETH, 12, 16},	// SEND ONLY
		{0xa3, SROCE_EXT_IMMDT, 16, 20},	// SEND LAST IMM
		{0xa6, SROCE_EXT_XRCETH, 12, 32},	// WRITE FIRST
		{0xa6, SROCE_EXT_RETH, 16, 32},
		{0xab, SROCE_EXT_RETH, 16, 36},		// WRITE ONLY IMM
		{0xab, SROCE_EXT_IMMDT, 32, 36},
		{0xac, SROCE_EXT_RETH, 16, 32},		// READ REQUEST
		{0xb3, SROCE_EXT_ATOMIC_ETH, 16, 44},	// CMP_SWAP
		{0xb4, SROCE_EXT_ATOMIC_ETH, 16, 44},	// FETCH_ADD
		{0xb7, SROCE_EXT_IETH, 16, 20},		// SEND ONLY INV
		{0xad, SROCE_EXT_AETH, 12, 16},		// READ RESPONSE FIRST
		{0xb1, SROCE_EXT_AETH, 12, 16},		// ACK
		{0xb2, SROCE_EXT_ATOMIC_ACK_ETH, 16, 24}, // ATOMIC ACK
	};

	for (const auto &c : cases) {
		const sroce_opcode_info *info = sroce_opcode_lookup(c.opcode);

		ASSERT_NE(info, nullptr) << std::hex << int(c.opcode);
		EXPECT_TRUE(sroce_opcode_has(info, c.ext)) << info->name;
		EXPECT_EQ(info->off[c.ext], c.off) << info->name;
		EXPECT_EQ(info->hdr_len, c.hdr_len) << info->name;
	}
	EXPECT_EQ(sroce_opcode_lookup(0xae)->hdr_len, 12u);	// RESPONSE MIDDLE
	EXPECT_EQ(sroce_opcode_lookup(0xae)->hdrs, 0u);
}

TEST(CoreOpcode, ReliableTransports)
{
	for (int t = 0; t < 8; t++)
		EXPECT_EQ(sroce_transport_is_reliable(sroce_transport(t)),
			  t == SROCE_TRANSPORT_RC || t == SROCE_TRANSPORT_XRC) << t;
}

// The largest header set (XRCETH and AtomicETH) has no payload; of the
// opcodes that carry one, the largest header set (XRCETH, RETH and ImmDt)
// stays within the 28 bytes that kernel/core/port.h's overhead budgets for
// extension headers.
TEST(CoreOpcode, LargestHeaderSet)
{
	unsigned max = 0, max_payload = 0;

	for (int c = 0; c < 256; c++)
		if (const auto *info = sroce_opcode_lookup(static_cast<uint8_t>(c))) {
			max = std::max<unsigned>(max, info->hdr_len);
			if (info->flags & SROCE_OPF_PAYLOAD)
				max_payload = std::max<unsigned>(max_payload,
								 info->hdr_len);
		}
	EXPECT_EQ(max, 12u + 4u + 28u);
	EXPECT_EQ(max_payload, 12u + 4u + 16u + 4u);
	// IPv6 + UDP + ICRC, and the rest for the BTH and extension headers
	EXPECT_LE(max_payload, unsigned(SROCE_ROCE_OVERHEAD - 40 - 8 - 4));
}

} // namespace
