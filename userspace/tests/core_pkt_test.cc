// Receive-path validation (kernel/core/pkt.c).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/icrc.h"
#include "kernel/core/pkt.h"
}

namespace {

using sroce_test::Bytes;
using sroce_test::PacketSpec;
using sroce_test::Pos;
using sroce_test::SpecOp;

// Parses from an exactly-sized heap copy: ASan catches any read past len.
sroce_drop parse(const Bytes &b, sroce_pkt *pkt)
{
	std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() ? b.size() : 1]);

	if (!b.empty())
		std::memcpy(copy.get(), b.data(), b.size());
	return sroce_pkt_parse(copy.get(), static_cast<uint32_t>(b.size()), pkt);
}

sroce_drop parse(const Bytes &b)
{
	sroce_pkt pkt{};

	return parse(b, &pkt);
}

sroce_drop parse(const PacketSpec &s)
{
	return parse(sroce_test::build_udp_payload(s));
}

const SpecOp &spec(uint8_t opcode)
{
	const SpecOp *op = sroce_test::spec_op(opcode);

	if (!op)
		throw std::invalid_argument("opcode");
	return *op;
}

// A well-formed packet of the opcode: PMTU-sized first/middle payloads,
// DMA lengths consistent with the payload, UD to the GSI QP.
PacketSpec good(const SpecOp &op, size_t payload = 37)
{
	PacketSpec s;

	s.opcode = op.opcode;
	if (op.payload) {
		s.payload = (op.pos == Pos::First || op.pos == Pos::Middle) ?
			1024 : payload;
		s.pad = static_cast<uint8_t>((4 - s.payload % 4) % 4);
	}
	s.dma_len = static_cast<uint32_t>(op.pos == Pos::First ? 4 * s.payload :
					  s.payload);
	if (op.opcode == 0x0c || op.opcode == 0xac)
		s.dma_len = 100000;	// read request: any length up to 2^31
	if (op.opcode == 0x1d) {	// ATOMIC WRITE: always one 8-byte word
		s.payload = s.dma_len = 8;
		s.pad = 0;
	}
	if (op.transport == 'D')
		s.qpn = 1;
	return s;
}

PacketSpec good(uint8_t opcode, size_t payload = 37)
{
	return good(spec(opcode), payload);
}

// Drop reasons compared by name, so failures are readable.
std::string name(sroce_drop d)
{
	return sroce_pkt_drop_name(d);
}

#define EXPECT_DROP(expr, reason) EXPECT_EQ(name(expr), name(reason))
#define ASSERT_DROP(expr, reason) ASSERT_EQ(name(expr), name(reason))

TEST(CorePkt, RxePacketsParseAndMatchWireshark)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame << ": " << v.what);
		const Bytes ip = sroce_test::from_hex(v.hex);
		const Bytes udp(ip.begin() + sroce_test::bth_offset(ip), ip.end());
		sroce_pkt pkt{};

		ASSERT_DROP(parse(udp, &pkt), SROCE_DROP_NONE);
		ASSERT_NE(pkt.op, nullptr);
		EXPECT_EQ(pkt.op->opcode, v.bth[0]);
		EXPECT_EQ(pkt.bth.psn, v.bth[8]);
		EXPECT_EQ(pkt.bth.dest_qp, v.bth[6]);
		EXPECT_EQ(pkt.bth.pad, v.bth[3]);
		EXPECT_EQ(pkt.len, udp.size());
		EXPECT_EQ(pkt.payload_off,
			  sroce_test::spec_hdr_len(spec(pkt.op->opcode)));
		EXPECT_EQ(pkt.payload_len + pkt.bth.pad, v.payload_with_pad);
		EXPECT_EQ(pkt.icrc_off, udp.size() - 4);
		EXPECT_EQ(pkt.icrc, sroce_icrc_load(udp.data() + udp.size() - 4));
		if (pkt.op->hdrs & SROCE_HDR_RETH) {
			EXPECT_EQ(pkt.reth.va, v.ext[0]);
			EXPECT_EQ(pkt.reth.rkey, v.ext[1]);
			EXPECT_EQ(pkt.reth.dma_len, v.ext[2]);
		}
		if (pkt.op->hdrs & SROCE_HDR_AETH) {
			EXPECT_EQ(pkt.aeth.syndrome, v.ext[3]);
			EXPECT_EQ(pkt.aeth.msn, v.ext[4]);
		}
		if (pkt.op->hdrs & SROCE_HDR_DETH) {
			EXPECT_EQ(pkt.deth.qkey, v.ext[5]);
			EXPECT_EQ(pkt.deth.src_qp, v.ext[6]);
		}
		if (pkt.op->hdrs & SROCE_HDR_ATOMIC_ETH) {
			EXPECT_EQ(pkt.atomic.va, v.ext[0]);
			EXPECT_EQ(pkt.atomic.swap_add, v.ext[7]);
			EXPECT_EQ(pkt.atomic.compare, v.ext[8]);
		}
		if (pkt.op->hdrs & SROCE_HDR_ATOMIC_ACK_ETH) {
			EXPECT_EQ(pkt.atomic_orig, v.ext[9]);
		}
	}
}

