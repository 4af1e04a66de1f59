// Test helpers of the protocol core: see core_test_util.h.
#include "core_test_util.h"

#include <array>
#include <stdexcept>

extern "C" {
#include "kernel/core/crc32.h"
}

namespace sroce_test {

namespace {

// kernel/core/crc32.c's tables, filled before any test runs as the module
// fills them at load.
[[maybe_unused]] const bool crc32_tables_ready = (sroce_crc32_init(), true);

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	throw std::invalid_argument("not a hex digit");
}

constexpr uint32_t kPoly = 0xedb88320u; // reflected 0x04C11DB7

std::array<uint32_t, 256> make_table()
{
	std::array<uint32_t, 256> t{};

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
		t[i] = c;
	}
	return t;
}

void put_be(Bytes &b, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--)
		b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint16_t ones_complement_sum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return static_cast<uint16_t>(~s);
}

} // namespace

Bytes from_hex(std::string_view hex)
{
	Bytes b;

	if (hex.size() % 2)
		throw std::invalid_argument("odd number of hex digits");
	for (size_t i = 0; i < hex.size(); i += 2)
		b.push_back(static_cast<uint8_t>(hex_digit(hex[i]) << 4 |
						 hex_digit(hex[i + 1])));
	return b;
}

std::string to_hex(const Bytes &b)
{
	static const char digits[] = "0123456789abcdef";
	std::string s;

	for (uint8_t c : b) {
		s += digits[c >> 4];
		s += digits[c & 15];
	}
	return s;
}

uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
	}
	return crc;
}

uint32_t crc32_table(uint32_t crc, const uint8_t *p, size_t len)
{
	static const std::array<uint32_t, 256> table = make_table();

	for (size_t i = 0; i < len; i++)
		crc = (crc >> 8) ^ table[(crc ^ p[i]) & 0xff];
	return crc;
}

size_t ip_header_len(const Bytes &p)
{
	if (p.empty())
		throw std::invalid_argument("empty packet");
	if (p[0] >> 4 == 4)
		return (p[0] & 15) * 4u;
	if (p[0] >> 4 == 6)
		return 40;
	throw std::invalid_argument("not IP");
}

uint32_t reference_icrc(const Bytes &ip_packet)
{
	Bytes m = ip_packet;
	const size_t ip = ip_header_len(m);
	const size_t udp = ip, bth = ip + 8;

	if (m[0] >> 4 == 4) {
		// RFC 791: byte 1 type of service (DSCP + ECN, RFC 2474/3168),
		// byte 8 time to live, bytes 10-11 header checksum.
		m[1] = 0xff;
		m[8] = 0xff;
		m[10] = m[11] = 0xff;
	} else {
		// RFC 8200: version (4 bits), traffic class (8), flow label
		// (20) in bytes 0-3; hop limit in byte 7.
		m[0] |= 0x0f;
		m[1] = m[2] = m[3] = 0xff;
		m[7] = 0xff;
	}
	// RFC 768: bytes 6-7 of the UDP header are the checksum.
	m[udp + 6] = m[udp + 7] = 0xff;
	// BTH byte 4: FECN, BECN and 6 reserved bits.
	m[bth + 4] = 0xff;

	Bytes all(8, 0xff);
	all.insert(all.end(), m.begin(), m.end() - 4);
	return ~crc32_bitwise(0xffffffffu, all.data(), all.size());
}

size_t ext_len(Ext e)
{
	switch (e) {
	case Ext::DETH: return 8;
	case Ext::XRCETH: return 4;
	case Ext::FETH: return 4;
	case Ext::RETH: return 16;
	case Ext::AtomicETH: return 28;
	case Ext::AETH: return 4;
	case Ext::AtomicAckETH: return 8;
	case Ext::ImmDt: return 4;
	case Ext::IETH: return 4;
	case Ext::CNP: return 16;
	}
	throw std::invalid_argument("ext");
}

