// libFuzzer target of the protocol core's receive path.
//
// The input is the UDP payload of a RoCE v2 packet (BTH through ICRC), in a
// buffer of exactly its size, so AddressSanitizer reports any read outside
// it.  Besides "no crash, no out-of-bounds access, no undefined behaviour",
// the target checks properties and traps if one fails:
//
//  * an accepted packet (or a request error, which is fully parsed) has a
//    consistent layout: headers + payload + pad + ICRC == length;
//  * every present extension header re-encodes to the bytes it was decoded
//    from, at the offset the opcode table gives (the XRCETH's reserved
//    byte, ignored on receive, as 0);
//  * the ICRC computed in pieces split at the parsed boundaries (headers,
//    payload, pad) equals the one-shot computation, over IPv4 and IPv6;
//  * every header decoder, run on the raw input, round-trips;
//  * the input read as an IP header: its addresses, if it has any, are
//    accepted by exactly the connected QP they name (unless the destination
//    is a broadcast or multicast one) and refused by a QP one bit away.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/addr.h"
#include "kernel/core/hdr.h"
#include "kernel/core/icrc.h"
#include "kernel/core/opcode.h"
#include "kernel/core/pkt.h"
#include "kernel/core/psn.h"
}

namespace {

void check(bool ok)
{
	if (!ok)
		__builtin_trap();
}

uint32_t crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	return sroce_test::crc32_table(crc, p, len);
}

// Decoding then encoding a header reproduces its bytes.
template <size_t N, typename T, typename Dec, typename Enc>
void round_trip(const uint8_t *p, Dec dec, Enc enc)
{
	T v{};
	uint8_t out[N];

	dec(&v, p);
	enc(out, &v);
	check(std::memcmp(out, p, N) == 0);
}

// The XRCETH at p, decoded as srqn, re-encodes to its bytes but the
// reserved first one, which is written as 0.
void xrceth_round_trip(const uint8_t *p, uint32_t srqn)
{
	uint8_t out[SROCE_XRCETH_LEN];

	check(srqn <= 0xffffff);
	std::memset(out, 0xa5, sizeof(out));
	sroce_hdr_xrceth_encode(out, srqn);
	check(out[0] == 0);
	check(!std::memcmp(out + 1, p + 1, SROCE_XRCETH_LEN - 1));
}

void headers_round_trip(const uint8_t *data, size_t size)
{
	if (size >= SROCE_BTH_LEN)
		round_trip<SROCE_BTH_LEN, sroce_bth>(data, sroce_hdr_bth_decode,
						     sroce_hdr_bth_encode);
	if (size >= SROCE_RETH_LEN)
		round_trip<SROCE_RETH_LEN, sroce_reth>(data, sroce_hdr_reth_decode,
						       sroce_hdr_reth_encode);
	if (size >= SROCE_AETH_LEN)
		round_trip<SROCE_AETH_LEN, sroce_aeth>(data, sroce_hdr_aeth_decode,
						       sroce_hdr_aeth_encode);
	if (size >= SROCE_DETH_LEN)
		round_trip<SROCE_DETH_LEN, sroce_deth>(data, sroce_hdr_deth_decode,
						       sroce_hdr_deth_encode);
	if (size >= SROCE_ATOMIC_ETH_LEN)
		round_trip<SROCE_ATOMIC_ETH_LEN, sroce_atomic_eth>(
			data, sroce_hdr_atomic_eth_decode,
			sroce_hdr_atomic_eth_encode);
	if (size >= SROCE_XRCETH_LEN)
		xrceth_round_trip(data, sroce_hdr_xrceth_decode(data));
	if (size >= 1) {
		const uint8_t syn = data[0];
		const sroce_aeth_kind k = sroce_hdr_syndrome_kind(syn);

		if (k != SROCE_AETH_RESERVED)
			check(sroce_hdr_syndrome(k, sroce_hdr_syndrome_value(syn)) == syn);
		(void)sroce_hdr_aeth_credits(syn);
		(void)sroce_hdr_rnr_timer_us(syn);
	}
	if (size >= 6) {
		uint32_t a, b;

		std::memcpy(&a, data, 3);
		std::memcpy(&b, data + 3, 3);
		a &= SROCE_PSN_MASK;
		b &= SROCE_PSN_MASK;
		const int d = sroce_psn_diff(a, b);
		check(sroce_psn_add(b, static_cast<uint32_t>(d)) == a);
		check(sroce_psn_before(a, b) == (d < 0));
	}
}