TEST(CorePkt, EveryOpcodeWellFormed)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		for (size_t payload : {0, 1, 2, 3, 4, 255, 256, 4095, 4096}) {
			if (!op.payload && payload)
				continue;
			const PacketSpec s = good(op, payload);
			const Bytes b = sroce_test::build_udp_payload(s);
			sroce_pkt pkt{};

			ASSERT_DROP(parse(b, &pkt), SROCE_DROP_NONE)
				<< op.name << " payload " << payload;
			ASSERT_EQ(pkt.op->opcode, op.opcode);
			EXPECT_EQ(pkt.payload_off, sroce_test::spec_hdr_len(op));
			EXPECT_EQ(pkt.payload_len, s.payload) << op.name;
			EXPECT_EQ(pkt.payload_off + pkt.payload_len + pkt.bth.pad + 4,
				  b.size());
			EXPECT_EQ(pkt.bth.dest_qp, s.qpn);
			EXPECT_EQ(pkt.bth.psn, s.psn);
			// the builder's recognisable header values
			const unsigned h = pkt.op->hdrs;
			if (h & SROCE_HDR_IMMDT) {
				EXPECT_EQ(pkt.imm, 0xdeadbeefu);
			}
			if (h & SROCE_HDR_IETH) {
				EXPECT_EQ(pkt.ieth_rkey, 0xcafeu);
			}
			if (h & SROCE_HDR_DETH) {
				EXPECT_EQ(pkt.deth.qkey, 0x80010000u);
				EXPECT_EQ(pkt.deth.src_qp, 0x42u);
			}
			if (h & SROCE_HDR_XRCETH) {
				EXPECT_EQ(pkt.xrc_srqn, s.xrc_srqn);
			}
			if (h & SROCE_HDR_RETH) {
				EXPECT_EQ(pkt.reth.va, s.va);
				EXPECT_EQ(pkt.reth.rkey, 0x1234u);
				EXPECT_EQ(pkt.reth.dma_len, s.dma_len);
			}
			if (h & SROCE_HDR_ATOMIC_ETH) {
				EXPECT_EQ(pkt.atomic.rkey, 0x5678u);
				EXPECT_EQ(pkt.atomic.swap_add, 0x1111111111111111ull);
				EXPECT_EQ(pkt.atomic.compare, 0x2222222222222222ull);
			}
			if (h & SROCE_HDR_AETH) {
				EXPECT_EQ(pkt.aeth.syndrome, 0x1f);
				EXPECT_EQ(pkt.aeth.msn, 7u);
			}
			if (h & SROCE_HDR_ATOMIC_ACK_ETH) {
				EXPECT_EQ(pkt.atomic_orig, 0x3333333333333333ull);
			}
		}
	}
}

TEST(CorePkt, TooShort)
{
	for (size_t n = 0; n < 16; n++)
		EXPECT_DROP(parse(Bytes(n, 0)), SROCE_DROP_TOO_SHORT) << n;
	// 16 bytes: a BTH and an ICRC, enough to look at
	EXPECT_NE(name(parse(Bytes(16, 0))), name(SROCE_DROP_TOO_SHORT));
}

TEST(CorePkt, LengthMustBeWholeWords)
{
	Bytes b = sroce_test::build_udp_payload(good(0x04, 8));

	ASSERT_DROP(parse(b), SROCE_DROP_NONE);
	for (int extra = 1; extra < 4; extra++) {
		Bytes c = b;
		c.insert(c.end(), extra, 0);
		EXPECT_DROP(parse(c), SROCE_DROP_LEN_UNALIGNED) << extra;
	}
}

TEST(CorePkt, TransportVersion)
{
	for (uint8_t tver = 1; tver < 16; tver++) {
		PacketSpec s = good(0x04);
		s.tver = tver;
		EXPECT_DROP(parse(s), SROCE_DROP_BAD_TVER) << int(tver);
	}
	// checked before the opcode: an unknown opcode of another version
	PacketSpec s = good(0x04);
	s.tver = 1;
	s.opcode = 0x55;
	EXPECT_DROP(parse(s), SROCE_DROP_BAD_TVER);
}

