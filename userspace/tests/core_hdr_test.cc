// Wire headers of RoCE v2 (kernel/core/hdr.c, hdr.h, wire.h).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/hdr.h"
}

namespace {

using sroce_test::Bytes;
using sroce_test::from_hex;

// A header placed at the very end of an exactly-sized heap block, so ASan
// reports any read or write past its length.
class Exact {
public:
	explicit Exact(const Bytes &b) : n_(b.size()), p_(new uint8_t[n_])
	{
		std::copy(b.begin(), b.end(), p_.get());
	}
	explicit Exact(size_t n) : n_(n), p_(new uint8_t[n]())
	{
	}
	uint8_t *data() { return p_.get(); }
	Bytes bytes() const { return Bytes(p_.get(), p_.get() + n_); }

private:
	size_t n_;
	std::unique_ptr<uint8_t[]> p_;
};

TEST(CoreHdr, Lengths)
{
	// IBTA Vol. 1, 9.2-9.3 and A17.9.3.
	EXPECT_EQ(SROCE_BTH_LEN, 12);
	EXPECT_EQ(SROCE_RETH_LEN, 16);
	EXPECT_EQ(SROCE_AETH_LEN, 4);
	EXPECT_EQ(SROCE_DETH_LEN, 8);
	EXPECT_EQ(SROCE_XRCETH_LEN, 4);		// Annex A14
	EXPECT_EQ(SROCE_IMMDT_LEN, 4);
	EXPECT_EQ(SROCE_IETH_LEN, 4);
	EXPECT_EQ(SROCE_ATOMIC_ETH_LEN, 28);
	EXPECT_EQ(SROCE_ATOMIC_ACK_ETH_LEN, 8);
	EXPECT_EQ(SROCE_CNP_RSVD_LEN, 16);
	EXPECT_EQ(SROCE_ICRC_LEN, 4);
	EXPECT_EQ(SROCE_ROCE_V2_UDP_PORT, 4791);
}

TEST(CoreHdr, WireHelpersAreBigEndianAtAnyAlignment)
{
	const Bytes src = from_hex("0102030405060708090a");

	for (size_t off = 0; off < 2; off++) {
		const uint8_t *p = src.data() + off;
		const uint8_t b = static_cast<uint8_t>(off + 1);

		EXPECT_EQ(sroce_wire_get16(p), b << 8 | (b + 1));
		EXPECT_EQ(sroce_wire_get24(p),
			  uint32_t(b) << 16 | uint32_t(b + 1) << 8 | (b + 2));
	}
	EXPECT_EQ(sroce_wire_get32(src.data() + 1), 0x02030405u);
	EXPECT_EQ(sroce_wire_get64(src.data() + 2), 0x030405060708090aull);

	for (size_t off = 0; off < 8; off++) {
		Bytes dst(20, 0xee);

		sroce_wire_put64(dst.data() + off, 0x1122334455667788ull);
		sroce_wire_put16(dst.data() + off + 8, 0x99aa);
		Bytes want(20, 0xee);
		const Bytes v = from_hex("112233445566778899aa");
		std::copy(v.begin(), v.end(), want.begin() + off);
		EXPECT_EQ(dst, want) << off;
	}
	Bytes d(5, 0);
	sroce_wire_put24(d.data() + 1, 0xff123456);	// top byte ignored
	EXPECT_EQ(d, from_hex("0012345600"));
	sroce_wire_put32(d.data() + 1, 0xa1b2c3d4);
	EXPECT_EQ(d, from_hex("00a1b2c3d4"));
}

TEST(CoreHdr, BthDecodeKnownBytes)
{
	// opcode 0x0a; SE, M, pad 2, TVer 0; P_Key 0x7fff; FECN, resv6 0x15;
	// DestQP 0xabcdef; AckReq, resv7 0x05; PSN 0x123456
	Exact e(from_hex("0ae07fff95abcdef85123456"));
	sroce_bth b{};

	sroce_hdr_bth_decode(&b, e.data());
	EXPECT_EQ(b.opcode, 0x0a);
	EXPECT_TRUE(b.se);
	EXPECT_TRUE(b.mig);
	EXPECT_EQ(b.pad, 2);
	EXPECT_EQ(b.tver, 0);
	EXPECT_EQ(b.pkey, 0x7fff);
	EXPECT_TRUE(b.fecn);
	EXPECT_FALSE(b.becn);
	EXPECT_EQ(b.resv6, 0x15);
	EXPECT_EQ(b.dest_qp, 0xabcdefu);
	EXPECT_TRUE(b.ack_req);
	EXPECT_EQ(b.resv7, 0x05);
	EXPECT_EQ(b.psn, 0x123456u);

	EXPECT_EQ(sroce_bth_opcode(e.data()), 0x0a);
	EXPECT_EQ(sroce_bth_pad(e.data()), 2);
	EXPECT_EQ(sroce_bth_tver(e.data()), 0);
	EXPECT_EQ(sroce_bth_pkey(e.data()), 0x7fff);
	EXPECT_FALSE(sroce_bth_becn(e.data()));
	EXPECT_EQ(sroce_bth_qpn(e.data()), 0xabcdefu);
	EXPECT_TRUE(sroce_bth_ack_req(e.data()));
	EXPECT_EQ(sroce_bth_psn(e.data()), 0x123456u);
}

TEST(CoreHdr, BthEncodeKnownBytes)
{
	sroce_bth b{};
	b.opcode = 0x64;
	b.pad = 3;
	b.tver = 0;
	b.pkey = 0xffff;
	b.becn = true;
	b.dest_qp = 1;
	b.psn = 0xfffffe;
	Exact e(SROCE_BTH_LEN);

	sroce_hdr_bth_encode(e.data(), &b);
	EXPECT_EQ(e.bytes(), from_hex("6430ffff4000000100fffffe"));
}

// Every single bit of the 12 bytes lands in exactly one field, and encoding
// the decoded struct gives the bytes back.
TEST(CoreHdr, BthEveryBitRoundTrips)
{
	for (int bit = 0; bit < 96; bit++) {
		Bytes raw(SROCE_BTH_LEN, 0);
		raw[bit / 8] = static_cast<uint8_t>(0x80 >> (bit % 8));
		Exact in(raw), out(SROCE_BTH_LEN);
		sroce_bth b{};

		sroce_hdr_bth_decode(&b, in.data());
		sroce_hdr_bth_encode(out.data(), &b);
		EXPECT_EQ(out.bytes(), raw) << "bit " << bit;
	}
}

TEST(CoreHdr, BthRandomRoundTrip)
{
	std::mt19937_64 rng(1);

	for (int i = 0; i < 20000; i++) {
		Bytes raw(SROCE_BTH_LEN);
		for (auto &c : raw)
			c = static_cast<uint8_t>(rng());
		Exact in(raw), out(SROCE_BTH_LEN);
		sroce_bth b{};

		sroce_hdr_bth_decode(&b, in.data());
		sroce_hdr_bth_encode(out.data(), &b);
		ASSERT_EQ(out.bytes(), raw);
		ASSERT_EQ(b.psn, sroce_bth_psn(in.data()));
		ASSERT_EQ(b.dest_qp, sroce_bth_qpn(in.data()));
	}
}

// Out-of-range values are cut to their field and never spill over.
TEST(CoreHdr, BthEncodeTruncatesFields)
{
	sroce_bth b{};
	b.pad = 0xff;
	b.tver = 0xff;
	b.resv6 = 0xff;
	b.resv7 = 0xff;
	b.dest_qp = 0xff000000;
	b.psn = 0xff000000;
	Exact e(SROCE_BTH_LEN);

	sroce_hdr_bth_encode(e.data(), &b);
	EXPECT_EQ(e.bytes(), from_hex("003f00003f0000007f000000"));
}

TEST(CoreHdr, BthSettersChangeOnlyTheirField)
{
	const Bytes ones(SROCE_BTH_LEN, 0xff), zeros(SROCE_BTH_LEN, 0);
	Bytes b = ones;

	sroce_bth_set_psn(b.data(), 0x000102);
	EXPECT_EQ(b, from_hex("ffffffffffffffffff000102"));
	b = ones;
	sroce_bth_set_qpn(b.data(), 0x7000001);	// 24 bits kept
	EXPECT_EQ(b, from_hex("ffffffffff000001ffffffff"));
	b = ones;
	sroce_bth_set_ack_req(b.data(), false);
	EXPECT_EQ(b, from_hex("ffffffffffffffff7fffffff"));
	b = zeros;
	sroce_bth_set_ack_req(b.data(), true);
	EXPECT_EQ(b, from_hex("000000000000000080000000"));
	b = ones;
	sroce_bth_set_becn(b.data(), false);
	EXPECT_EQ(b, from_hex("ffffffffbfffffffffffffff"));
	b = zeros;
	sroce_bth_set_becn(b.data(), true);
	EXPECT_EQ(b, from_hex("000000004000000000000000"));
	EXPECT_TRUE(sroce_bth_becn(b.data()));
}

TEST(CoreHdr, Reth)
{
	Exact in(from_hex("00007f1234567890" "a1b2c3d4" "80000000"));
	sroce_reth r{};

	sroce_hdr_reth_decode(&r, in.data());
	EXPECT_EQ(r.va, 0x00007f1234567890ull);
	EXPECT_EQ(r.rkey, 0xa1b2c3d4u);
	EXPECT_EQ(r.dma_len, 0x80000000u);

	Exact out(SROCE_RETH_LEN);
	sroce_hdr_reth_encode(out.data(), &r);
	EXPECT_EQ(out.bytes(), in.bytes());
}

TEST(CoreHdr, Aeth)
{
	Exact in(from_hex("61fedcba"));
	sroce_aeth a{};

	sroce_hdr_aeth_decode(&a, in.data());
	EXPECT_EQ(a.syndrome, 0x61);
	EXPECT_EQ(a.msn, 0xfedcbau);

	a.msn = 0x12345678;	// only 24 bits go on the wire
	Exact out(SROCE_AETH_LEN);
	sroce_hdr_aeth_encode(out.data(), &a);
	EXPECT_EQ(out.bytes(), from_hex("61345678"));
}

TEST(CoreHdr, Deth)
{
	Exact in(from_hex("80010000" "a5" "000001"));
	sroce_deth d{};

	sroce_hdr_deth_decode(&d, in.data());
	EXPECT_EQ(d.qkey, 0x80010000u);
	EXPECT_EQ(d.resv8, 0xa5);
	EXPECT_EQ(d.src_qp, 1u);

	Exact out(SROCE_DETH_LEN);
	sroce_hdr_deth_encode(out.data(), &d);
	EXPECT_EQ(out.bytes(), in.bytes());
}

// XRCETH (IBTA Annex A14): 8 reserved bits, then the 24-bit XRC SRQ
// number.  The reserved byte is written as 0 and ignored when read.
TEST(CoreHdr, Xrceth)
{
	Exact in(from_hex("00" "abcdef"));

	EXPECT_EQ(sroce_hdr_xrceth_decode(in.data()), 0xabcdefu);
	Exact out(SROCE_XRCETH_LEN);
	sroce_hdr_xrceth_encode(out.data(), 0xabcdef);
	EXPECT_EQ(out.bytes(), in.bytes());

	// the reserved byte, whatever it holds, is not part of the number
	for (int rsvd : {0x01, 0x80, 0xa5, 0xff}) {
		Exact r(from_hex("00" "000123"));
		r.data()[0] = static_cast<uint8_t>(rsvd);
		EXPECT_EQ(sroce_hdr_xrceth_decode(r.data()), 0x000123u) << rsvd;
	}
	// ... and is written as 0 over whatever was there
	Bytes buf(SROCE_XRCETH_LEN + 2, 0x5a);
	sroce_hdr_xrceth_encode(buf.data() + 1, 0x000001);
	EXPECT_EQ(buf, from_hex("5a" "00000001" "5a"));
	// numbers are truncated to their 24 bits
	sroce_hdr_xrceth_encode(out.data(), 0xff123456u);
	EXPECT_EQ(out.bytes(), from_hex("00123456"));
	sroce_hdr_xrceth_encode(out.data(), 0x01000000u);
	EXPECT_EQ(out.bytes(), from_hex("00000000"));

	// every number round-trips, at every alignment
	std::mt19937 rng(0xa14);
	for (int i = 0; i < 10000; i++) {
		const uint32_t srqn = rng() & 0xffffff;
		const size_t off = i % 8;
		Bytes b(off + SROCE_XRCETH_LEN, 0xee);

		sroce_hdr_xrceth_encode(b.data() + off, srqn);
		ASSERT_EQ(b[off], 0);
		ASSERT_EQ(sroce_hdr_xrceth_decode(b.data() + off), srqn);
	}
}

TEST(CoreHdr, AtomicEth)
{
	Exact in(from_hex("0000561b77012000" "0000073d" "0102030405060708"
			  "f1f2f3f4f5f6f7f8"));
	sroce_atomic_eth a{};

	sroce_hdr_atomic_eth_decode(&a, in.data());
	EXPECT_EQ(a.va, 0x0000561b77012000ull);
	EXPECT_EQ(a.rkey, 0x73du);
	EXPECT_EQ(a.swap_add, 0x0102030405060708ull);
	EXPECT_EQ(a.compare, 0xf1f2f3f4f5f6f7f8ull);

	Exact out(SROCE_ATOMIC_ETH_LEN);
	sroce_hdr_atomic_eth_encode(out.data(), &a);
	EXPECT_EQ(out.bytes(), in.bytes());
}

TEST(CoreHdr, ImmDtIethAtomicAck)
{
	Exact imm(from_hex("deadbeef")), ieth(from_hex("00c0ffee")),
		aack(from_hex("6cc53a741f9997a9"));

	EXPECT_EQ(sroce_hdr_immdt_decode(imm.data()), 0xdeadbeefu);
	EXPECT_EQ(sroce_hdr_ieth_decode(ieth.data()), 0x00c0ffeeu);
	EXPECT_EQ(sroce_hdr_atomic_ack_eth_decode(aack.data()),
		  0x6cc53a741f9997a9ull);

	Exact o4(4), o8(8);
	sroce_hdr_immdt_encode(o4.data(), 0x01020304);
	EXPECT_EQ(o4.bytes(), from_hex("01020304"));
	sroce_hdr_ieth_encode(o4.data(), 0xa0b0c0d0);
	EXPECT_EQ(o4.bytes(), from_hex("a0b0c0d0"));
	sroce_hdr_atomic_ack_eth_encode(o8.data(), 0x8877665544332211ull);
	EXPECT_EQ(o8.bytes(), from_hex("8877665544332211"));
}

// Decoders work at every alignment (UBSan would flag a misaligned typed
// load) and encoders write exactly their length (guard bytes untouched).
TEST(CoreHdr, UnalignedAndExactWrites)
{
	const Bytes reth = from_hex("0102030405060708090a0b0c0d0e0f10");

	for (size_t off = 0; off < 8; off++) {
		Bytes buf(off + SROCE_RETH_LEN + 8, 0x5a);
		std::copy(reth.begin(), reth.end(), buf.begin() + off);
		sroce_reth r{};

		sroce_hdr_reth_decode(&r, buf.data() + off);
		EXPECT_EQ(r.va, 0x0102030405060708ull);
		EXPECT_EQ(r.dma_len, 0x0d0e0f10u);

		Bytes out(buf.size(), 0x5a);
		sroce_hdr_reth_encode(out.data() + off, &r);
		EXPECT_EQ(out, buf) << off;

		sroce_atomic_eth a{~0ull, ~0u, ~0ull, ~0ull};
		Bytes aout(off + SROCE_ATOMIC_ETH_LEN + 8, 0x5a);
		sroce_hdr_atomic_eth_encode(aout.data() + off, &a);
		for (size_t i = 0; i < aout.size(); i++) {
			const bool inside = i >= off &&
					    i < off + SROCE_ATOMIC_ETH_LEN;
			EXPECT_EQ(aout[i], inside ? 0xff : 0x5a) << off << " " << i;
		}
	}
}

// Syndrome classification restated from IBTA 9.3.5 for all 256 values.
TEST(CoreHdr, SyndromeKindOfEveryByte)
{
	for (int s = 0; s < 256; s++) {
		const int bits65 = (s >> 5) & 3, value = s & 31;
		sroce_aeth_kind want;

		if (s & 0x80 || bits65 == 2)
			want = SROCE_AETH_RESERVED;
		else if (bits65 == 0)
			want = SROCE_AETH_ACK;
		else if (bits65 == 1)
			want = SROCE_AETH_RNR_NAK;
		else
			want = value <= 4 ? SROCE_AETH_NAK : SROCE_AETH_RESERVED;
		EXPECT_EQ(sroce_hdr_syndrome_kind(static_cast<uint8_t>(s)), want)
			<< "syndrome 0x" << std::hex << s;
		EXPECT_EQ(sroce_hdr_syndrome_value(static_cast<uint8_t>(s)), value);
	}
}

TEST(CoreHdr, SyndromeBuild)
{
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_ACK, 31), 0x1f);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_RNR_NAK, 14), 0x2e);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_NAK, SROCE_NAK_PSN_SEQ_ERR), 0x60);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_NAK, SROCE_NAK_INVALID_REQ), 0x61);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_NAK, SROCE_NAK_REM_ACCESS_ERR), 0x62);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_NAK, SROCE_NAK_REM_OP_ERR), 0x63);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_NAK, SROCE_NAK_INVALID_RD_REQ), 0x64);
	EXPECT_EQ(sroce_hdr_syndrome(SROCE_AETH_ACK, 0xff), 0x1f); // value cut
	for (int k : {0, 1, 3})
		for (int v = 0; v < 5; v++) {
			const auto kind = static_cast<sroce_aeth_kind>(k);
			const uint8_t s = sroce_hdr_syndrome(kind, static_cast<uint8_t>(v));

			EXPECT_EQ(sroce_hdr_syndrome_kind(s), kind);
			EXPECT_EQ(sroce_hdr_syndrome_value(s), v);
		}
}