void ext_round_trip(const uint8_t *bth, const sroce_pkt &pkt)
{
	const sroce_opcode_info *op = pkt.op;
	uint8_t out[SROCE_ATOMIC_ETH_LEN];

	if (op->hdrs & SROCE_HDR_RETH) {
		sroce_hdr_reth_encode(out, &pkt.reth);
		check(!std::memcmp(out, bth + op->off[SROCE_EXT_RETH], SROCE_RETH_LEN));
	}
	if (op->hdrs & SROCE_HDR_AETH) {
		sroce_hdr_aeth_encode(out, &pkt.aeth);
		check(!std::memcmp(out, bth + op->off[SROCE_EXT_AETH], SROCE_AETH_LEN));
	}
	if (op->hdrs & SROCE_HDR_DETH) {
		sroce_hdr_deth_encode(out, &pkt.deth);
		check(!std::memcmp(out, bth + op->off[SROCE_EXT_DETH], SROCE_DETH_LEN));
	}
	// every XRC request has one, right after the BTH; nothing else has
	check(bool(op->hdrs & SROCE_HDR_XRCETH) ==
	      (op->transport == SROCE_TRANSPORT_XRC &&
	       (op->flags & SROCE_OPF_REQUEST)));
	if (op->hdrs & SROCE_HDR_XRCETH) {
		check(op->off[SROCE_EXT_XRCETH] == SROCE_BTH_LEN);
		xrceth_round_trip(bth + op->off[SROCE_EXT_XRCETH], pkt.xrc_srqn);
	}
	if (op->hdrs & SROCE_HDR_ATOMIC_ETH) {
		sroce_hdr_atomic_eth_encode(out, &pkt.atomic);
		check(!std::memcmp(out, bth + op->off[SROCE_EXT_ATOMIC_ETH],
				   SROCE_ATOMIC_ETH_LEN));
	}
	if (op->hdrs & SROCE_HDR_ATOMIC_ACK_ETH)
		check(sroce_hdr_atomic_ack_eth_decode(bth + op->off[SROCE_EXT_ATOMIC_ACK_ETH]) ==
		      pkt.atomic_orig);
	if (op->hdrs & SROCE_HDR_IMMDT)
		check(sroce_hdr_immdt_decode(bth + op->off[SROCE_EXT_IMMDT]) == pkt.imm);
	if (op->hdrs & SROCE_HDR_IETH)
		check(sroce_hdr_ieth_decode(bth + op->off[SROCE_EXT_IETH]) == pkt.ieth_rkey);
}

// One-shot ICRC vs. pieces split where the parser says the parts are.
void icrc_in_pieces(const uint8_t *data, size_t size, const sroce_pkt *pkt)
{
	if (size < SROCE_BTH_LEN + SROCE_ICRC_LEN)
		return;
	const std::vector<uint8_t> udp_payload(data, data + size);
	for (const auto &ip_pkt : {sroce_test::wrap_ipv4(udp_payload, 0x02, 3),
				   sroce_test::wrap_ipv6(udp_payload, 0x01, 7, 9)}) {
		const size_t ip_len = sroce_test::ip_header_len(ip_pkt);
		const uint8_t *ip = ip_pkt.data(), *udp = ip + ip_len;
		const uint8_t *bth = udp + 8;
		uint32_t whole = 0, state = 0;

		check(sroce_icrc_compute(crc32, ip, udp, bth,
					 static_cast<uint32_t>(size), &whole) ==
		      SROCE_ICRC_OK);
		check(sroce_icrc_begin(crc32, ip, udp, bth, &state));
		size_t at = SROCE_BTH_LEN;
		if (pkt && pkt->op) {
			const size_t cuts[] = {pkt->payload_off,
					       pkt->payload_off + pkt->payload_len};
			for (size_t cut : cuts) {
				state = sroce_icrc_update(crc32, state, bth + at, cut - at);
				at = cut;
			}
		}
		state = sroce_icrc_update(crc32, state, bth + at,
					  size - SROCE_ICRC_LEN - at);
		check(sroce_icrc_final(state) == whole);
		check((sroce_icrc_verify(crc32, ip, udp, bth,
					 static_cast<uint32_t>(size)) ==
		       SROCE_ICRC_OK) == (whole == sroce_icrc_load(bth + size - 4)));
	}
}