TEST(CorePkt, UnknownOpcodes)
{
	for (int c = 0; c < 256; c++) {
		if (sroce_test::spec_op(static_cast<uint8_t>(c)))
			continue;
		Bytes b(64, 0);
		b[0] = static_cast<uint8_t>(c);
		b[2] = b[3] = 0xff;
		b[7] = 0x11;
		sroce_pkt pkt{};

		EXPECT_DROP(parse(b, &pkt), SROCE_DROP_UNKNOWN_OPCODE) << c;
		EXPECT_EQ(pkt.op, nullptr);
		EXPECT_EQ(pkt.bth.opcode, c);	// still reported, for counters
	}
}

TEST(CorePkt, PkeyMatchRules)
{
	// local, remote, match
	const struct {
		uint16_t local, remote;
		bool match;
	} cases[] = {
		{0xffff, 0xffff, true},		// full - full
		{0xffff, 0x7fff, true},		// full - limited
		{0x7fff, 0xffff, true},		// limited - full
		{0x7fff, 0x7fff, false},	// limited - limited
		{0xffff, 0x0000, false},	// invalid partition
		{0xffff, 0x8000, false},
		{0x8000, 0x8000, false},
		{0xffff, 0xfffe, false},	// other partitions
		{0xffff, 0x1234, false},
		{0x9234, 0x1234, true},
		{0x1234, 0x9234, true},
		{0x1234, 0x1234, false},
		{0x9234, 0x9235, false},
	};

	for (const auto &c : cases)
		EXPECT_EQ(sroce_pkt_pkey_match(c.local, c.remote), c.match)
			<< std::hex << c.local << " " << c.remote;
}

TEST(CorePkt, DefaultPartitionOnly)
{
	for (uint32_t k = 0; k < 0x10000; k++) {
		PacketSpec s = good(0x04);
		s.pkey = static_cast<uint16_t>(k);
		const bool ok = (k & 0x7fff) == 0x7fff;

		ASSERT_DROP(parse(s), ok ? SROCE_DROP_NONE : SROCE_DROP_BAD_PKEY)
			<< std::hex << k;
	}
}

TEST(CorePkt, DestinationQp)
{
	const struct {
		uint8_t opcode;
		uint32_t qpn;
		bool ok;
	} cases[] = {
		{0x04, 0, false},		// no QP0 on RoCE
		{0x64, 0, false},
		{0x81, 0, false},
		{0x04, 1, false},		// QP1 is the UD GSI QP
		{0x24, 1, false},
		{0x11, 1, false},
		{0x64, 1, true},
		{0x65, 1, true},
		{0x81, 1, true},		// a CNP may name any QP
		{0x04, 0xffffff, false},	// multicast is UD only
		{0x2a, 0xffffff, false},
		{0x64, 0xffffff, true},
		{0x81, 0xffffff, false},
		{0x04, 2, true},
		{0x04, 0xfffffe, true},
		{0xa4, 0, false},		// XRC: as RC
		{0xa4, 1, false},
		{0xb1, 1, false},
		{0xa4, 0xffffff, false},
		{0xac, 0xffffff, false},
		{0xa4, 2, true},
	};

	for (const auto &c : cases) {
		PacketSpec s = good(c.opcode);
		s.qpn = c.qpn;
		EXPECT_DROP(parse(s), c.ok ? SROCE_DROP_NONE : SROCE_DROP_BAD_QPN)
			<< std::hex << int(c.opcode) << " qpn " << c.qpn;
	}
}

// Every opcode, every word-aligned length below its headers + ICRC.
TEST(CorePkt, Truncated)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		const Bytes full = sroce_test::build_udp_payload(good(op, 0));
		const size_t need = sroce_test::spec_hdr_len(op) + 4;

		for (size_t n = 16; n < need; n += 4) {
			Bytes b(full.begin(), full.begin() + n);
			sroce_pkt pkt{};

			EXPECT_DROP(parse(b, &pkt), SROCE_DROP_TRUNCATED) << op.name << " " << n;
			EXPECT_EQ(pkt.op->opcode, op.opcode);
		}
	}
}

