// RoCE v2 ICRC (kernel/core/icrc.c).
//
// Where the expected values come from:
//
//  * vectors/rxe_vectors.inc holds 25 packets that the Linux kernel's
//    rdma_rxe driver sent between two QEMU guests (Linux 6.1), recorded with
//    dumpcap by vectors/capture-rxe.sh: RC SEND first/middle/last/only with
//    and without pad, ACK, RDMA WRITE first/middle/last/only, RDMA READ
//    request and response first/middle/last/only, FETCH_ADD, CMP_SWAP, atomic
//    ACK, UC SEND, UD SEND and rdma_cm MADs to QP1, over IPv4 and IPv6.  Each
//    exchange completed, so the receiving rdma_rxe - which drops packets with
//    a bad ICRC - accepted every ICRC; rdma_rxe also interoperates with
//    hardware RoCE NICs.  The ICRC bytes in these vectors were computed by
//    neither this code nor these tests.
//  * reference_icrc() (core_test_util.cc) is a separate, deliberately naive
//    implementation: materialise the masked packet, bitwise CRC-32.  It is
//    itself checked against the rdma_rxe vectors below, and then used for
//    packets the capture does not cover (every opcode, pad, variant fields).
//  * Both CRC-32 implementations of the tests are checked against the
//    standard CRC-32 check value, CRC("123456789") = 0xCBF43926.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/crc32.h"
#include "kernel/core/hdr.h"
#include "kernel/core/icrc.h"
}

namespace {

using sroce_test::Bytes;
using sroce_test::bth_offset;
using sroce_test::from_hex;
using sroce_test::udp_offset;

// The primitive injected into the core: the tests' table-driven CRC, with
// a call counter to prove the core never calls it per byte.
int g_calls;

uint32_t counting_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	g_calls++;
	return sroce_test::crc32_table(crc, p, len);
}

// Verifies with the UDP and BTH where they are in an IPv4 (ip_len 20) or
// IPv6 (40) packet, whatever its (possibly corrupted) first byte says.
sroce_icrc_status verify(const Bytes &pkt, size_t ip_len)
{
	const size_t u = ip_len, b = ip_len + 8;

	return sroce_icrc_verify(counting_crc32, pkt.data(), pkt.data() + u,
				 pkt.data() + b, static_cast<uint32_t>(pkt.size() - b));
}

sroce_icrc_status verify(const Bytes &pkt)
{
	return verify(pkt, udp_offset(pkt));
}

uint32_t wire_icrc(const Bytes &pkt)
{
	return sroce_icrc_load(pkt.data() + pkt.size() - 4);
}

void seal(Bytes &pkt)
{
	sroce_icrc_store(pkt.data() + pkt.size() - 4, sroce_test::reference_icrc(pkt));
}

TEST(CoreIcrc, TestCrcImplementationsMatchTheCheckValue)
{
	const char *s = "123456789";
	const auto *p = reinterpret_cast<const uint8_t *>(s);

	EXPECT_EQ(~sroce_test::crc32_bitwise(~0u, p, 9), 0xcbf43926u);
	EXPECT_EQ(~sroce_test::crc32_table(~0u, p, 9), 0xcbf43926u);
	// and agree with each other in pieces
	EXPECT_EQ(sroce_test::crc32_table(sroce_test::crc32_table(~0u, p, 4), p + 4, 5),
		  sroce_test::crc32_bitwise(~0u, p, 9));
}

TEST(CoreIcrc, SeedIsEightBytesOfOnes)
{
	const Bytes ones(8, 0xff);

	EXPECT_EQ(SROCE_ICRC_SEED, sroce_test::crc32_bitwise(~0u, ones.data(), 8));
}

TEST(CoreIcrc, WireOrderIsLeastSignificantByteFirst)
{
	uint8_t b[4];

	sroce_icrc_store(b, 0x11223344);
	EXPECT_EQ(b[0], 0x44);
	EXPECT_EQ(b[3], 0x11);
	EXPECT_EQ(sroce_icrc_load(b), 0x11223344u);
}

