// The packet builder of sroce_roce_send and of the device tests that aim
// packets at a QP (device/roce_packet.cc), held to the rdma_rxe vectors and
// to the protocol core: its ICRC is the one rdma_rxe sent and the one the
// core verifies, and each malformed kind the device tests send is refused
// by the core's parser for the reason the tests expect of the module.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>
#include <random>
#include <string>

#include "core_test_util.h"
#include "device/roce_packet.h"

extern "C" {
#include "kernel/core/icrc.h"
#include "kernel/core/pkt.h"
}

namespace {

using sroce::roce::Addr;
using sroce::roce::Bytes;
using sroce::roce::Spec;
using sroce::roce::Transport;

uint32_t wire_icrc(const Bytes &p)
{
	return sroce_icrc_load(p.data() + p.size() - 4);
}

Addr addr(const char *text)
{
	const std::optional<Addr> a = sroce::roce::parse_addr(text);

	EXPECT_TRUE(a) << text;
	return a.value_or(Addr{});
}

// The packet from src to dst, and the core's ICRC verdict on it.
sroce_icrc_status core_verify(const Bytes &p)
{
	const size_t ip = (p[0] >> 4) == 4 ? 20 : 40;

	return sroce_icrc_verify(sroce_test::crc32_table, p.data(),
				 p.data() + ip, p.data() + ip + 8,
				 uint32_t(p.size() - ip - 8));
}

// The core parser's verdict on the packet's UDP payload.
sroce_drop core_parse(const Bytes &p, sroce_pkt *pkt)
{
	const size_t bth = ((p[0] >> 4) == 4 ? 20 : 40) + 8;

	return sroce_pkt_parse(p.data() + bth, uint32_t(p.size() - bth), pkt);
}

uint8_t op(Transport t, const char *name)
{
	return sroce::roce::opcode_by_name(t, name).value_or(0xff);
}

class RocePacket : public ::testing::Test {
protected:
	Bytes make(const Spec &s, bool v6 = false)
	{
		return v6 ? sroce::roce::build(addr("fd00::1"), addr("fd00::2"),
					       s, rng_) :
			    sroce::roce::build(addr("10.0.0.1"),
					       addr("10.0.0.2"), s, rng_);
	}

	std::mt19937 rng_{12345};
};

TEST_F(RocePacket, Crc32MatchesTheCheckValue)
{
	const auto *p = reinterpret_cast<const uint8_t *>("123456789");

	EXPECT_EQ(~sroce::roce::crc32(~0u, p, 9), 0xcbf43926u);
}

TEST_F(RocePacket, IcrcOfTheRxeVectors)
{
	ASSERT_FALSE(sroce_test::rxe_vectors().empty());
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(v.what);
		const Bytes p = sroce_test::from_hex(v.hex);
		const std::optional<uint32_t> c =
			sroce::roce::icrc(p.data(), p.size());

		ASSERT_TRUE(c);
		EXPECT_EQ(*c, wire_icrc(p));
	}
}

TEST_F(RocePacket, IcrcRefusesOtherIpHeaders)
{
	Bytes p = make(Spec{});

	p[0] = 0x46;	// IPv4 with options
	EXPECT_FALSE(sroce::roce::icrc(p.data(), p.size()));
	EXPECT_FALSE(sroce::roce::icrc(p.data(), 40));
}

// Valid packets of every transport over both IP versions: the core
// verifies their ICRC and parses them as built; a bad-icrc one fails.
TEST_F(RocePacket, ValidPacketsPassTheCore)
{
	for (const bool v6 : {false, true}) {
		for (const Transport t : {Transport::RC, Transport::UC,
					  Transport::UD, Transport::XRC}) {
			Spec s;
			s.opcode = op(t, "send-only");
			s.qpn = 0x12345;
			s.psn = 0xabcdef;
			s.len = 13;
			s.fill = 0x42;
			s.qkey = 0x11111111;
			s.xrc_srqn = 0x654321;
			const Bytes p = make(s, v6);
			sroce_pkt pkt{};

			EXPECT_EQ(core_verify(p), SROCE_ICRC_OK);
			ASSERT_EQ(core_parse(p, &pkt), SROCE_DROP_NONE);
			EXPECT_EQ(pkt.bth.opcode, s.opcode);
			EXPECT_EQ(pkt.bth.dest_qp, s.qpn);
			EXPECT_EQ(pkt.bth.psn, s.psn);
			EXPECT_EQ(pkt.bth.pad, 3);
			EXPECT_EQ(pkt.payload_len, 13u);
			if (t == Transport::UD) {
				EXPECT_EQ(pkt.deth.qkey, s.qkey);
			}
			if (t == Transport::XRC) {
				EXPECT_EQ(pkt.op->transport, SROCE_TRANSPORT_XRC);
				EXPECT_EQ(pkt.xrc_srqn, s.xrc_srqn);
			}
			s.bad_icrc = true;
			EXPECT_EQ(core_verify(make(s, v6)), SROCE_ICRC_MISMATCH);
		}
	}
}