TEST(CorePkt, Cnp)
{
	PacketSpec s = good(0x81);
	Bytes b = sroce_test::build_udp_payload(s);
	sroce_pkt pkt{};

	ASSERT_EQ(b.size(), 32u);
	ASSERT_DROP(parse(b, &pkt), SROCE_DROP_NONE);
	EXPECT_EQ(pkt.payload_len, 0u);
	EXPECT_EQ(pkt.op->kind, SROCE_KIND_CNP);

	// the 16 reserved bytes are ignored, whatever they hold
	Bytes r = b;
	for (int i = 12; i < 28; i++)
		r[i] = 0xa5;
	EXPECT_DROP(parse(r), SROCE_DROP_NONE);
	// the Mellanox example CNP (BECN set, QP 0xd2), without its ICRC check
	EXPECT_DROP(parse(sroce_test::from_hex("8100ffff400000d200000000"
					       "00000000000000000000000000000000"
					       "e42dad81")),
		    SROCE_DROP_NONE);

	Bytes longer = b;
	longer.insert(longer.begin() + 28, 4, 0);
	EXPECT_DROP(parse(longer), SROCE_DROP_BAD_CNP);
	Bytes padded = b;
	padded[1] |= 0x10;
	EXPECT_DROP(parse(padded), SROCE_DROP_BAD_CNP);
	Bytes shorter(b.begin(), b.begin() + 28);
	EXPECT_DROP(parse(shorter), SROCE_DROP_TRUNCATED);
}

TEST(CorePkt, PayloadWhereNoneIsAllowed)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		if (op.payload || op.transport == 'N')
			continue;
		for (size_t extra : {4, 8, 1024}) {
			Bytes b = sroce_test::build_udp_payload(good(op));
			b.insert(b.end() - 4, extra, 0);
			EXPECT_DROP(parse(b), SROCE_DROP_UNEXPECTED_PAYLOAD)
				<< op.name << " " << extra;
		}
		// a pad count with nothing to pad
		Bytes b = sroce_test::build_udp_payload(good(op));
		b[1] |= 0x20;
		EXPECT_DROP(parse(b), SROCE_DROP_PAD_EXCEEDS_PAYLOAD) << op.name;
	}
}

TEST(CorePkt, PadLargerThanPayload)
{
	// SEND ONLY with nothing between BTH and ICRC (lengths are whole
	// words, so that is the only room smaller than 4) claiming a pad.
	for (int pad = 1; pad < 4; pad++) {
		PacketSpec s = good(0x04, 0);
		s.pad = 0;
		Bytes b = sroce_test::build_udp_payload(s);
		ASSERT_EQ(b.size(), 16u);
		b[1] = static_cast<uint8_t>(pad << 4);
		EXPECT_DROP(parse(b), SROCE_DROP_PAD_EXCEEDS_PAYLOAD) << pad;
	}
	// 4 bytes of room: any pad fits, payload = 4 - pad
	for (int pad = 0; pad < 4; pad++) {
		PacketSpec s = good(0x04, 4);
		s.pad = 0;
		Bytes b = sroce_test::build_udp_payload(s);
		b[1] = static_cast<uint8_t>(pad << 4);
		sroce_pkt pkt{};
		EXPECT_DROP(parse(b, &pkt), SROCE_DROP_NONE);
		EXPECT_EQ(pkt.payload_len, 4u - pad);
	}
}

TEST(CorePkt, AethSyndromes)
{
	// ACK packets, RC's and XRC's: every non-reserved syndrome is
	// acceptable.
	for (const uint8_t ack : {uint8_t(0x11), uint8_t(0xb1)}) {
		for (int syn = 0; syn < 256; syn++) {
			PacketSpec s = good(ack);
			s.syndrome = static_cast<uint8_t>(syn);
			const int kind = (syn >> 5) & 3, value = syn & 31;
			const bool ok = !(syn & 0x80) && kind != 2 &&
					!(kind == 3 && value > 4);

			EXPECT_DROP(parse(s), ok ? SROCE_DROP_NONE
						 : SROCE_DROP_BAD_SYNDROME)
				<< std::hex << int(ack) << " " << syn;
		}
	}
	// read responses and atomic ACKs: only ACK syndromes
	for (uint8_t opcode : {0x0d, 0x0f, 0x10, 0x12, 0xad, 0xaf, 0xb0, 0xb2}) {
		for (int syn = 0; syn < 256; syn++) {
			PacketSpec s = good(opcode);
			s.syndrome = static_cast<uint8_t>(syn);
			const bool ok = syn < 0x20;

			EXPECT_DROP(parse(s), ok ? SROCE_DROP_NONE : SROCE_DROP_BAD_SYNDROME)
				<< std::hex << int(opcode) << " " << syn;
		}
	}
}

TEST(CorePkt, PadOnlyOnLastPackets)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		// (ATOMIC WRITE carries exactly 8 bytes: CorePkt.AtomicWrite)
		if (!op.payload || op.opcode == 0x1d)
			continue;
		PacketSpec s = good(op);
		s.payload = 1024 - 1;
		s.pad = 1;
		if (op.pos == Pos::Only)
			s.dma_len = 1024 - 1;
		sroce_pkt pkt{};
		const bool last = op.pos == Pos::Last || op.pos == Pos::Only;

		EXPECT_DROP(parse(sroce_test::build_udp_payload(s), &pkt),
			    last ? SROCE_DROP_NONE : SROCE_DROP_PAD_NOT_LAST) << op.name;
	}
}