TEST(CoreIcrc, RxePacketsVerify)
{
	ASSERT_EQ(sroce_test::rxe_vectors().size(), 25u);
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame << ": " << v.what);
		const Bytes pkt = from_hex(v.hex);

		EXPECT_EQ(pkt[0] >> 4, v.ip_version);
		EXPECT_EQ(verify(pkt), SROCE_ICRC_OK);
		EXPECT_EQ(sroce_test::reference_icrc(pkt), wire_icrc(pkt));

		uint32_t icrc = 0;
		const size_t b = bth_offset(pkt);
		EXPECT_EQ(sroce_icrc_compute(counting_crc32, pkt.data(),
					     pkt.data() + udp_offset(pkt),
					     pkt.data() + b,
					     static_cast<uint32_t>(pkt.size() - b), &icrc),
			  SROCE_ICRC_OK);
		EXPECT_EQ(icrc, wire_icrc(pkt));
	}
}

// Each field a router or switch may rewrite is outside the ICRC: rewriting
// it in a real packet keeps the ICRC valid.
TEST(CoreIcrc, VariantFieldsOfRxePacketsAreMasked)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame);
		const Bytes orig = from_hex(v.hex);
		const size_t u = udp_offset(orig), b = bth_offset(orig);
		std::vector<std::pair<size_t, uint8_t>> variant;

		if (v.ip_version == 4)
			// TOS (DSCP/ECN), TTL, header checksum
			variant = {{1, 0xff}, {1, 0x03}, {8, 0x01}, {10, 0x5a},
				   {11, 0xa5}};
		else
			// traffic class (both nibbles), flow label, hop limit;
			// the version nibble of byte 0 is not variant
			variant = {{0, 0x0f}, {1, 0xff}, {2, 0x0f}, {3, 0xff},
				   {7, 0x7f}};
		variant.push_back({u + 6, 0xff});	// UDP checksum
		variant.push_back({u + 7, 0x01});
		variant.push_back({b + 4, 0x80});	// FECN
		variant.push_back({b + 4, 0x40});	// BECN
		variant.push_back({b + 4, 0x3f});	// Resv6a

		for (auto [off, x] : variant) {
			Bytes p = orig;

			p[off] ^= x;
			EXPECT_EQ(verify(p), SROCE_ICRC_OK) << "byte " << off;
		}
	}
}

// Every other bit counts: flipping any one bit outside the variant fields
// (and outside the ICRC itself) breaks the ICRC.
TEST(CoreIcrc, EveryInvariantBitOfRxePacketsIsCovered)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame);
		const Bytes orig = from_hex(v.hex);
		const size_t u = udp_offset(orig), b = bth_offset(orig);
		// large packets: every byte of the headers, then a stride
		const size_t stride = orig.size() > 400 ? 13 : 1;

		for (size_t off = 0; off < orig.size() - 4;
		     off += (off < b + 64 ? 1 : stride)) {
			for (int bit = 0; bit < 8; bit++) {
				const auto m = static_cast<uint8_t>(1 << bit);
				bool variant;

				if (v.ip_version == 4)
					variant = off == 1 || off == 8 || off == 10 ||
						  off == 11;
				else
					variant = (off == 0 && m < 0x10) || off == 1 ||
						  off == 2 || off == 3 || off == 7;
				variant |= off == u + 6 || off == u + 7 || off == b + 4;

				Bytes p = orig;
				p[off] ^= m;
				if (variant) {
					ASSERT_EQ(verify(p, u), SROCE_ICRC_OK) << off << "/" << bit;
				} else {
					ASSERT_NE(verify(p, u), SROCE_ICRC_OK) << off << "/" << bit;
				}
			}
		}
	}
}

TEST(CoreIcrc, CorruptIcrcIsAMismatch)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		Bytes p = from_hex(v.hex);

		p[p.size() - 1 - v.frame % 4] ^= 0x10;
		EXPECT_EQ(verify(p), SROCE_ICRC_MISMATCH) << v.frame;
	}
}

// Every opcode, both IP versions, a range of payloads and pads, variant
// fields non-zero: the core agrees with the naive reference.
TEST(CoreIcrc, SyntheticPacketsAgreeWithReference)
{
	for (const auto &op : sroce_test::spec_ops()) {
		for (size_t payload : {0, 1, 3, 4, 61, 256, 1024, 4096}) {
			if (!op.payload && payload)
				continue;
			sroce_test::PacketSpec s;
			s.opcode = op.opcode;
			s.payload = payload;
			s.pad = static_cast<uint8_t>((4 - payload % 4) % 4);
			const Bytes udp = sroce_test::build_udp_payload(s);

			for (Bytes pkt : {sroce_test::wrap_ipv4(udp, 0x9a, 17),
					  sroce_test::wrap_ipv6(udp, 0xb9, 0x12345, 3)}) {
				pkt[bth_offset(pkt) + 4] = 0xc0;	// FECN+BECN
				seal(pkt);
				ASSERT_EQ(verify(pkt), SROCE_ICRC_OK)
					<< op.name << " " << payload;
			}
		}
	}
}