// The credit count encoding, restated: 0-4 map to themselves, then each
// power of two n >= 4 is followed by 1.5 n, up to 32768; 31 is "invalid".
TEST(CoreHdr, CreditTable)
{
	std::vector<uint32_t> want = {0, 1, 2, 3, 4};
	for (uint32_t n = 4; n < 32768; n *= 2) {
		want.push_back(n * 3 / 2);
		want.push_back(n * 2);
	}
	ASSERT_EQ(want.size(), 31u);
	for (uint8_t c = 0; c < 31; c++)
		EXPECT_EQ(sroce_hdr_aeth_credits(c), want[c]) << int(c);
	EXPECT_EQ(sroce_hdr_aeth_credits(31), SROCE_AETH_CREDITS_UNLIMITED);
	EXPECT_EQ(sroce_hdr_aeth_credits(0x20 | 5), 6u); // kind bits ignored
}

TEST(CoreHdr, CreditCodeNeverPromisesTooMuch)
{
	for (uint32_t n = 0; n < 70000; n++) {
		const uint8_t c = sroce_hdr_aeth_credit_code(n);

		ASSERT_LT(c, 31);
		ASSERT_LE(sroce_hdr_aeth_credits(c), n) << n;
		if (c < 30) {
			ASSERT_GT(sroce_hdr_aeth_credits(c + 1), n) << n;
		}
	}
	EXPECT_EQ(sroce_hdr_aeth_credit_code(UINT32_MAX), 30);
	EXPECT_EQ(sroce_hdr_aeth_credit_code(5), 4);
	EXPECT_EQ(sroce_hdr_aeth_credit_code(6), 5);
}