TEST(CorePkt, FirstAndMiddleCarryOnePmtu)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		if (op.pos != Pos::First && op.pos != Pos::Middle)
			continue;
		for (size_t n = 0; n <= 8192; n += 4) {
			PacketSpec s = good(op);
			s.payload = n;
			s.dma_len = 1u << 20;
			const bool pmtu = n == 256 || n == 512 || n == 1024 ||
					  n == 2048 || n == 4096;

			ASSERT_DROP(parse(s), pmtu ? SROCE_DROP_NONE :
						      SROCE_DROP_BAD_PAYLOAD_LEN)
				<< op.name << " " << n;
		}
	}
}

TEST(CorePkt, NoPacketCarriesMoreThan4096)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		if (op.pos != Pos::Last && op.pos != Pos::Only)
			continue;
		if (!op.payload || op.opcode == 0x1d)	// 8 bytes, see above
			continue;
		for (size_t n : {4096, 4097, 4100, 8192}) {
			PacketSpec s = good(op, n);
			EXPECT_DROP(parse(s), n <= 4096 ? SROCE_DROP_NONE :
						     SROCE_DROP_BAD_PAYLOAD_LEN)
				<< op.name << " " << n;
		}
	}
}

// Against a QP's path MTU: first and middle packets carry exactly one,
// last and only packets at most one; packets without payload pass.
TEST(CorePkt, PathMtuOfConnectedRequests)
{
	for (const SpecOp &op : sroce_test::spec_ops()) {
		if (!op.request || op.transport == 'D')
			continue;
		for (const uint32_t pmtu : {256u, 1024u, 4096u}) {
			for (const size_t n : {size_t(0), size_t(4), size_t(256),
					       size_t(pmtu - 4), size_t(pmtu),
					       size_t(pmtu + 4), size_t(4096)}) {
				const bool middle = op.pos == Pos::First ||
						    op.pos == Pos::Middle;
				PacketSpec s = good(op);
				sroce_pkt pkt{};

				if (op.payload) {
					s.payload = n;
					s.pad = 0;
					s.dma_len = middle ? 1u << 20 : uint32_t(n);
				}
				// the parser's own limits come first
				if (parse(sroce_test::build_udp_payload(s), &pkt) !=
				    SROCE_DROP_NONE)
					continue;
				const bool ok = !op.payload ||
						(middle ? n == pmtu : n <= pmtu);
				EXPECT_DROP(sroce_pkt_check_pmtu(&pkt, pmtu),
					    ok ? SROCE_DROP_NONE :
						 SROCE_DROP_BAD_PAYLOAD_LEN)
					<< op.name << " " << n << " at " << pmtu;
			}
		}
	}
}

TEST(CorePkt, DmaLength)
{
	for (uint8_t only : {0x0a, 0x0b, 0x2a, 0x2b, 0xaa, 0xab}) {
		for (uint32_t dma : {0u, 36u, 37u, 38u, 4096u, 0x80000000u,
				     0x80000001u, 0xffffffffu}) {
			PacketSpec s = good(only, 37);
			s.dma_len = dma;
			EXPECT_DROP(parse(s), dma == 37 ? SROCE_DROP_NONE :
						     SROCE_DROP_BAD_DMA_LEN)
				<< std::hex << int(only) << " " << dma;
		}
		PacketSpec z = good(only, 0);	// zero-length write
		EXPECT_DROP(parse(z), SROCE_DROP_NONE);
	}
	for (uint8_t first : {0x06, 0x26, 0xa6}) {
		for (uint32_t dma : {0u, 1023u, 1024u, 1025u, 2048u,
				     0x80000000u, 0x80000001u}) {
			PacketSpec s = good(first);
			s.dma_len = dma;
			const bool ok = dma > 1024 && dma <= 0x80000000u;
			EXPECT_DROP(parse(s), ok ? SROCE_DROP_NONE :
						   SROCE_DROP_BAD_DMA_LEN)
				<< std::hex << int(first) << " " << dma;
		}
	}
	for (uint8_t read : {0x0c, 0xac}) {
		for (uint32_t dma : {0u, 1u, 0x80000000u, 0x80000001u,
				     0xffffffffu}) {
			PacketSpec s = good(read);
			s.dma_len = dma;
			EXPECT_DROP(parse(s), dma <= 0x80000000u ?
						      SROCE_DROP_NONE :
						      SROCE_DROP_BAD_DMA_LEN)
				<< std::hex << int(read) << " " << dma;
		}
	}
}