// The state between begin and final is a plain crc32_le state: feeding the
// rest of the packet in arbitrary pieces, with any crc32_le-compatible
// routine, gives the same ICRC; and begin costs one primitive call.
TEST(CoreIcrc, ScatteredPiecesGiveTheSameIcrc)
{
	std::mt19937 rng(7);

	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(testing::Message() << "frame " << v.frame);
		const Bytes pkt = from_hex(v.hex);
		const uint8_t *bth = pkt.data() + bth_offset(pkt);
		const size_t rest = pkt.size() - bth_offset(pkt) - 12 - 4;

		for (int round = 0; round < 20; round++) {
			uint32_t state = 0;

			g_calls = 0;
			ASSERT_TRUE(sroce_icrc_begin(counting_crc32, pkt.data(),
						     pkt.data() + udp_offset(pkt),
						     bth, &state));
			ASSERT_EQ(g_calls, 1);
			size_t done = 0;
			int pieces = 0;
			while (done < rest) {
				const size_t n = std::min<size_t>(rest - done, rng() % 300);

				// alternate the core's update and a direct call
				// of another implementation, empty pieces too
				if (pieces++ % 2)
					state = sroce_icrc_update(counting_crc32, state,
								  bth + 12 + done, n);
				else
					state = sroce_test::crc32_bitwise(state,
									  bth + 12 + done, n);
				done += n;
			}
			ASSERT_EQ(sroce_icrc_final(state), wire_icrc(pkt));
		}
	}
}

// The transmit path's way: the payload's CRC taken while copying it in,
// from 0, and joined to the headers' (sroce_icrc_compute_part()).  Any run
// between the BTH and the ICRC may be the part; one outside them is not used,
// and the ICRC is still right.
TEST(CoreIcrc, PartTakenWhileCopyingGivesTheSameIcrc)
{
	std::mt19937 rng(8);

	for (const auto &op : sroce_test::spec_ops()) {
		for (size_t payload : {1, 61, 256, 1024, 4096}) {
			if (!op.payload)
				continue;
			sroce_test::PacketSpec s;
			s.opcode = op.opcode;
			s.payload = payload;
			s.pad = static_cast<uint8_t>((4 - payload % 4) % 4);
			for (Bytes pkt : {sroce_test::wrap_ipv4(sroce_test::build_udp_payload(s)),
					  sroce_test::wrap_ipv6(sroce_test::build_udp_payload(s))}) {
				seal(pkt);
				const size_t b = bth_offset(pkt);
				const auto len = static_cast<uint32_t>(pkt.size() - b);
				const auto off = static_cast<uint32_t>(sroce_test::spec_hdr_len(op));
				Bytes copy(payload);
				sroce_icrc_part part = {
					off, static_cast<uint32_t>(payload),
					sroce_crc32_copy(0, copy.data(), pkt.data() + b + off,
							 payload),
				};
				uint32_t icrc = 0;

				ASSERT_EQ(sroce_icrc_compute_part(counting_crc32, pkt.data(),
								  pkt.data() + udp_offset(pkt),
								  pkt.data() + b, len, &part, &icrc),
					  SROCE_ICRC_OK);
				ASSERT_EQ(icrc, wire_icrc(pkt)) << op.name << " " << payload;

				// any other run: from the BTH's end to the ICRC
				const uint32_t body = len - 12 - 4;
				part.off = 12 + static_cast<uint32_t>(rng() % (body + 1));
				part.len = static_cast<uint32_t>(rng() % (body - (part.off - 12) + 1));
				part.crc = sroce_test::crc32_table(0, pkt.data() + b + part.off,
								   part.len);
				ASSERT_EQ(sroce_icrc_compute_part(counting_crc32, pkt.data(),
								  pkt.data() + udp_offset(pkt),
								  pkt.data() + b, len, &part, &icrc),
					  SROCE_ICRC_OK);
				ASSERT_EQ(icrc, wire_icrc(pkt)) << part.off << "+" << part.len;

				// runs that are not within it, with a wrong CRC
				for (sroce_icrc_part bad : {sroce_icrc_part{11, 1, 1},
							    sroce_icrc_part{len - 3, 0, 1},
							    sroce_icrc_part{12, body + 1, 1},
							    sroce_icrc_part{off, UINT32_MAX, 1}}) {
					ASSERT_EQ(sroce_icrc_compute_part(counting_crc32, pkt.data(),
									  pkt.data() + udp_offset(pkt),
									  pkt.data() + b, len, &bad,
									  &icrc),
						  SROCE_ICRC_OK);
					ASSERT_EQ(icrc, wire_icrc(pkt)) << bad.off << "+" << bad.len;
				}
			}
		}
	}
}