void addr_check(const uint8_t *data, size_t size)
{
	sroce_addr_pair p;
	uint8_t other[SROCE_GID_LEN];

	if (!sroce_addr_parse(data, static_cast<uint32_t>(size), &p))
		return;
	check(size >= 20);
	check(sroce_addr_is_v4(p.src) == (data[0] >> 4 == 4));
	check(sroce_addr_is_v4(p.dst) == (data[0] >> 4 == 4));

	const sroce_addr_verdict v = sroce_addr_check_conn(&p, p.dst, p.src);
	if (sroce_addr_is_lbcast(p.dst))
		check(v == SROCE_ADDR_BCAST);
	else if (sroce_addr_is_mcast(p.dst))
		check(v == SROCE_ADDR_MCAST);
	else
		check(v == SROCE_ADDR_OK);
	if (v != SROCE_ADDR_OK)
		return;
	std::memcpy(other, p.src, sizeof(other));
	other[data[size - 1] % sizeof(other)] ^= 1;
	check(sroce_addr_check_conn(&p, p.dst, other) == SROCE_ADDR_BAD_SRC);
	std::memcpy(other, p.dst, sizeof(other));
	other[data[size - 1] % sizeof(other)] ^= 1;
	check(sroce_addr_check_conn(&p, other, p.src) == SROCE_ADDR_BAD_DST);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 16384)
		return -1;	// more than any RoCE packet; keeps runs fast

	sroce_pkt pkt;
	std::memset(&pkt, 0xa5, sizeof(pkt));
	const sroce_drop r = sroce_pkt_parse(data, static_cast<uint32_t>(size), &pkt);

	check(r >= SROCE_DROP_NONE && r < SROCE_DROP_NR);
	check(sroce_pkt_drop_name(r) != nullptr);
	check(pkt.len == size);
	const bool parsed = r == SROCE_DROP_NONE || sroce_pkt_drop_is_request_error(r);
	if (parsed) {
		check(pkt.op != nullptr);
		check(pkt.op == sroce_opcode_lookup(data[0]));
		check(pkt.payload_off == pkt.op->hdr_len);
		check(pkt.payload_off + pkt.payload_len + pkt.bth.pad +
		      SROCE_ICRC_LEN == size);
		check(pkt.icrc_off == size - SROCE_ICRC_LEN);
		check(pkt.icrc == sroce_icrc_load(data + size - SROCE_ICRC_LEN));
		check(pkt.payload_len <= SROCE_MAX_PMTU ||
		      r == SROCE_DROP_BAD_PAYLOAD_LEN);
		check((pkt.op->flags & SROCE_OPF_PAYLOAD) || pkt.payload_len == 0);
		ext_round_trip(data, pkt);
	}
	if (r == SROCE_DROP_NONE) {
		check(sroce_pkt_pkey_match(SROCE_PKEY_DEFAULT, pkt.bth.pkey));
		check(pkt.bth.tver == 0);
		check(pkt.bth.dest_qp != 0);
	}
	icrc_in_pieces(data, size, parsed ? &pkt : nullptr);
	headers_round_trip(data, size);
	addr_check(data, size);
	return 0;
}
