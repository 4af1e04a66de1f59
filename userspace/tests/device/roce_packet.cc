// Hand-made RoCE v2 packets (see roce_packet.h).
#include "roce_packet.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sroce::roce {
namespace {

constexpr size_t kIp4Len = 20;
constexpr size_t kIp6Len = 40;
constexpr size_t kUdpLen = 8;
constexpr size_t kBthVariant = 4;	// FECN, BECN, reserved: not covered
constexpr uint8_t kTransportShift = 5;

constexpr std::array<uint32_t, 256> crc_table()
{
	std::array<uint32_t, 256> t{};

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
		t[i] = c;
	}
	return t;
}

constexpr std::array<uint32_t, 256> kCrcTable = crc_table();

void put16(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 8);
	p[1] = uint8_t(v);
}

void put24(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 16);
	p[1] = uint8_t(v >> 8);
	p[2] = uint8_t(v);
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

uint8_t transport_bits(Transport t)
{
	switch (t) {
	case Transport::RC:
		return 0;
	case Transport::UC:
		return 1;
	case Transport::UD:
		return 3;
	case Transport::XRC:
		break;
	}
	return 5;
}

// The operation bits (4:0) of the RC, UC and XRC request opcodes by name.
struct NamedOp {
	const char *name;
	uint8_t op;
};

constexpr NamedOp kNamedOps[] = {
	{"send-first", 0x00},  {"send-middle", 0x01}, {"send-last", 0x02},
	{"send-only", 0x04},   {"write-first", 0x06}, {"write-middle", 0x07},
	{"write-last", 0x08},  {"write-only", 0x0a},
	// RC only (IBTA 1.5, Annex A19; sroce knows no XRC FLUSH or ATOMIC
	// WRITE)
	{"flush", 0x1c},       {"atomic-write", 0x1d},
};

constexpr size_t kFethLen = 4;

// Headers of the opcode's operation bits on RC, UC and XRC.
bool has_reth(uint8_t op)
{
	return op == 0x06 || op == 0x0a || op == 0x0b || op == 0x0c ||
	       op == 0x1c || op == 0x1d;
}

bool has_imm(uint8_t op)
{
	return op == 0x03 || op == 0x05 || op == 0x09 || op == 0x0b;
}

bool has_ieth(uint8_t op)
{
	return op == 0x16 || op == 0x17;
}

std::uniform_int_distribution<uint32_t> below(uint32_t n)
{
	return std::uniform_int_distribution<uint32_t>(0, n - 1);
}

} // namespace

std::optional<Transport> transport_by_name(std::string_view name)
{
	if (name == "rc")
		return Transport::RC;
	if (name == "uc")
		return Transport::UC;
	if (name == "ud")
		return Transport::UD;
	if (name == "xrc")
		return Transport::XRC;
	return std::nullopt;
}

const char *transport_name(Transport t)
{
	switch (t) {
	case Transport::RC:
		return "RC";
	case Transport::UC:
		return "UC";
	case Transport::UD:
		return "UD";
	case Transport::XRC:
		break;
	}
	return "XRC";
}

std::optional<uint8_t> opcode_by_name(Transport t, std::string_view name)
{
	const uint8_t base = uint8_t(transport_bits(t) << kTransportShift);

	if (t == Transport::UD)
		return name == "send-only" ? std::optional<uint8_t>(base | 0x04)
					   : std::nullopt;
	for (const NamedOp &n : kNamedOps)
		if (name == n.name && (t == Transport::RC || n.op < 0x1c))
			return uint8_t(base | n.op);
	return std::nullopt;
}

size_t ext_len(uint8_t opcode)
{
	const uint8_t tr = opcode >> kTransportShift, op = opcode & 0x1f;

	switch (tr) {
	case 0:	// RC; FLUSH: FETH before its RETH
		return (op == 0x1c ? kFethLen : 0) +
		       (has_reth(op) ? kRethLen : 0) + (has_imm(op) ? 4 : 0) +
		       (has_ieth(op) ? 4 : 0);
	case 1:	// UC: no READ, FLUSH, ATOMIC WRITE or IETH
		return (has_reth(op) && op < 0x0c ? kRethLen : 0) +
		       (has_imm(op) ? 4 : 0);
	case 3:	// UD: SEND ONLY, with or without ImmDt
		if (op == 0x04)
			return kDethLen;
		if (op == 0x05)
			return kDethLen + 4;
		return 0;
	case 5:	// XRC: an XRCETH, then RC's headers; no FLUSH, ATOMIC WRITE
		if (op >= 0x1c)
			return 0;
		return kXrcethLen + (has_reth(op) ? kRethLen : 0) +
		       (has_imm(op) ? 4 : 0) + (has_ieth(op) ? 4 : 0);
	default:
		return 0;
	}
}