// RNR NAK timer field encoding in milliseconds as the spec lists it.
TEST(CoreHdr, RnrTimerTable)
{
	const double ms[32] = {
		655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12,
		0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92,
		2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72,
		40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52,
	};

	for (uint8_t c = 0; c < 32; c++)
		EXPECT_EQ(sroce_hdr_rnr_timer_us(c),
			  static_cast<uint32_t>(ms[c] * 1000 + 0.5)) << int(c);
	EXPECT_EQ(sroce_hdr_rnr_timer_us(0x20 | 14), 1280u);
}

// The headers of real rdma_rxe packets decoded by sroce and by Wireshark.
TEST(CoreHdr, AgreesWithWiresharkOnRxePackets)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame << ": " << v.what);
		const Bytes pkt = from_hex(v.hex);
		const uint8_t *bth = pkt.data() + sroce_test::bth_offset(pkt);
		sroce_bth b{};

		sroce_hdr_bth_decode(&b, bth);
		EXPECT_EQ(b.opcode, v.bth[0]);
		EXPECT_EQ(b.se, v.bth[1] != 0);
		EXPECT_EQ(b.mig, v.bth[2] != 0);
		EXPECT_EQ(b.pad, v.bth[3]);
		EXPECT_EQ(b.tver, v.bth[4]);
		EXPECT_EQ(b.pkey, v.bth[5]);
		EXPECT_EQ(b.dest_qp, v.bth[6]);
		EXPECT_EQ(b.ack_req, v.bth[7] != 0);
		EXPECT_EQ(b.psn, v.bth[8]);

		const sroce_test::SpecOp *op = sroce_test::spec_op(b.opcode);
		ASSERT_NE(op, nullptr);
		size_t off = SROCE_BTH_LEN;
		int seen = 0;
		for (auto e : op->exts) {
			const uint8_t *p = bth + off;

			switch (e) {
			case sroce_test::Ext::RETH: {
				sroce_reth r{};
				sroce_hdr_reth_decode(&r, p);
				EXPECT_EQ(r.va, v.ext[0]);
				EXPECT_EQ(r.rkey, v.ext[1]);
				EXPECT_EQ(r.dma_len, v.ext[2]);
				seen++;
				break;
			}
			case sroce_test::Ext::AETH: {
				sroce_aeth a{};
				sroce_hdr_aeth_decode(&a, p);
				EXPECT_EQ(a.syndrome, v.ext[3]);
				EXPECT_EQ(a.msn, v.ext[4]);
				seen++;
				break;
			}
			case sroce_test::Ext::DETH: {
				sroce_deth d{};
				sroce_hdr_deth_decode(&d, p);
				EXPECT_EQ(d.qkey, v.ext[5]);
				EXPECT_EQ(d.src_qp, v.ext[6]);
				seen++;
				break;
			}
			case sroce_test::Ext::AtomicETH: {
				sroce_atomic_eth a{};
				sroce_hdr_atomic_eth_decode(&a, p);
				EXPECT_EQ(a.va, v.ext[0]);
				EXPECT_EQ(a.rkey, v.ext[1]);
				EXPECT_EQ(a.swap_add, v.ext[7]);
				EXPECT_EQ(a.compare, v.ext[8]);
				seen++;
				break;
			}
			case sroce_test::Ext::AtomicAckETH:
				EXPECT_EQ(sroce_hdr_atomic_ack_eth_decode(p), v.ext[9]);
				seen++;
				break;
			default:
				break;
			}
			off += sroce_test::ext_len(e);
		}
		EXPECT_EQ(seen, static_cast<int>(op->exts.size()));
	}
}

} // namespace