const std::vector<SpecOp> &spec_ops()
{
	using E = Ext;
	using P = Pos;
	// IBTA Vol. 1, 9.2 (opcode table) and 9.3 (header order); FLUSH and
	// ATOMIC WRITE: Annex A19 (IBTA 1.5); XRC: Annex A14 (every request
	// has an XRCETH right after the BTH, responses none; sroce knows
	// neither XRC FLUSH nor XRC ATOMIC WRITE); RoCE v2 CNP: Annex
	// A17.9.3.  Columns: opcode, name, transport, headers, payload,
	// position, request, response, reply owed.
	static const std::vector<SpecOp> ops = {
		{0x00, "RC_SEND_FIRST", 'R', {}, true, P::First, true, false, 1},
		{0x01, "RC_SEND_MIDDLE", 'R', {}, true, P::Middle, true, false, 1},
		{0x02, "RC_SEND_LAST", 'R', {}, true, P::Last, true, false, 1},
		{0x03, "RC_SEND_LAST_IMM", 'R', {E::ImmDt}, true, P::Last, true, false, 1},
		{0x04, "RC_SEND_ONLY", 'R', {}, true, P::Only, true, false, 1},
		{0x05, "RC_SEND_ONLY_IMM", 'R', {E::ImmDt}, true, P::Only, true, false, 1},
		{0x06, "RC_WRITE_FIRST", 'R', {E::RETH}, true, P::First, true, false, 1},
		{0x07, "RC_WRITE_MIDDLE", 'R', {}, true, P::Middle, true, false, 1},
		{0x08, "RC_WRITE_LAST", 'R', {}, true, P::Last, true, false, 1},
		{0x09, "RC_WRITE_LAST_IMM", 'R', {E::ImmDt}, true, P::Last, true, false, 1},
		{0x0a, "RC_WRITE_ONLY", 'R', {E::RETH}, true, P::Only, true, false, 1},
		{0x0b, "RC_WRITE_ONLY_IMM", 'R', {E::RETH, E::ImmDt}, true, P::Only, true, false, 1},
		{0x0c, "RC_READ_REQUEST", 'R', {E::RETH}, false, P::Only, true, false, 2},
		{0x0d, "RC_READ_RESPONSE_FIRST", 'R', {E::AETH}, true, P::First, false, true, 0},
		{0x0e, "RC_READ_RESPONSE_MIDDLE", 'R', {}, true, P::Middle, false, true, 0},
		{0x0f, "RC_READ_RESPONSE_LAST", 'R', {E::AETH}, true, P::Last, false, true, 0},
		{0x10, "RC_READ_RESPONSE_ONLY", 'R', {E::AETH}, true, P::Only, false, true, 0},
		{0x11, "RC_ACK", 'R', {E::AETH}, false, P::Only, false, true, 0},
		{0x12, "RC_ATOMIC_ACK", 'R', {E::AETH, E::AtomicAckETH}, false, P::Only, false, true, 0},
		{0x13, "RC_CMP_SWAP", 'R', {E::AtomicETH}, false, P::Only, true, false, 3},
		{0x14, "RC_FETCH_ADD", 'R', {E::AtomicETH}, false, P::Only, true, false, 3},
		{0x16, "RC_SEND_LAST_INV", 'R', {E::IETH}, true, P::Last, true, false, 1},
		{0x17, "RC_SEND_ONLY_INV", 'R', {E::IETH}, true, P::Only, true, false, 1},
		{0x1c, "RC_FLUSH", 'R', {E::FETH, E::RETH}, false, P::Only, true, false, 2},
		{0x1d, "RC_ATOMIC_WRITE", 'R', {E::RETH}, true, P::Only, true, false, 2},
		{0x20, "UC_SEND_FIRST", 'U', {}, true, P::First, true, false, 0},
		{0x21, "UC_SEND_MIDDLE", 'U', {}, true, P::Middle, true, false, 0},
		{0x22, "UC_SEND_LAST", 'U', {}, true, P::Last, true, false, 0},
		{0x23, "UC_SEND_LAST_IMM", 'U', {E::ImmDt}, true, P::Last, true, false, 0},
		{0x24, "UC_SEND_ONLY", 'U', {}, true, P::Only, true, false, 0},
		{0x25, "UC_SEND_ONLY_IMM", 'U', {E::ImmDt}, true, P::Only, true, false, 0},
		{0x26, "UC_WRITE_FIRST", 'U', {E::RETH}, true, P::First, true, false, 0},
		{0x27, "UC_WRITE_MIDDLE", 'U', {}, true, P::Middle, true, false, 0},
		{0x28, "UC_WRITE_LAST", 'U', {}, true, P::Last, true, false, 0},
		{0x29, "UC_WRITE_LAST_IMM", 'U', {E::ImmDt}, true, P::Last, true, false, 0},
		{0x2a, "UC_WRITE_ONLY", 'U', {E::RETH}, true, P::Only, true, false, 0},
		{0x2b, "UC_WRITE_ONLY_IMM", 'U', {E::RETH, E::ImmDt}, true, P::Only, true, false, 0},
		{0x64, "UD_SEND_ONLY", 'D', {E::DETH}, true, P::Only, true, false, 0},
		{0x65, "UD_SEND_ONLY_IMM", 'D', {E::DETH, E::ImmDt}, true, P::Only, true, false, 0},
		{0x81, "CNP", 'N', {E::CNP}, false, P::Only, false, false, 0},
		{0xa0, "XRC_SEND_FIRST", 'X', {E::XRCETH}, true, P::First, true, false, 1},
		{0xa1, "XRC_SEND_MIDDLE", 'X', {E::XRCETH}, true, P::Middle, true, false, 1},
		{0xa2, "XRC_SEND_LAST", 'X', {E::XRCETH}, true, P::Last, true, false, 1},
		{0xa3, "XRC_SEND_LAST_IMM", 'X', {E::XRCETH, E::ImmDt}, true, P::Last, true, false, 1},
		{0xa4, "XRC_SEND_ONLY", 'X', {E::XRCETH}, true, P::Only, true, false, 1},
		{0xa5, "XRC_SEND_ONLY_IMM", 'X', {E::XRCETH, E::ImmDt}, true, P::Only, true, false, 1},
		{0xa6, "XRC_WRITE_FIRST", 'X', {E::XRCETH, E::RETH}, true, P::First, true, false, 1},
		{0xa7, "XRC_WRITE_MIDDLE", 'X', {E::XRCETH}, true, P::Middle, true, false, 1},
		{0xa8, "XRC_WRITE_LAST", 'X', {E::XRCETH}, true, P::Last, true, false, 1},
		{0xa9, "XRC_WRITE_LAST_IMM", 'X', {E::XRCETH, E::ImmDt}, true, P::Last, true, false, 1},
		{0xaa, "XRC_WRITE_ONLY", 'X', {E::XRCETH, E::RETH}, true, P::Only, true, false, 1},
		{0xab, "XRC_WRITE_ONLY_IMM", 'X', {E::XRCETH, E::RETH, E::ImmDt}, true, P::Only, true, false, 1},
		{0xac, "XRC_READ_REQUEST", 'X', {E::XRCETH, E::RETH}, false, P::Only, true, false, 2},
		{0xad, "XRC_READ_RESPONSE_FIRST", 'X', {E::AETH}, true, P::First, false, true, 0},
		{0xae, "XRC_READ_RESPONSE_MIDDLE", 'X', {}, true, P::Middle, false, true, 0},
		{0xaf, "XRC_READ_RESPONSE_LAST", 'X', {E::AETH}, true, P::Last, false, true, 0},
		{0xb0, "XRC_READ_RESPONSE_ONLY", 'X', {E::AETH}, true, P::Only, false, true, 0},
		{0xb1, "XRC_ACK", 'X', {E::AETH}, false, P::Only, false, true, 0},
		{0xb2, "XRC_ATOMIC_ACK", 'X', {E::AETH, E::AtomicAckETH}, false, P::Only, false, true, 0},
		{0xb3, "XRC_CMP_SWAP", 'X', {E::XRCETH, E::AtomicETH}, false, P::Only, true, false, 3},
		{0xb4, "XRC_FETCH_ADD", 'X', {E::XRCETH, E::AtomicETH}, false, P::Only, true, false, 3},
		{0xb6, "XRC_SEND_LAST_INV", 'X', {E::XRCETH, E::IETH}, true, P::Last, true, false, 1},
		{0xb7, "XRC_SEND_ONLY_INV", 'X', {E::XRCETH, E::IETH}, true, P::Only, true, false, 1},
	};
	return ops;
}