TEST(CorePkt, AtomicAlignment)
{
	for (uint8_t opcode : {0x13, 0x14, 0xb3, 0xb4}) {
		for (uint64_t va = 0x1000; va < 0x1010; va++) {
			PacketSpec s = good(opcode);
			s.va = va;
			EXPECT_DROP(parse(s), va % 8 ? SROCE_DROP_MISALIGNED_ATOMIC :
						       SROCE_DROP_NONE) << va;
		}
	}
}

// ATOMIC WRITE (IBTA A19.5): one 8-byte word at an aligned address, the
// RETH's length saying so; anything else is an invalid request.
TEST(CorePkt, AtomicWrite)
{
	PacketSpec s = good(0x1d, 8);
	s.dma_len = 8;
	sroce_pkt pkt{};

	ASSERT_DROP(parse(sroce_test::build_udp_payload(s), &pkt),
		    SROCE_DROP_NONE);
	EXPECT_EQ(pkt.op->kind, SROCE_KIND_ATOMIC_WRITE);
	EXPECT_EQ(pkt.payload_len, 8u);
	EXPECT_EQ(pkt.reth.va, 0x1000u);
	for (uint64_t va = 0x1001; va < 0x1008; va++) {
		s.va = va;
		EXPECT_DROP(parse(s), SROCE_DROP_MISALIGNED_ATOMIC) << va;
	}
	s.va = 0x2000;
	for (uint32_t len : {0u, 4u, 7u, 9u, 16u}) {
		PacketSpec t = good(0x1d);
		t.payload = len;
		t.pad = uint8_t((4 - len % 4) % 4);
		EXPECT_DROP(parse(t), SROCE_DROP_BAD_DMA_LEN) << len;
		t = good(0x1d);
		t.dma_len = len;
		EXPECT_DROP(parse(t), SROCE_DROP_BAD_DMA_LEN) << len;
	}
}

// FLUSH (IBTA A19.4): FETH then RETH, no payload; a placement type of the
// known bits, a selectivity of range or region, reserved bits ignored.
TEST(CorePkt, Flush)
{
	PacketSpec s = good(0x1c);
	s.dma_len = 4096;
	s.feth = 0xffffffc0u | 1u << 4 | 3u;	// reserved, region, both
	sroce_pkt pkt{};

	ASSERT_DROP(parse(sroce_test::build_udp_payload(s), &pkt),
		    SROCE_DROP_NONE);
	EXPECT_EQ(pkt.op->kind, SROCE_KIND_FLUSH);
	EXPECT_EQ(pkt.feth.plt, 3u);
	EXPECT_EQ(pkt.feth.sel, 1u);
	EXPECT_EQ(pkt.reth.dma_len, 4096u);
	EXPECT_EQ(pkt.reth.va, 0x1000u);
	EXPECT_EQ(pkt.payload_len, 0u);
	for (uint32_t feth : {0x0u, 0x4u, 0x8u, 0x9u, 0x21u, 0x31u}) {
		s.feth = feth;
		EXPECT_DROP(parse(s), SROCE_DROP_BAD_FETH) << feth;
	}
	s.feth = 1;
	EXPECT_DROP(parse(s), SROCE_DROP_NONE);
	s.payload = 4;
	EXPECT_DROP(parse(s), SROCE_DROP_UNEXPECTED_PAYLOAD);
}

// The FETH round-trips through its encoder, reserved bits included.
TEST(CorePkt, FethEncoding)
{
	const sroce_feth f = {2, 1, 0xabcd0000u};
	uint8_t b[4];
	sroce_feth g{};

	sroce_hdr_feth_encode(b, &f);
	EXPECT_EQ(b[3], 0x12);
	EXPECT_EQ(b[0], 0xab);
	sroce_hdr_feth_decode(&g, b);
	EXPECT_EQ(g.plt, 2u);
	EXPECT_EQ(g.sel, 1u);
	EXPECT_EQ(g.resv, 0xabcd0000u);
}