TEST_F(RocePacket, WriteOnlyCarriesItsLengthInTheReth)
{
	for (const Transport t : {Transport::UC, Transport::XRC}) {
		Spec s;
		sroce_pkt pkt{};

		s.opcode = op(t, "write-only");
		s.len = 64;
		s.va = 0x1000;
		s.rkey = 0x77;
		s.xrc_srqn = 0x42;
		ASSERT_EQ(core_parse(make(s), &pkt), SROCE_DROP_NONE);
		EXPECT_EQ(pkt.reth.dma_len, 64u);
		EXPECT_EQ(pkt.reth.va, 0x1000u);
		EXPECT_EQ(pkt.reth.rkey, 0x77u);
		EXPECT_EQ(pkt.payload_len, 64u);
		if (t == Transport::XRC) {
			EXPECT_EQ(pkt.xrc_srqn, 0x42u);
		}
	}
}

// XRC packets of every named opcode: the XRCETH, then RC's headers.
TEST_F(RocePacket, XrcRequestsParse)
{
	for (const char *name : {"send-first", "send-middle", "send-last",
				 "send-only", "write-first", "write-middle",
				 "write-last", "write-only"}) {
		SCOPED_TRACE(name);
		const std::string n = name;
		Spec s;
		sroce_pkt pkt{};

		s.opcode = op(Transport::XRC, name);
		ASSERT_EQ(s.opcode, 0xa0 | op(Transport::RC, name));
		s.len = n.ends_with("first") || n.ends_with("middle") ? 256 : 20;
		s.dma_len = n == "write-first" ? 1024 : s.len;
		s.xrc_srqn = 0xfedcba;
		ASSERT_EQ(core_parse(make(s), &pkt), SROCE_DROP_NONE);
		EXPECT_EQ(pkt.op->transport, SROCE_TRANSPORT_XRC);
		EXPECT_EQ(pkt.xrc_srqn, 0xfedcbau);
		EXPECT_EQ(pkt.payload_off, 12 + sroce::roce::ext_len(s.opcode));
		EXPECT_EQ(pkt.payload_len, s.len);
	}
}

// The malformed kinds of verbs_malformed_test.cc, by the core's reason;
// each still carries a valid ICRC.
TEST_F(RocePacket, MalformedKindsAsTheCoreSeesThem)
{
	struct Case {
		const char *what;
		Spec s;
		sroce_drop want;
	};
	Spec write_only, ud, pad, unaligned, rd, xrc_rsvd, xrc_flush;
	write_only.opcode = op(Transport::RC, "write-only");
	ud.opcode = op(Transport::UD, "send-only");
	pad.len = 0;
	pad.pad = 3;
	unaligned.cut = 13;
	rd.opcode = 0x44;
	xrc_rsvd.opcode = 0xb5;
	xrc_flush.opcode = 0xbc;
	Case cases[] = {
		{"WRITE ONLY, no RETH", write_only, SROCE_DROP_TRUNCATED},
		{"WRITE ONLY, half a RETH", write_only, SROCE_DROP_TRUNCATED},
		{"UD SEND ONLY, half a DETH", ud, SROCE_DROP_TRUNCATED},
		{"pad without payload", pad, SROCE_DROP_PAD_EXCEEDS_PAYLOAD},
		{"not whole words", unaligned, SROCE_DROP_LEN_UNALIGNED},
		{"RD SEND ONLY", rd, SROCE_DROP_UNKNOWN_OPCODE},
		{"XRC reserved 0xb5", xrc_rsvd, SROCE_DROP_UNKNOWN_OPCODE},
		{"XRC FLUSH", xrc_flush, SROCE_DROP_UNKNOWN_OPCODE},
	};
	cases[0].s.cut = 0;
	cases[1].s.cut = 8;
	cases[2].s.cut = 4;
	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		const Bytes p = make(c.s);
		sroce_pkt pkt{};

		EXPECT_EQ(core_verify(p), SROCE_ICRC_OK);
		EXPECT_EQ(core_parse(p, &pkt), c.want);
	}
}