size_t Addr::len() const
{
	return family == AF_INET ? 4 : 16;
}

std::optional<Addr> parse_addr(const std::string &text)
{
	Addr a;

	if (inet_pton(AF_INET, text.c_str(), a.raw.data()) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, text.c_str(), a.raw.data()) == 1)
		a.family = AF_INET6;
	else
		return std::nullopt;
	return a;
}

uint32_t crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		crc = kCrcTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

std::optional<uint32_t> icrc(const uint8_t *ip, size_t len)
{
	size_t ip_len;

	if (!len)
		return std::nullopt;
	if (ip[0] == 0x45)
		ip_len = kIp4Len;
	else if (ip[0] >> 4 == 6)
		ip_len = kIp6Len;
	else
		return std::nullopt;
	if (len < ip_len + kUdpLen + kBthLen + kIcrcLen)
		return std::nullopt;

	Bytes masked(ip, ip + ip_len + kUdpLen + kBthLen);
	if (ip_len == kIp4Len) {
		masked[1] = 0xff;		// TOS
		masked[8] = 0xff;		// TTL
		masked[10] = masked[11] = 0xff;	// header checksum
	} else {
		masked[0] |= 0x0f;		// traffic class, flow label
		masked[1] = masked[2] = masked[3] = 0xff;
		masked[7] = 0xff;		// hop limit
	}
	masked[ip_len + 6] = masked[ip_len + 7] = 0xff;	// UDP checksum
	masked[ip_len + kUdpLen + kBthVariant] = 0xff;

	const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff,
				0xff, 0xff, 0xff, 0xff};
	uint32_t c = crc32(0xffffffffu, lrh, sizeof(lrh));
	c = crc32(c, masked.data(), masked.size());
	c = crc32(c, ip + masked.size(), len - masked.size() - kIcrcLen);
	return ~c;
}

Bytes udp_datagram(const Addr &src, const Addr &dst, const Bytes &payload,
		   std::mt19937 &rng)
{
	const size_t udp_len = kUdpLen + payload.size();
	const bool v4 = src.family == AF_INET;
	const size_t ip_len = v4 ? kIp4Len : kIp6Len;
	Bytes pkt(ip_len + udp_len, 0);
	uint8_t *ip = pkt.data();

	if (v4) {
		ip[0] = 0x45;
		ip[1] = uint8_t(below(256)(rng));		// TOS
		put16(ip + 2, uint32_t(pkt.size()));
		// 0 would let the kernel pick the identification
		put16(ip + 4, 1 + below(65535)(rng));
		put16(ip + 6, 0x4000);				// DF
		ip[8] = uint8_t(1 + below(255)(rng));		// TTL
		ip[9] = IPPROTO_UDP;
		std::memcpy(ip + 12, src.raw.data(), 4);
		std::memcpy(ip + 16, dst.raw.data(), 4);
	} else {
		put32(ip, 6u << 28 | below(256)(rng) << 20 |
				  below(1u << 20)(rng));
		put16(ip + 4, uint32_t(udp_len));
		ip[6] = IPPROTO_UDP;
		ip[7] = uint8_t(1 + below(255)(rng));		// hop limit
		std::memcpy(ip + 8, src.raw.data(), 16);
		std::memcpy(ip + 24, dst.raw.data(), 16);
	}

	uint8_t *udp = ip + ip_len;
	put16(udp, 0xc000 | below(0x4000)(rng));	// entropy, Annex A17
	put16(udp + 2, kUdpPort);
	put16(udp + 4, uint32_t(udp_len));		// checksum 0
	std::copy(payload.begin(), payload.end(), udp + kUdpLen);
	return pkt;
}

namespace {

// The ICRC c into the packet's last 4 bytes, least significant first.
void put_icrc(Bytes &pkt, uint32_t c)
{
	uint8_t *f = pkt.data() + pkt.size() - kIcrcLen;

	for (int i = 0; i < 4; i++)
		f[i] = uint8_t(c >> (8 * i));
}

} // namespace

bool set_icrc(Bytes &pkt)
{
	const std::optional<uint32_t> c = icrc(pkt.data(), pkt.size());

	if (!c)
		return false;
	put_icrc(pkt, *c);
	return true;
}