// XRC requests (IBTA Annex A14): the XRCETH right after the BTH names
// the XRC SRQ; the other headers and the payload follow it.
TEST(CorePkt, XrcRequestsCarryTheirSrq)
{
	const struct {
		uint8_t opcode;
		size_t payload;
		uint32_t payload_off;
	} cases[] = {
		{0xa4, 37, 16},		// SEND ONLY
		{0xa6, 1024, 32},	// WRITE FIRST: XRCETH, RETH
		{0xac, 0, 32},		// READ REQUEST: XRCETH, RETH
		{0xb3, 0, 44},		// CMP_SWAP: XRCETH, AtomicETH
		{0xab, 5, 36},		// WRITE ONLY IMM: XRCETH, RETH, ImmDt
		{0xb7, 0, 20},		// SEND ONLY INV: XRCETH, IETH
	};

	for (const auto &c : cases) {
		for (uint32_t srqn : {0x000000u, 0x000001u, 0x00abcdu,
				      0xffffffu}) {
			SCOPED_TRACE(testing::Message() << std::hex << "opcode "
				     << int(c.opcode) << " srqn " << srqn);
			PacketSpec s = good(c.opcode, c.payload);
			s.xrc_srqn = srqn;
			s.va = 0x2000;
			Bytes b = sroce_test::build_udp_payload(s);
			sroce_pkt pkt{};

			ASSERT_EQ(b[12], 0);
			ASSERT_DROP(parse(b, &pkt), SROCE_DROP_NONE);
			EXPECT_EQ(pkt.op->transport, SROCE_TRANSPORT_XRC);
			EXPECT_EQ(pkt.xrc_srqn, srqn);
			EXPECT_EQ(pkt.payload_off, c.payload_off);
			EXPECT_EQ(pkt.payload_len, s.payload);
			if (pkt.op->hdrs & SROCE_HDR_RETH) {
				EXPECT_EQ(pkt.reth.va, 0x2000u);
				EXPECT_EQ(pkt.reth.rkey, 0x1234u);
				EXPECT_EQ(pkt.reth.dma_len, s.dma_len);
			}
			if (pkt.op->hdrs & SROCE_HDR_ATOMIC_ETH) {
				EXPECT_EQ(pkt.atomic.va, 0x2000u);
				EXPECT_EQ(pkt.atomic.rkey, 0x5678u);
				EXPECT_EQ(pkt.atomic.swap_add, 0x1111111111111111ull);
			}
			if (pkt.op->hdrs & SROCE_HDR_IMMDT) {
				EXPECT_EQ(pkt.imm, 0xdeadbeefu);
			}
			if (pkt.op->hdrs & SROCE_HDR_IETH) {
				EXPECT_EQ(pkt.ieth_rkey, 0xcafeu);
			}

			// the reserved byte is ignored, whatever it holds
			b[12] = 0xa5;
			sroce_pkt rsvd{};
			EXPECT_DROP(parse(b, &rsvd), SROCE_DROP_NONE);
			EXPECT_EQ(rsvd.xrc_srqn, srqn);
		}
	}
}

// XRC responses carry no XRCETH: their AETH follows the BTH, as RC's.
TEST(CorePkt, XrcResponsesHaveNoXrceth)
{
	for (uint8_t opcode : {0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2}) {
		const uint8_t rc = opcode & 0x1f;
		const Bytes x = sroce_test::build_udp_payload(good(opcode));
		Bytes r = sroce_test::build_udp_payload(good(rc));
		sroce_pkt px{}, pr{};

		ASSERT_DROP(parse(x, &px), SROCE_DROP_NONE) << int(opcode);
		ASSERT_DROP(parse(r, &pr), SROCE_DROP_NONE) << int(rc);
		EXPECT_FALSE(px.op->hdrs & SROCE_HDR_XRCETH);
		EXPECT_EQ(px.payload_off, pr.payload_off);
		EXPECT_EQ(px.payload_len, pr.payload_len);
		EXPECT_EQ(px.aeth.syndrome, pr.aeth.syndrome);
		EXPECT_EQ(px.aeth.msn, pr.aeth.msn);
		EXPECT_EQ(px.atomic_orig, pr.atomic_orig);
		// the same bytes but the opcode: the same packet
		r[0] = opcode;
		EXPECT_EQ(r, x);
	}
}

// An XRC request whose XRCETH (or what follows it) is cut short is
// truncated; one with nothing after its XRCETH is a SEND of no payload.
TEST(CorePkt, XrcTruncated)
{
	for (uint8_t opcode : {0xa4, 0xa6, 0xac, 0xb3, 0xb4, 0xab}) {
		const sroce_opcode_info *info = sroce_opcode_lookup(opcode);
		ASSERT_NE(info, nullptr);
		const Bytes full = sroce_test::build_udp_payload(good(opcode, 0));

		// the BTH alone, then every whole word short of the headers
		for (size_t n = 16; n < info->hdr_len + 4u; n += 4) {
			Bytes b(full.begin(), full.begin() + long(n) - 4);
			b.insert(b.end(), 4, 0);	// an ICRC
			sroce_pkt pkt{};

			EXPECT_DROP(parse(b, &pkt), SROCE_DROP_TRUNCATED)
				<< info->name << " " << n;
			ASSERT_NE(pkt.op, nullptr);
			EXPECT_EQ(pkt.op->opcode, opcode);
		}
	}
	// BTH + XRCETH + ICRC: an empty SEND ONLY
	PacketSpec s = good(0xa4, 0);
	s.pad = 0;
	sroce_pkt pkt{};
	ASSERT_EQ(sroce_test::build_udp_payload(s).size(), 20u);
	EXPECT_DROP(parse(sroce_test::build_udp_payload(s), &pkt),
		    SROCE_DROP_NONE);
	EXPECT_EQ(pkt.payload_len, 0u);
	EXPECT_EQ(pkt.xrc_srqn, 0x00abcdu);
}