// The invalid requests of verbs_malformed_test.cc: well-formed to the
// parser, or a request error, and refused against a path MTU of 1024.
TEST_F(RocePacket, InvalidRequestsAsTheCoreSeesThem)
{
	Spec over, first_half, first_pad, middle;
	sroce_pkt pkt{};

	over.len = 1040;
	first_half.opcode = op(Transport::RC, "send-first");
	first_half.len = 512;
	first_pad = first_half;
	first_pad.len = 1024;
	first_pad.pad = 1;
	middle.opcode = op(Transport::RC, "send-middle");
	middle.len = 1024;

	ASSERT_EQ(core_parse(make(over), &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(sroce_pkt_check_pmtu(&pkt, 1024), SROCE_DROP_BAD_PAYLOAD_LEN);
	EXPECT_EQ(sroce_pkt_check_pmtu(&pkt, 2048), SROCE_DROP_NONE);
	ASSERT_EQ(core_parse(make(first_half), &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(sroce_pkt_check_pmtu(&pkt, 1024), SROCE_DROP_BAD_PAYLOAD_LEN);
	EXPECT_EQ(sroce_pkt_check_pmtu(&pkt, 512), SROCE_DROP_NONE);
	EXPECT_EQ(core_parse(make(first_pad), &pkt), SROCE_DROP_PAD_NOT_LAST);
	ASSERT_EQ(core_parse(make(middle), &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(sroce_pkt_check_pmtu(&pkt, 1024), SROCE_DROP_NONE);
}

TEST_F(RocePacket, OpcodeNames)
{
	EXPECT_EQ(op(Transport::RC, "send-only"), 0x04);
	EXPECT_EQ(op(Transport::UC, "write-only"), 0x2a);
	EXPECT_EQ(op(Transport::UD, "send-only"), 0x64);
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::UD, "send-first"));
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::RC, "read"));
	EXPECT_EQ(sroce::roce::ext_len(0x0a), 16u);
	EXPECT_EQ(sroce::roce::ext_len(0x64), 8u);
	EXPECT_EQ(sroce::roce::ext_len(0x04), 0u);
	EXPECT_EQ(op(Transport::RC, "flush"), 0x1c);
	EXPECT_EQ(op(Transport::RC, "atomic-write"), 0x1d);
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::UC, "flush"));
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::UC, "atomic-write"));
	EXPECT_EQ(sroce::roce::ext_len(0x1c), 20u);
	EXPECT_EQ(sroce::roce::ext_len(0x1d), 16u);
	// XRC: RC's names in 0xa0-0xbf, an XRCETH before RC's headers
	EXPECT_EQ(op(Transport::XRC, "send-only"), 0xa4);
	EXPECT_EQ(op(Transport::XRC, "write-first"), 0xa6);
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::XRC, "flush"));
	EXPECT_FALSE(sroce::roce::opcode_by_name(Transport::XRC, "atomic-write"));
	EXPECT_EQ(sroce::roce::ext_len(0xa4), 4u);
	EXPECT_EQ(sroce::roce::ext_len(0xa6), 20u);
	EXPECT_EQ(sroce::roce::ext_len(0xab), 24u);
	EXPECT_EQ(sroce::roce::ext_len(0xb7), 8u);
	EXPECT_EQ(sroce::roce::ext_len(0xbc), 0u);	// unknown
	EXPECT_EQ(sroce::roce::transport_by_name("xrc"), Transport::XRC);
	EXPECT_STREQ(sroce::roce::transport_name(Transport::XRC), "XRC");
}

// The memory placement requests as the core parses them: headers in place,
// and the malformed kinds the device tests send refused for their reason.
TEST_F(RocePacket, PlacementRequestsParse)
{
	Spec aw, fl;
	sroce_pkt pkt{};

	aw.opcode = op(Transport::RC, "atomic-write");
	aw.len = 8;
	aw.va = 0x1000;
	aw.rkey = 0x4321;
	ASSERT_EQ(core_parse(make(aw), &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(pkt.reth.rkey, 0x4321u);
	EXPECT_EQ(pkt.reth.dma_len, 8u);
	aw.va = 0x1004;
	EXPECT_EQ(core_parse(make(aw), &pkt), SROCE_DROP_MISALIGNED_ATOMIC);
	aw.va = 0x1000;
	aw.len = 4;
	EXPECT_EQ(core_parse(make(aw), &pkt), SROCE_DROP_BAD_DMA_LEN);

	fl.opcode = op(Transport::RC, "flush");
	fl.len = 0;
	fl.dma_len = 4096;
	fl.va = 0x2000;
	fl.rkey = 0x99;
	fl.feth = 0x11;
	ASSERT_EQ(core_parse(make(fl, true), &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(pkt.feth.plt, 1u);
	EXPECT_EQ(pkt.feth.sel, 1u);
	EXPECT_EQ(pkt.reth.va, 0x2000u);
	EXPECT_EQ(pkt.reth.rkey, 0x99u);
	EXPECT_EQ(pkt.reth.dma_len, 4096u);
	fl.feth = 0;
	EXPECT_EQ(core_parse(make(fl), &pkt), SROCE_DROP_BAD_FETH);
}

} // namespace