const SpecOp *spec_op(uint8_t opcode)
{
	for (const SpecOp &op : spec_ops())
		if (op.opcode == opcode)
			return &op;
	return nullptr;
}

size_t spec_hdr_len(const SpecOp &op)
{
	size_t n = 12;

	for (Ext e : op.exts)
		n += ext_len(e);
	return n;
}

Bytes build_udp_payload(const PacketSpec &s)
{
	Bytes b;
	const SpecOp *op = spec_op(s.opcode);

	b.push_back(s.opcode);
	b.push_back(static_cast<uint8_t>((s.pad & 3) << 4 | (s.tver & 15)));
	put_be(b, s.pkey, 2);
	b.push_back(0);
	put_be(b, s.qpn, 3);
	b.push_back(s.ack_req ? 0x80 : 0);
	put_be(b, s.psn, 3);
	for (Ext e : op ? op->exts : std::vector<Ext>{}) {
		switch (e) {
		case Ext::DETH:
			put_be(b, 0x80010000u, 4);	// Q_Key
			b.push_back(0);
			put_be(b, 0x000042, 3);		// SrcQP
			break;
		case Ext::XRCETH:
			b.push_back(0);			// reserved
			put_be(b, s.xrc_srqn, 3);	// XRC SRQ number
			break;
		case Ext::FETH:
			put_be(b, s.feth, 4);
			break;
		case Ext::RETH:
			put_be(b, s.va, 8);
			put_be(b, 0x1234, 4);		// R_Key
			put_be(b, s.dma_len, 4);
			break;
		case Ext::AtomicETH:
			put_be(b, s.va, 8);
			put_be(b, 0x5678, 4);
			put_be(b, 0x1111111111111111u, 8);
			put_be(b, 0x2222222222222222u, 8);
			break;
		case Ext::AETH:
			b.push_back(s.syndrome);
			put_be(b, 0x000007, 3);		// MSN
			break;
		case Ext::AtomicAckETH:
			put_be(b, 0x3333333333333333u, 8);
			break;
		case Ext::ImmDt:
			put_be(b, 0xdeadbeef, 4);
			break;
		case Ext::IETH:
			put_be(b, 0xcafe, 4);
			break;
		case Ext::CNP:
			b.insert(b.end(), 16, 0);
			break;
		}
	}
	for (size_t i = 0; i < s.payload; i++)
		b.push_back(static_cast<uint8_t>(i * 7 + 1));
	b.insert(b.end(), s.pad, 0);
	b.insert(b.end(), 4, 0);	// ICRC, filled in by whoever needs it
	return b;
}