// The later drop reasons leave a complete parse behind, for the NAK.
TEST(CorePkt, RequestErrorsAreFullyParsed)
{
	PacketSpec s = good(0x0a, 64);
	s.dma_len = 65;
	s.psn = 0xabcdef;
	sroce_pkt pkt{};

	ASSERT_DROP(parse(sroce_test::build_udp_payload(s), &pkt),
		    SROCE_DROP_BAD_DMA_LEN);
	EXPECT_TRUE(sroce_pkt_drop_is_request_error(SROCE_DROP_BAD_DMA_LEN));
	EXPECT_EQ(pkt.bth.psn, 0xabcdefu);
	EXPECT_EQ(pkt.reth.dma_len, 65u);
	EXPECT_EQ(pkt.reth.rkey, 0x1234u);
	EXPECT_EQ(pkt.payload_len, 64u);
	EXPECT_EQ(pkt.op->opcode, 0x0a);
}

TEST(CorePkt, DropClasses)
{
	const std::set<int> request_errors = {
		SROCE_DROP_PAD_NOT_LAST, SROCE_DROP_BAD_PAYLOAD_LEN,
		SROCE_DROP_BAD_DMA_LEN, SROCE_DROP_MISALIGNED_ATOMIC,
		SROCE_DROP_BAD_FETH,
		// the data path's: an XRCETH naming no XRC SRQ of the domain
		SROCE_DROP_BAD_XRC_SRQ};

	for (int r = 0; r < SROCE_DROP_NR; r++)
		EXPECT_EQ(sroce_pkt_drop_is_request_error(sroce_drop(r)),
			  request_errors.count(r) == 1) << name(sroce_drop(r));
	EXPECT_FALSE(sroce_pkt_drop_is_request_error(SROCE_DROP_NR));
}

TEST(CorePkt, DropNames)
{
	std::set<std::string> names;

	EXPECT_EQ(name(SROCE_DROP_NONE), "none");
	EXPECT_EQ(SROCE_DROP_NR, 18);
	for (int r = 0; r < SROCE_DROP_NR; r++) {
		const std::string n = name(sroce_drop(r));

		EXPECT_FALSE(n.empty()) << r;
		EXPECT_NE(n, "invalid") << r;
		EXPECT_TRUE(names.insert(n).second) << n;
		for (char c : n)	// usable as a counter name
			EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << n;
	}
	EXPECT_EQ(name(SROCE_DROP_NR), "invalid");
	EXPECT_EQ(name(sroce_drop(1000)), "invalid");
	EXPECT_EQ(name(sroce_drop(-1)), "invalid");
}

// Every prefix of every captured packet, and random bytes: never a read
// outside the buffer (ASan), and a consistent description when accepted.
TEST(CorePkt, ArbitraryBytesStayInBounds)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		const Bytes ip = sroce_test::from_hex(v.hex);
		const Bytes udp(ip.begin() + sroce_test::bth_offset(ip), ip.end());

		for (size_t n = 0; n <= udp.size(); n++)
			parse(Bytes(udp.begin(), udp.begin() + n));
	}

	std::mt19937 rng(4791);
	int accepted = 0;
	for (int i = 0; i < 200000; i++) {
		Bytes b(rng() % 96);
		for (auto &c : b)
			c = static_cast<uint8_t>(rng());
		if (b.size() >= 4 && rng() % 2) {
			// steer towards the interesting paths
			b[1] &= 0x30;			// TVer 0
			b[2] = b[3] = 0xff;		// default P_Key
			b[0] = sroce_test::spec_ops()[rng() % sroce_test::spec_ops().size()].opcode;
		}
		sroce_pkt pkt{};
		const sroce_drop r = parse(b, &pkt);

		if (r == SROCE_DROP_NONE || sroce_pkt_drop_is_request_error(r)) {
			accepted++;
			ASSERT_NE(pkt.op, nullptr);
			ASSERT_EQ(pkt.payload_off + pkt.payload_len + pkt.bth.pad + 4,
				  b.size());
			ASSERT_GE(pkt.payload_off, pkt.op->hdr_len);
		}
	}
	EXPECT_GT(accepted, 100);
}

} // namespace