Bytes build(const Addr &src, const Addr &dst, const Spec &s,
	    std::mt19937 &rng)
{
	const uint8_t natural_pad = uint8_t((4 - s.len % 4) % 4);
	Bytes rest(ext_len(s.opcode), 0);	// after the BTH, before the ICRC
	const uint8_t tr = s.opcode >> kTransportShift;

	// the extension headers, in wire order
	size_t xrceth = 0;	// the XRCETH's length, before the others
	if (tr == 5 && rest.size() >= kXrcethLen) {
		put24(&rest[1], s.xrc_srqn);	// after 8 reserved bits
		xrceth = kXrcethLen;
	}
	if (tr == 3 && rest.size() >= kDethLen) {
		put32(&rest[0], s.qkey);
		put24(&rest[5], s.src_qpn);
	} else if ((tr <= 1 || xrceth) && has_reth(s.opcode & 0x1f) &&
		   rest.size() >= xrceth + kRethLen) {
		const size_t at = xrceth + (s.opcode == 0x1c ? kFethLen : 0);

		if (s.opcode == 0x1c)
			put32(&rest[0], s.feth);
		put32(&rest[at], uint32_t(s.va >> 32));
		put32(&rest[at + 4], uint32_t(s.va));
		put32(&rest[at + 8], s.rkey);
		put32(&rest[at + 12], s.dma_len.value_or(s.len));
	}
	for (uint32_t i = 0; i < s.len; i++)
		rest.push_back(s.fill ? *s.fill : uint8_t(below(256)(rng)));
	rest.insert(rest.end(), natural_pad, 0);
	if (s.cut && *s.cut < rest.size())
		rest.resize(*s.cut);

	Bytes roce(kBthLen + rest.size() + kIcrcLen, 0);
	uint8_t *bth = roce.data();
	bth[0] = s.opcode;
	bth[1] = uint8_t((s.pad ? *s.pad : natural_pad) & 3) << 4;
	put16(bth + 2, 0xffff);				// P_Key
	put24(bth + 5, s.qpn);
	bth[8] = 0x80;					// AckReq
	put24(bth + 9, s.psn);
	std::copy(rest.begin(), rest.end(), bth + kBthLen);

	Bytes pkt = udp_datagram(src, dst, roce, rng);
	const size_t at = pkt.size() - roce.size();	// the BTH
	pkt[at + kBthVariant] = uint8_t(below(256)(rng));

	uint32_t c = *icrc(pkt.data(), pkt.size());
	if (s.bad_icrc)
		c ^= 1u << below(32)(rng);
	put_icrc(pkt, c);
	return pkt;
}

RawSocket::RawSocket(int family) : family_(family)
{
	// IPPROTO_RAW: the packet carries its own IP header (for IPv4,
	// IP_HDRINCL is implied and a non-zero identification is kept).
	fd_ = socket(family, SOCK_RAW, IPPROTO_RAW);
	if (fd_ < 0) {
		err_ = std::string("raw socket: ") + std::strerror(errno);
		return;
	}
	const int on = 1;
	if (family == AF_INET &&
	    setsockopt(fd_, SOL_SOCKET, SO_BROADCAST, &on, sizeof(on)))
		err_ = std::string("SO_BROADCAST: ") + std::strerror(errno);
	// Without it the kernel reports a packet its qdisc dropped (ENOBUFS)
	// as sent (raw_send_hdrinc(), rawv6_send_hdrinc()).
	if (err_.empty() &&
	    (family == AF_INET ?
		     setsockopt(fd_, SOL_IP, IP_RECVERR, &on, sizeof(on)) :
		     setsockopt(fd_, SOL_IPV6, IPV6_RECVERR, &on, sizeof(on))))
		err_ = std::string("IP_RECVERR: ") + std::strerror(errno);
}

std::string RawSocket::limit_queue(int bytes)
{
	if (!err_.empty())
		return err_;
	if (setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)))
		return std::string("SO_SNDBUF: ") + std::strerror(errno);
	return "";
}

RawSocket::~RawSocket()
{
	if (fd_ >= 0)
		close(fd_);
}

std::string RawSocket::send(const Bytes &pkt, const Addr &dst)
{
	sockaddr_storage ss{};
	socklen_t sl;

	if (!err_.empty())
		return err_;
	if (dst.family != family_)
		return "destination of another IP version than the socket";
	if (family_ == AF_INET) {
		auto *sin = reinterpret_cast<sockaddr_in *>(&ss);
		sin->sin_family = AF_INET;
		std::memcpy(&sin->sin_addr, dst.raw.data(), 4);
		sl = sizeof(*sin);
	} else {
		auto *sin6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		sin6->sin6_family = AF_INET6;
		std::memcpy(&sin6->sin6_addr, dst.raw.data(), 16);
		sl = sizeof(*sin6);
	}
	ssize_t n;
	// a full qdisc: wait for it (up to a second) rather than lose the packet
	for (int tries = 0;; tries++) {
		n = sendto(fd_, pkt.data(), pkt.size(), 0,
			   reinterpret_cast<const sockaddr *>(&ss), sl);
		if (n >= 0 || errno != ENOBUFS || tries == 1000)
			break;
		usleep(1000);
	}
	if (n < 0)
		return std::string("sendto: ") + std::strerror(errno);
	if (size_t(n) != pkt.size())
		return "sendto: short send";
	return "";
}

} // namespace sroce::roce