// The IP, UDP and BTH pieces need not be contiguous (the send path may
// build them apart from each other).
TEST(CoreIcrc, HeadersMayLiveApart)
{
	const Bytes pkt = from_hex(sroce_test::rxe_vectors()[3].hex);
	const size_t u = udp_offset(pkt), b = bth_offset(pkt);
	const Bytes ip(pkt.begin(), pkt.begin() + u);
	const Bytes udp(pkt.begin() + u, pkt.begin() + b);
	const Bytes bth(pkt.begin() + b, pkt.end());
	uint32_t state = 0;

	ASSERT_TRUE(sroce_icrc_begin(counting_crc32, ip.data(), udp.data(),
				     bth.data(), &state));
	state = sroce_icrc_update(counting_crc32, state, bth.data() + 12,
				  bth.size() - 16);
	EXPECT_EQ(sroce_icrc_final(state), wire_icrc(pkt));
}

TEST(CoreIcrc, BeginLeavesItsInputAlone)
{
	const Bytes pkt = from_hex(sroce_test::rxe_vectors()[0].hex);
	Bytes copy = pkt;
	uint32_t state;

	ASSERT_TRUE(sroce_icrc_begin(counting_crc32, copy.data(),
				     copy.data() + udp_offset(copy),
				     copy.data() + bth_offset(copy), &state));
	EXPECT_EQ(copy, pkt);
}

TEST(CoreIcrc, UnsupportedNetworkHeaders)
{
	Bytes pkt = from_hex(sroce_test::rxe_vectors()[0].hex);
	ASSERT_EQ(pkt[0], 0x45);
	uint32_t state = 0x1234;

	for (uint8_t first : {0x46, 0x4f, 0x44, 0x55, 0x00, 0x75, 0xf5}) {
		pkt[0] = first;
		EXPECT_FALSE(sroce_icrc_begin(counting_crc32, pkt.data(),
					      pkt.data() + 20, pkt.data() + 28,
					      &state)) << int(first);
		EXPECT_EQ(verify(pkt, 20), SROCE_ICRC_UNSUPPORTED_IP);
	}
	EXPECT_EQ(state, 0x1234u);
	// IPv6 whatever the traffic class nibble of byte 0
	Bytes v6 = from_hex(sroce_test::rxe_vectors()[6].hex);
	ASSERT_EQ(v6[0] >> 4, 6);
	v6[0] = 0x6f;
	EXPECT_EQ(verify(v6), SROCE_ICRC_OK);
}

TEST(CoreIcrc, TooShort)
{
	const Bytes pkt = from_hex(sroce_test::rxe_vectors()[0].hex);
	uint32_t icrc = 0;

	for (uint32_t len = 0; len < 16; len++) {
		EXPECT_EQ(sroce_icrc_verify(counting_crc32, pkt.data(), pkt.data() + 20,
					    pkt.data() + 28, len),
			  SROCE_ICRC_TOO_SHORT) << len;
		EXPECT_EQ(sroce_icrc_compute(counting_crc32, pkt.data(),
					     pkt.data() + 20, pkt.data() + 28,
					     len, &icrc),
			  SROCE_ICRC_TOO_SHORT) << len;
	}
}

// A bare BTH + ICRC (16 bytes, nothing after the BTH) is the shortest
// packet the ICRC code accepts.
TEST(CoreIcrc, ShortestPacket)
{
	Bytes pkt = sroce_test::wrap_ipv4(from_hex("0400ffff0000000100000000" "00000000"));

	seal(pkt);
	EXPECT_EQ(verify(pkt), SROCE_ICRC_OK);
}

} // namespace