Bytes wrap_ipv4(const Bytes &udp_payload, uint8_t tos, uint8_t ttl)
{
	Bytes p;
	const size_t total = 20 + 8 + udp_payload.size();

	p.push_back(0x45);
	p.push_back(tos);
	put_be(p, total, 2);
	put_be(p, 0x1c46, 2);		// identification
	put_be(p, 0x4000, 2);		// DF
	p.push_back(ttl);
	p.push_back(17);		// UDP
	put_be(p, 0, 2);		// checksum, below
	put_be(p, 0xc0000201, 4);	// 192.0.2.1
	put_be(p, 0xc0000202, 4);	// 192.0.2.2
	const uint16_t csum = ones_complement_sum(p.data(), 20);
	p[10] = static_cast<uint8_t>(csum >> 8);
	p[11] = static_cast<uint8_t>(csum);
	put_be(p, 0xc123, 2);		// source port: flow entropy
	put_be(p, 4791, 2);
	put_be(p, 8 + udp_payload.size(), 2);
	put_be(p, 0xabcd, 2);		// checksum: anything, it is masked
	p.insert(p.end(), udp_payload.begin(), udp_payload.end());
	return p;
}

Bytes wrap_ipv6(const Bytes &udp_payload, uint8_t tclass, uint32_t flow,
		uint8_t hop)
{
	Bytes p;

	put_be(p, 6u << 28 | uint32_t{tclass} << 20 | (flow & 0xfffff), 4);
	put_be(p, 8 + udp_payload.size(), 2);
	p.push_back(17);
	p.push_back(hop);
	for (int i = 0; i < 2; i++) {
		put_be(p, 0xfd53726f63650000u, 8);
		put_be(p, static_cast<uint64_t>(i + 1), 8);
	}
	put_be(p, 0xd00d, 2);
	put_be(p, 4791, 2);
	put_be(p, 8 + udp_payload.size(), 2);
	put_be(p, 0, 2);
	p.insert(p.end(), udp_payload.begin(), udp_payload.end());
	return p;
}

const std::vector<RxeVector> &rxe_vectors()
{
	static const std::vector<RxeVector> v = {
#include "vectors/rxe_vectors.inc"
	};
	return v;
}

} // namespace sroce_test
