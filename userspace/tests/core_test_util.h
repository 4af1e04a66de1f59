// Helpers shared by the protocol-core tests (core_*_test.cc): hex parsing,
// two CRC-32 implementations written for the tests, a reference ICRC, the
// IBTA opcode table restated from the spec, and a packet builder.  None of
// it calls the code under test, so the tests compare the core against an
// independent statement of the same facts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sroce_test {

using Bytes = std::vector<uint8_t>;

Bytes from_hex(std::string_view hex);
std::string to_hex(const Bytes &b);

// CRC-32 with the reflected Ethernet polynomial 0xEDB88320 and the semantics
// of the kernel's crc32_le(): state in, state out, no inversions.  One is
// computed bit by bit (the reference), the other from a 256-entry table (the
// primitive the tests inject into the core, standing in for crc32_le).
uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len);
uint32_t crc32_table(uint32_t crc, const uint8_t *p, size_t len);

// The RoCE v2 ICRC of an IP packet (IPv4 without options or IPv6, then UDP,
// then BTH ... ICRC), computed the slow and obvious way: copy the packet,
// overwrite each variant field with ones, prepend 8 bytes of ones, run the
// bitwise CRC over everything up to the ICRC field and invert.
uint32_t reference_icrc(const Bytes &ip_packet);

// Offsets inside an IP packet as built by the tests or captured.
size_t ip_header_len(const Bytes &ip_packet);
inline size_t udp_offset(const Bytes &p) { return ip_header_len(p); }
inline size_t bth_offset(const Bytes &p) { return ip_header_len(p) + 8; }

// Extension headers as the spec names them, in wire order after the BTH.
enum class Ext { DETH, XRCETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, CNP };
size_t ext_len(Ext e);

enum class Pos { First, Middle, Last, Only };

// One opcode of IBTA Vol. 1 9.2/9.3 (XRC: Annex A14; and the RoCE v2 CNP),
// restated here.
struct SpecOp {
	uint8_t opcode;
	const char *name;
	char transport;		// 'R'C, 'U'C, 'D' (UD), 'X' (XRC), 'N' (CNP)
	std::vector<Ext> exts;	// in wire order
	bool payload;
	Pos pos;
	bool request;
	bool response;
	int reply;		// 0 none, 1 ACK, 2 read response, 3 atomic ACK
};

const std::vector<SpecOp> &spec_ops();
const SpecOp *spec_op(uint8_t opcode);
size_t spec_hdr_len(const SpecOp &op);

// Builds the UDP payload of a packet byte by byte (BTH ... ICRC), with the
// extension headers of the opcode filled with recognisable values.
struct PacketSpec {
	uint8_t opcode = 0x04;
	uint32_t qpn = 0x000123;
	uint32_t psn = 0x000456;
	uint16_t pkey = 0xffff;
	uint8_t pad = 0;
	uint8_t tver = 0;
	bool ack_req = false;
	size_t payload = 0;	// bytes of payload, before pad
	uint32_t dma_len = 0;	// RETH DMA length
	uint64_t va = 0x1000;	// RETH / AtomicETH VA
	uint8_t syndrome = 0x1f; // AETH
	uint32_t feth = 0x01;	// FETH: global visibility of a range
	uint32_t xrc_srqn = 0x00abcd; // XRCETH (its reserved byte is 0)
};

Bytes build_udp_payload(const PacketSpec &s);

// Wraps a UDP payload in an IPv4 or IPv6 and a UDP header.
Bytes wrap_ipv4(const Bytes &udp_payload, uint8_t tos = 0, uint8_t ttl = 64);
Bytes wrap_ipv6(const Bytes &udp_payload, uint8_t tclass = 0,
		uint32_t flow = 0, uint8_t hop = 64);

// The vectors captured from rdma_rxe (vectors/rxe_vectors.inc).
struct RxeVector {
	unsigned frame;
	int ip_version;
	const char *what;	// tshark's summary line
	const char *hex;	// IP header through ICRC
	// Wireshark's decode of the BTH: opcode, SE, M, PadCnt, TVer, P_Key,
	// DestQP, AckReq, PSN.
	uint32_t bth[9];
	// ... and of the extension headers: RETH VA, R_Key, DMA length (for
	// atomics Wireshark shows the AtomicETH VA and R_Key under the same
	// names), AETH syndrome, MSN, DETH Q_Key, SrcQP, AtomicETH swap/add
	// and compare, AtomicAckETH original data.
	std::optional<uint64_t> ext[10];
	// Wireshark's payload length, which includes the pad bytes.
	unsigned payload_with_pad;
};

const std::vector<RxeVector> &rxe_vectors();

} // namespace sroce_test
