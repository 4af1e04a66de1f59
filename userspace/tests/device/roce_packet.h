// Hand-made RoCE v2 packets sent through raw IP sockets: the packet builder
// of the sroce_roce_send tool (roce_send_tool.cc) and of the device tests
// that aim packets at a QP (verbs_inject_fixture.h).
//
// The whole IP packet is built here (IPv4 with IP_HDRINCL, IPv6 with an
// IPPROTO_RAW socket), so every byte the ICRC covers is known, including
// the IPv4 identification.  The UDP checksum is 0, as RoCE v2 sends it.
// The fields the ICRC leaves out (IPv4 TOS and TTL, IPv6 traffic class,
// flow label and hop limit, BTH byte 4) are random, so a receiver that
// covers any of them rejects the valid packets.  The ICRC is computed here
// independently of kernel/core/icrc.c, from IBTA Vol. 1, 7.8.1 and Annex
// A17 (Documentation/protocol-core.md): CRC-32 over 8 bytes of ones, then
// the IP, UDP and BTH headers with those fields set to ones, then the rest
// of the packet; sent least significant byte first.  The unit test
// roce_packet_test.cc holds it to the rdma_rxe vectors and to the core.
#ifndef SROCE_TESTS_ROCE_PACKET_H
#define SROCE_TESTS_ROCE_PACKET_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sroce::roce {

using Bytes = std::vector<uint8_t>;

inline constexpr uint16_t kUdpPort = 4791;
inline constexpr size_t kBthLen = 12;
inline constexpr size_t kIcrcLen = 4;
inline constexpr size_t kRethLen = 16;
inline constexpr size_t kDethLen = 8;
inline constexpr size_t kXrcethLen = 4;

// The transports whose request opcodes the builder knows by name.
enum class Transport { RC, UC, UD, XRC };

std::optional<Transport> transport_by_name(std::string_view name);
const char *transport_name(Transport t);

// The opcode of a request named "send-first", "send-middle", "send-last",
// "send-only", "write-first", "write-middle", "write-last" or
// "write-only" on transport t (UD: "send-only" only; RC also "flush" and
// "atomic-write"); nullopt otherwise.
std::optional<uint8_t> opcode_by_name(Transport t, std::string_view name);

// The extension headers the builder writes after the BTH for opcode, in
// bytes: XRCETH (every XRC request, first), RETH (RDMA WRITE FIRST and
// ONLY, ATOMIC WRITE), FETH and RETH (FLUSH), DETH (UD), ImmDt and IETH
// where the opcode has them; any other header (AETH, AtomicETH) is not
// written, nor any of an opcode the core does not know (RD, XRC FLUSH).
size_t ext_len(uint8_t opcode);

// An IPv4 or IPv6 address in network order, as parsed from text.
struct Addr {
	int family = 0;		// AF_INET or AF_INET6
	std::array<uint8_t, 16> raw{};
	size_t len() const;	// 4 or 16
};

std::optional<Addr> parse_addr(const std::string &text);

// One packet.  A well-formed one by default: an RC SEND ONLY of 16 bytes.
struct Spec {
	uint8_t opcode = 0x04;
	uint32_t qpn = 0xabcdef;
	uint32_t psn = 0;
	uint32_t len = 16;		// payload bytes
	std::optional<uint8_t> fill;	// every payload byte; random if unset
	// PadCnt written into the BTH; by default the number of zero bytes
	// that pad the payload to whole words, which are always appended.
	std::optional<uint8_t> pad;
	// Keep only this many bytes after the BTH (extension headers,
	// payload, pad), cutting the rest off before the ICRC.
	std::optional<uint32_t> cut;
	uint32_t qkey = 0;		// DETH Q_Key
	uint32_t src_qpn = 0x000123;	// DETH source QP
	uint64_t va = 0;		// RETH
	uint32_t rkey = 0;		// RETH
	std::optional<uint32_t> dma_len; // RETH; len if unset
	uint32_t feth = 1;		// FLUSH: global visibility of a range
	uint32_t xrc_srqn = 0;		// XRCETH: the XRC SRQ (24 bits)
	bool bad_icrc = false;		// flip one random bit of the ICRC
};

// CRC-32 with the reflected polynomial 0xEDB88320 and the semantics of
// the kernel's crc32_le(): state in, state out, no inversion.
uint32_t crc32(uint32_t crc, const uint8_t *p, size_t len);

// The ICRC of a whole IP packet (IPv4 without options or IPv6, UDP, BTH
// ... ICRC): over everything but its last 4 bytes.  nullopt for any other
// IP header or a packet too short for the headers the ICRC covers.
std::optional<uint32_t> icrc(const uint8_t *ip, size_t len);

// The whole IP packet for s from src to dst (the same family), with a
// valid ICRC unless s.bad_icrc.
Bytes build(const Addr &src, const Addr &dst, const Spec &s,
	    std::mt19937 &rng);

// The whole IP packet (IPv4 without options or IPv6, as build() makes
// them) that carries payload in a UDP datagram from src to dst (the same
// family) to port kUdpPort: any bytes, a RoCE v2 packet or not.
Bytes udp_datagram(const Addr &src, const Addr &dst, const Bytes &payload,
		   std::mt19937 &rng);

// Writes the ICRC of a whole IP packet into its last 4 bytes, after a
// change to what it covers; false (nothing written) where icrc() has none.
bool set_icrc(Bytes &pkt);

// A raw IP socket of one family that sends whole IP packets.
class RawSocket {
public:
	explicit RawSocket(int family);
	~RawSocket();
	RawSocket(const RawSocket &) = delete;
	RawSocket &operator=(const RawSocket &) = delete;

	// "" once the socket is open, else why it is not.
	const std::string &error() const { return err_; }
	// Sends pkt to dst; "" or the error.
	std::string send(const Bytes &pkt, const Addr &dst);
	// Lets at most about bytes of this socket's packets wait in the
	// host's queues (SO_SNDBUF): send() then waits for room instead of
	// filling the netdev's queue, where the host's own packets would be
	// dropped.  "" or the error.
	std::string limit_queue(int bytes);

private:
	int fd_ = -1;
	int family_;
	std::string err_;
};

} // namespace sroce::roce

#endif
