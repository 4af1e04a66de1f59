// Malformed and adversarial RoCE v2 datagrams (see inject_gen.h).
#include "inject_gen.h"

#include <sys/socket.h>

#include <algorithm>

namespace sroce::inject {
namespace {

using roce::Addr;
using roce::Bytes;
using roce::Transport;

constexpr size_t kUdpLen = 8;
constexpr size_t kBthLen = roce::kBthLen;
constexpr uint32_t kPsnMask = 0xffffff;
constexpr uint32_t kQpnMulticast = 0xffffff;
constexpr uint32_t kGsiQpn = 1;
constexpr uint32_t kMaxRoce = 1024 + 256 + 64;	// fits a 1500-byte MTU

// Opcodes (IBTA Vol. 1, 9.2; kernel/core/opcode.h).
enum : uint8_t {
	kRcSendFirst = 0x00,
	kRcSendOnly = 0x04,
	kRcSendOnlyImm = 0x05,
	kRcWriteFirst = 0x06,
	kRcWriteOnly = 0x0a,
	kRcReadRequest = 0x0c,
	kRcReadRespFirst = 0x0d,
	kRcReadRespMiddle = 0x0e,
	kRcReadRespLast = 0x0f,
	kRcReadRespOnly = 0x10,
	kRcAck = 0x11,
	kRcAtomicAck = 0x12,
	kRcCmpSwap = 0x13,
	kRcFetchAdd = 0x14,
	kRcSendOnlyInv = 0x17,
	kUc = 0x20,		// UC: the RC operation | kUc
	kUdSendOnly = 0x64,
	kUdSendOnlyImm = 0x65,
	kCnp = 0x81,
	kXrc = 0xa0,		// XRC: the RC operation | kXrc
};

// Operation bits of SEND/WRITE MIDDLE and LAST (RC and UC).
constexpr uint8_t kSendMiddle = 0x01, kSendLast = 0x02, kSendLastImm = 0x03;
constexpr uint8_t kWriteMiddle = 0x07, kWriteLast = 0x08,
		  kWriteLastImm = 0x09;

constexpr size_t kAethLen = 4, kAtomicEthLen = 28, kAtomicAckLen = 8,
		 kCnpLen = 16, kXrcethLen = roce::kXrcethLen;

constexpr const char *kReasonNames[kReasons] = {
	"no_qp",	  "runt",	    "unsupported_ip", "bad_icrc",
	"malformed",	  "qp_state",	    "wrong_transport", "stale",
	"no_mem",	  "bad_qkey",	    "no_recv_wqe",    "lost_message",
	"no_mcast_group", "bcast",	    "mcast_to_rc_uc", "bad_src_addr",
	"bad_dst_addr",	  "rx_backlog",	    "no_device",
};

// The opcodes kernel/core/opcode.c knows; every other one is refused:
// RD, the reserved codes of each transport (XRC's FLUSH and ATOMIC WRITE
// among them), the vendor range.
bool known_opcode(uint8_t op)
{
	const uint8_t rc = op & 0x1f;
	// RC's requests and responses without the placement extensions
	const bool rc_base = rc <= 0x14 || rc == 0x16 || rc == 0x17;

	switch (op >> 5) {
	case 0:		// RC, FLUSH and ATOMIC WRITE included
		return rc_base || rc == 0x1c || rc == 0x1d;
	case 1:		// UC: SEND and RDMA WRITE
		return rc <= 0x0b;
	case 3:		// UD: SEND ONLY, with or without immediate
		return op == kUdSendOnly || op == kUdSendOnlyImm;
	case 4:
		return op == kCnp;
	case 5:		// XRC: RC's without the placement extensions
		return rc_base;
	default:	// RD, vendor
		return false;
	}
}

uint8_t transport_base(Transport t)
{
	switch (t) {
	case Transport::RC:
		return 0x00;
	case Transport::UC:
		return kUc;
	case Transport::UD:
		return 0x60;
	case Transport::XRC:
		break;
	}
	return kXrc;
}

size_t ip_len(const Addr &a)
{
	return a.family == AF_INET ? 20 : 40;
}

void put16(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 8);
	p[1] = uint8_t(v);
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

void put64(uint8_t *p, uint64_t v)
{
	put32(p, uint32_t(v >> 32));
	put32(p + 4, uint32_t(v));
}

Datagram make(const Addr &dst, Bytes ip, Reason r, const char *kind)
{
	return Datagram{dst, std::move(ip), r, kind};
}

// The ICRC a packet carries matches the one computed over it.
bool icrc_matches(const Bytes &ip)
{
	const std::optional<uint32_t> c = roce::icrc(ip.data(), ip.size());

	if (!c)
		return false;
	uint32_t wire = 0;
	for (int i = 0; i < 4; i++)
		wire |= uint32_t(ip[ip.size() - 4 + i]) << (8 * i);
	return wire == *c;
}

} // namespace

const char *reason_name(Reason r)
{
	return size_t(r) < kReasons ? kReasonNames[size_t(r)] : "?";
}

const std::array<const char *, 16> &Generator::kinds()
{
	static const std::array<const char *, 16> k = {
		"runt",	     "truncated",	 "garbage",	"bad-icrc",
		"ip-header", "no-qp",		 "mcast-qpn",	"bcast",
		"malformed", "invalid-request", "other-transport",
		"spoofed",   "wrong-dst",	 "stale",	"bad-qkey",
		"lost-message",
	};
	return k;
}

Generator::Generator(const Target &t, uint32_t seed) : t_(t), rng_(seed) {}

uint32_t Generator::below(uint32_t n)
{
	return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_);
}

std::pair<Addr, Addr> Generator::any_path()
{
	if (coin())
		return {pick(t_.own4, t_.spoof4), t_.dst4};
	return {pick(t_.own6, t_.spoof6), t_.dst6};
}

Generator::Live Generator::any_live(bool gsi)
{
	static const LiveQp kGsi{kGsiQpn, 0, 0, 0};
	Live all[4];
	size_t n = 0;

	if (t_.rc)
		all[n++] = {&*t_.rc, Transport::RC};
	if (t_.uc)
		all[n++] = {&*t_.uc, Transport::UC};
	if (t_.ud)
		all[n++] = {&*t_.ud, Transport::UD};
	if (gsi || !n)
		all[n++] = {&kGsi, Transport::UD};
	return all[below(uint32_t(n))];
}

Bytes Generator::random_bytes(uint32_t n)
{
	Bytes b(n);

	for (uint8_t &x : b)
		x = uint8_t(below(256));
	return b;
}

Bytes Generator::roce(const Addr &src, const Addr &dst, uint8_t opcode,
		      uint32_t qpn, uint32_t psn, const Bytes &body,
		      std::optional<uint8_t> pad, std::optional<uint32_t> cut)
{
	roce::Spec s;
	const size_t ext = roce::ext_len(opcode);

	s.opcode = opcode;
	s.qpn = qpn & kPsnMask;
	s.psn = psn & kPsnMask;
	// the builder's extension headers and payload, overwritten below
	s.len = uint32_t(body.size() > ext ? body.size() - ext : 0);
	s.cut = cut;
	if (!cut && body.size() < ext)
		s.cut = uint32_t(body.size());
	s.fill = 0;
	s.pad = pad;
	Bytes p = roce::build(src, dst, s, rng_);
	const size_t at = ip_len(src) + kUdpLen + kBthLen;
	const size_t n = std::min(body.size(), p.size() - at - roce::kIcrcLen);
	std::copy(body.begin(), body.begin() + long(n), p.begin() + long(at));
	roce::set_icrc(p);
	return p;
}

Bytes Generator::aeth(uint8_t syndrome)
{
	Bytes b = random_bytes(kAethLen);	// MSN random

	b[0] = syndrome;
	return b;
}

// A valid SEND ONLY or RDMA WRITE ONLY of any transport (UD: SEND ONLY
// with a DETH) with up to 64 bytes of payload.
Bytes Generator::some_valid(const Addr &src, const Addr &dst, uint32_t qpn)
{
	const uint32_t len = below(65);
	const Transport tr = Transport(below(3));
	Bytes body;
	uint8_t op;

	if (tr == Transport::UD) {
		op = kUdSendOnly;
		body = random_bytes(roce::kDethLen);
		body[4] = 0;
	} else if (coin()) {
		op = uint8_t(transport_base(tr) | kRcSendOnly);
	} else {
		op = uint8_t(transport_base(tr) | kRcWriteOnly);
		body = random_bytes(roce::kRethLen);
		put32(&body[12], len);
	}
	const Bytes payload = random_bytes(len);
	body.insert(body.end(), payload.begin(), payload.end());
	return roce(src, dst, op, qpn, below(kPsnMask + 1), body);
}

Datagram Generator::runt()
{
	const auto [src, dst] = any_path();

	return make(dst, roce::udp_datagram(src, dst, random_bytes(below(16)), rng_),
		    Reason::Runt, "runt");
}

// A valid packet cut short at the next offset of a cycle over its UDP
// payload, without a new ICRC: under 16 bytes a runt, else a bad ICRC.
Datagram Generator::truncated()
{
	const auto [src, dst] = any_path();
	const Bytes p = some_valid(src, dst, any_live(true).qp->qpn);
	const size_t at = ip_len(src) + kUdpLen;
	const size_t k = cut_next_++ % (p.size() - at);
	const Bytes cut(p.begin() + long(at), p.begin() + long(at + k));
	Bytes ip = roce::udp_datagram(src, dst, cut, rng_);

	if (k < 16)
		return make(dst, std::move(ip), Reason::Runt, "truncated");
	if (icrc_matches(ip))		// 2^-32
		ip.back() ^= 1;
	return make(dst, std::move(ip), Reason::BadIcrc, "truncated");
}

Datagram Generator::garbage()
{
	const auto [src, dst] = any_path();
	Bytes ip = roce::udp_datagram(src, dst, random_bytes(16 + below(1200)),
				      rng_);

	if (icrc_matches(ip))
		ip.back() ^= 1;
	return make(dst, std::move(ip), Reason::BadIcrc, "garbage");
}

Datagram Generator::bad_icrc()
{
	const auto [src, dst] = any_path();
	const uint32_t qpn = coin() ? any_live(true).qp->qpn : below(kPsnMask);
	Bytes ip = some_valid(src, dst, qpn);

	ip[ip.size() - 1 - below(4)] ^= uint8_t(1u << below(8));
	return make(dst, std::move(ip), Reason::BadIcrc, "bad-icrc");
}

// IPv4 with 4 bytes of NOP options (then the length must reach the ICRC
// check, which has no definition for options), or IPv6 with an empty
// destination options header (refused before any length check).
Datagram Generator::ip_unsupported()
{
	const uint32_t qpn = coin() ? any_live(true).qp->qpn : below(kPsnMask);

	if (coin()) {
		const Addr &src = pick(t_.own4, t_.spoof4);
		Bytes ip = some_valid(src, t_.dst4, qpn);
		const uint8_t nops[4] = {1, 1, 1, 1};
		ip.insert(ip.begin() + 20, nops, nops + 4);
		ip[0] = 0x46;
		put16(&ip[2], uint32_t(ip.size()));
		return make(t_.dst4, std::move(ip), Reason::UnsupportedIp,
			    "ip-header");
	}
	const Addr &src = pick(t_.own6, t_.spoof6);
	Bytes ip = coin() ? some_valid(src, t_.dst6, qpn) :
			    roce::udp_datagram(src, t_.dst6,
					       random_bytes(below(64)), rng_);
	// next header UDP, length 0 (8 bytes), PadN of 4
	const uint8_t dstopts[8] = {17, 0, 1, 4, 0, 0, 0, 0};
	ip.insert(ip.begin() + 40, dstopts, dstopts + 8);
	ip[6] = 60;
	put16(&ip[4], uint32_t(ip.size() - 40));
	return make(t_.dst6, std::move(ip), Reason::UnsupportedIp, "ip-header");
}

// Any opcode and body: the QP is looked up before the packet is parsed.
Datagram Generator::no_qp()
{
	const auto [src, dst] = any_path();
	const uint32_t qpn = 0x800000 + below(0x7fffff);

	return make(dst,
		    roce(src, dst, uint8_t(below(256)), qpn, below(kPsnMask + 1),
			 random_bytes(4 * below(17))),
		    Reason::NoQp, "no-qp");
}

Datagram Generator::mcast_qpn()
{
	const auto [src, dst] = any_path();

	return make(dst,
		    roce(src, dst, uint8_t(below(256)), kQpnMulticast,
			 below(kPsnMask + 1), random_bytes(4 * below(17))),
		    Reason::NoMcastGroup, "mcast-qpn");
}

// Broadcast is refused before anything else, runts included.
Datagram Generator::bcast()
{
	const Addr &src = pick(t_.own4, t_.spoof4);
	Bytes ip;

	switch (below(3)) {
	case 0:
		ip = roce::udp_datagram(src, t_.bcast4, random_bytes(below(64)),
					rng_);
		break;
	case 1:
		ip = some_valid(src, t_.bcast4, any_live(true).qp->qpn);
		break;
	default:
		ip = some_valid(src, t_.bcast4, kQpnMulticast);
		break;
	}
	return make(t_.bcast4, std::move(ip), Reason::Bcast, "bcast");
}

// Refused by the parser for a reason other than a request error, at a
// live QP: counted before the transport and the address are looked at.
Datagram Generator::malformed()
{
	static const struct {
		uint8_t op;
		size_t hdr;
	} kHeaders[] = {
		{kRcWriteOnly, roce::kRethLen},	    {kUc | kRcWriteOnly, 16},
		{kRcReadRequest, roce::kRethLen},   {kRcCmpSwap, kAtomicEthLen},
		{kRcFetchAdd, kAtomicEthLen},	    {kRcAck, kAethLen},
		{kRcAtomicAck, kAethLen + kAtomicAckLen},
		{kRcReadRespOnly, kAethLen},	    {kUdSendOnly, roce::kDethLen},
		{kRcSendOnlyImm, 4},		    {kRcSendOnlyInv, 4},
		{kCnp, kCnpLen},
	};
	const auto [src, dst] = any_path();
	const Live live = any_live(true);
	const LiveQp *q = live.qp;
	const uint32_t psn = below(kPsnMask + 1);
	const uint8_t send = uint8_t(transport_base(live.t) | kRcSendOnly);
	const size_t send_ext = roce::ext_len(send);
	Bytes body = random_bytes(uint32_t(send_ext + 16)), ip;

	switch (below(10)) {
	case 0: {	// not whole words
		roce::Spec s;
		s.opcode = send;
		s.qpn = q->qpn;
		s.psn = psn;
		s.cut = uint32_t(send_ext + 16 - 1 - below(3));
		ip = roce::build(src, dst, s, rng_);
		break;
	}
	case 1: {	// an extension header cut short
		const auto &h = kHeaders[below(std::size(kHeaders))];
		ip = roce(src, dst, h.op, q->qpn, psn,
			  random_bytes(uint32_t(h.hdr)), 0,
			  below(uint32_t(h.hdr)));
		break;
	}
	case 2: {	// transport header version 1-15
		ip = roce(src, dst, send, q->qpn, psn, body);
		ip[ip_len(src) + kUdpLen + 1] |= uint8_t(1 + below(15));
		roce::set_icrc(ip);
		break;
	}
	case 3: {	// RD, XRC's reserved and unknown, other reserved, vendor
		uint8_t op;
		do
			op = uint8_t(below(256));
		while (known_opcode(op));
		ip = roce(src, dst, op, q->qpn, psn, random_bytes(4 * below(9)));
		break;
	}
	case 4: {	// a partition other than the default one
		uint32_t pkey;
		do
			pkey = below(0x10000);
		while ((pkey & 0x7fff) == 0x7fff);
		ip = roce(src, dst, send, q->qpn, psn, body);
		put16(&ip[ip_len(src) + kUdpLen + 2], pkey);
		roce::set_icrc(ip);
		break;
	}
	case 5:		// a pad count with nothing to pad
		body.resize(send_ext);
		ip = roce(src, dst, send, q->qpn, psn, body,
			  uint8_t(1 + below(3)));
		break;
	case 6: {	// a payload after headers that have none
		const uint8_t op = coin() ? kRcAck : kRcReadRequest;
		Bytes b = op == kRcAck ? aeth(0x1f) :
					 random_bytes(roce::kRethLen);
		const Bytes extra = random_bytes(4 * (1 + below(8)));
		b.insert(b.end(), extra.begin(), extra.end());
		ip = roce(src, dst, op, q->qpn, psn, b, 0);
		break;
	}
	case 7: {	// a reserved AETH syndrome, or a NAK on a response
		const uint8_t op = coin() ? kRcAck : kRcReadRespOnly;
		uint8_t syn = uint8_t(0x40 + below(32));	// kind 10b
		if (op == kRcAck && coin())
			syn = uint8_t(0x80 + below(128));	// bit 7
		else if (op == kRcAck && coin())
			syn = uint8_t(0x65 + below(27));	// NAK code > 4
		else if (op == kRcReadRespOnly && coin())
			syn = uint8_t(0x20 + below(32));	// RNR NAK
		Bytes b = aeth(syn);
		if (op == kRcReadRespOnly)
			b.resize(b.size() + 4 * below(9));
		ip = roce(src, dst, op, q->qpn, psn, b, 0);
		break;
	}
	case 8: {	// a CNP with a payload or a pad count
		const bool padded = coin();
		Bytes b(kCnpLen + (padded ? 4 : 4 * (1 + below(4))), 0);
		ip = roce(src, dst, kCnp, q->qpn, psn, b,
			  uint8_t(padded ? 1 + below(3) : 0));
		break;
	}
	default:	// QP 1 (GSI, UD) for an RC or UC request
		ip = roce(src, dst, uint8_t((coin() ? 0 : kUc) | kRcSendOnly),
			  kGsiQpn, psn, random_bytes(4 * below(9)));
		break;
	}
	return make(dst, std::move(ip), Reason::Malformed, "malformed");
}

// Request errors (kernel/core/pkt.c's, and the path MTU check) that reach
// no responder: UC requests and RC responses from the live peer.  An RC
// request with one from the peer would be NAKed and end the connection.
Datagram Generator::invalid_request()
{
	const Addr &src = t_.own4, &dst = t_.dst4;
	const uint32_t psn = below(kPsnMask + 1), m = t_.pmtu;

	if (!t_.uc && !t_.rc)
		return malformed();
	if (!t_.uc || (t_.rc && coin())) {
		// a READ RESPONSE FIRST or MIDDLE that is not an IB MTU, or
		// MIDDLE with a pad count
		const bool first = coin();
		Bytes b = first ? aeth(0x1f) : Bytes();
		const Bytes pl = random_bytes(4 * (1 + below(60)));
		b.insert(b.end(), pl.begin(), pl.end());
		return make(dst,
			    roce(src, dst,
				 first ? kRcReadRespFirst : kRcReadRespMiddle,
				 t_.rc->qpn, psn, b,
				 uint8_t(first ? 0 : below(4))),
			    Reason::Malformed, "invalid-request");
	}
	const uint32_t qpn = t_.uc->qpn;
	Bytes ip;

	switch (below(5)) {
	case 0:		// longer than the path MTU
		ip = roce(src, dst, kUc | kRcSendOnly, qpn, psn,
			  random_bytes(m + 4 * (1 + below(64))));
		break;
	case 1:		// a first packet that is not one path MTU
		ip = roce(src, dst, kUc | kRcSendFirst, qpn, psn,
			  random_bytes(m / 2 - 4 * below(8)));
		break;
	case 2:		// a pad count on a first packet
		ip = roce(src, dst, kUc | kRcSendFirst, qpn, psn,
			  random_bytes(m), uint8_t(1 + below(3)));
		break;
	case 3: {	// WRITE ONLY: a DMA length other than the payload's
		const uint32_t len = 4 * below(64);
		Bytes b = random_bytes(roce::kRethLen + len);
		put32(&b[12], len + 1 + below(1000));
		ip = roce(src, dst, kUc | kRcWriteOnly, qpn, psn, b);
		break;
	}
	default: {	// WRITE FIRST: a DMA length no more than its payload
		Bytes b = random_bytes(roce::kRethLen + m);
		put32(&b[12], m - below(m));
		ip = roce(src, dst, kUc | kRcWriteFirst, qpn, psn, b);
		break;
	}
	}
	return make(dst, std::move(ip), Reason::Malformed, "invalid-request");
}

// Well-formed packets of another transport than the live QP's.
Datagram Generator::wrong_transport()
{
	// not QP 1: RC and UC opcodes for it are malformed (BAD_QPN)
	if (!t_.rc && !t_.uc && !t_.ud)
		return no_qp();
	const auto [src, dst] = any_path();
	const Live live = any_live(false);
	const LiveQp *q = live.qp;
	const Transport own = live.t;
	const uint32_t psn = below(kPsnMask + 1);

	for (;;) {
		const uint32_t len = 4 * below(33);
		switch (below(6)) {
		case 0:
		case 1: {	// SEND ONLY of another transport, XRC included
			const Transport tr = Transport(below(4));
			if (tr == own)
				continue;
			Bytes b;
			uint8_t op = uint8_t(transport_base(tr) | kRcSendOnly);
			if (tr == Transport::UD) {
				b = random_bytes(roce::kDethLen);
				b[4] = 0;
			} else if (tr == Transport::XRC) {
				b = random_bytes(kXrcethLen);	// any XRC SRQ
				b[0] = 0;
			}
			const Bytes pl = random_bytes(len);
			b.insert(b.end(), pl.begin(), pl.end());
			return make(dst, roce(src, dst, op, q->qpn, psn, b),
				    Reason::WrongTransport, "other-transport");
		}
		case 2:		// an RC ACK
		case 3: {	// an RC READ RESPONSE ONLY
			if (own == Transport::RC)
				continue;
			const bool ack = coin();
			Bytes b = aeth(uint8_t(below(32)));
			if (!ack)
				b.resize(b.size() + len);
			return make(dst,
				    roce(src, dst,
					 ack ? kRcAck : kRcReadRespOnly,
					 q->qpn, psn, b, 0),
				    Reason::WrongTransport, "other-transport");
		}
		default:	// a CNP, of no QP's transport
			return make(dst,
				    roce(src, dst, kCnp, q->qpn, psn,
					 Bytes(kCnpLen, 0), 0),
				    Reason::WrongTransport, "other-transport");
		}
	}
}

// A packet of the RC or UC QP's own transport, valid at the expected PSN
// or not, not from the live peer's address (IPv4 spoofed, or IPv6).
Datagram Generator::spoofed()
{
	const bool rc = t_.rc && (!t_.uc || coin());

	if (!t_.rc && !t_.uc)
		return malformed();
	const LiveQp &q = rc ? *t_.rc : *t_.uc;
	const uint8_t base = rc ? 0x00 : kUc;
	Addr src = t_.spoof4, dst = t_.dst4;
	Bytes b;
	uint8_t op;
	uint32_t psn = q.rq_psn;

	if (coin()) {
		src = pick(t_.own6, t_.spoof6);
		dst = t_.dst6;
	}
	switch (below(5)) {
	case 0:		// the SEND the QP expects
		op = base | kRcSendOnly;
		b = random_bytes(4 * below(65));
		break;
	case 1: {	// an RDMA WRITE ONLY
		const uint32_t len = 4 * below(65);
		op = base | kRcWriteOnly;
		b = random_bytes(roce::kRethLen + len);
		put32(&b[12], len);
		break;
	}
	case 2:		// longer than the path MTU
		op = base | kRcSendOnly;
		b = random_bytes(t_.pmtu + 4 * (1 + below(64)));
		break;
	case 3:		// a MIDDLE packet out of the blue
		op = base | kSendMiddle;
		b = random_bytes(t_.pmtu);
		psn = below(kPsnMask + 1);
		break;
	default:
		if (rc) {	// an ACK of everything outstanding
			op = kRcAck;
			b = aeth(0x1f);
			psn = q.sq_psn;
		} else {
			op = base | kSendLast;
			b = random_bytes(4 * below(65));
			psn = below(kPsnMask + 1);
		}
		break;
	}
	return make(dst, roce(src, dst, op, q.qpn, psn, b), Reason::BadSrcAddr,
		    "spoofed");
}

// From the live peer to another address of the target.
Datagram Generator::wrong_dst()
{
	if (!t_.alt4 || (!t_.rc && !t_.uc))
		return spoofed();
	const bool rc = t_.rc && (!t_.uc || coin());
	const LiveQp &q = rc ? *t_.rc : *t_.uc;

	return make(*t_.alt4,
		    roce(t_.own4, *t_.alt4,
			 uint8_t((rc ? 0x00 : kUc) | kRcSendOnly), q.qpn,
			 q.rq_psn, random_bytes(4 * below(65))),
		    Reason::BadDstAddr, "wrong-dst");
}

// Responses far ahead of the RC requester's window, atomic requests far
// behind the responder's: nothing the QP can act on (see inject_gen.h).
Datagram Generator::stale()
{
	if (!t_.rc && !t_.rc_idle)
		return wrong_transport();
	const LiveQp &q = t_.rc_idle ? *t_.rc_idle : *t_.rc;
	const Addr &src = t_.own4, &dst = t_.dst4;
	const uint32_t ahead = q.sq_psn + kPsnFar + below(kPsnFar);
	Bytes b;
	uint8_t op;

	switch (below(6)) {
	case 0: {	// ACK, RNR NAK, NAK (codes 0-4)
		static const uint8_t kind[] = {0x00, 0x20, 0x60};
		const uint8_t k = kind[below(3)];
		op = kRcAck;
		b = aeth(uint8_t(k | (k == 0x60 ? below(5) : below(32))));
		break;
	}
	case 1:		// READ RESPONSE FIRST or MIDDLE of an IB MTU
	case 2: {
		const bool first = coin();
		op = first ? kRcReadRespFirst : kRcReadRespMiddle;
		if (first)
			b = aeth(uint8_t(below(32)));
		const Bytes pl = random_bytes(256u << below(3));
		b.insert(b.end(), pl.begin(), pl.end());
		break;
	}
	case 3: {	// READ RESPONSE LAST or ONLY
		op = coin() ? kRcReadRespLast : kRcReadRespOnly;
		b = aeth(uint8_t(below(32)));
		const Bytes pl = random_bytes(below(t_.pmtu + 1));
		b.insert(b.end(), pl.begin(), pl.end());
		break;
	}
	case 4:		// ATOMIC ACKNOWLEDGE
		op = kRcAtomicAck;
		b = aeth(uint8_t(below(32)));
		b.resize(kAethLen + kAtomicAckLen);
		break;
	default: {	// a duplicate atomic request with no saved result
		op = coin() ? kRcCmpSwap : kRcFetchAdd;
		b = random_bytes(kAtomicEthLen);
		put64(&b[0], uint64_t(below(1u << 29)) * 8);
		return make(dst,
			    roce(src, dst, op, q.qpn,
				 q.rq_psn - kPsnFar - below(kPsnFar), b),
			    Reason::Stale, "stale");
	}
	}
	return make(dst, roce(src, dst, op, q.qpn, ahead, b), Reason::Stale,
		    "stale");
}

Datagram Generator::bad_qkey()
{
	if (!t_.ud)
		return malformed();
	const auto [src, dst] = any_path();
	const bool imm = coin();
	Bytes b = random_bytes(uint32_t(roce::kDethLen + (imm ? 4 : 0) +
					below(513)));
	uint32_t qkey;

	do
		qkey = uint32_t(rng_());
	while (qkey == t_.ud->qkey);
	put32(&b[0], qkey);
	b[4] = 0;
	return make(dst,
		    roce(src, dst, imm ? kUdSendOnlyImm : kUdSendOnly,
			 t_.ud->qpn, below(kPsnMask + 1), b),
		    Reason::BadQkey, "bad-qkey");
}

// UC MIDDLE and LAST packets from the live peer while it is between
// messages: the rest of a message whose first packet was lost.
Datagram Generator::lost_message()
{
	if (!t_.uc)
		return malformed();
	static const uint8_t kOps[] = {kSendMiddle,  kWriteMiddle, kSendLast,
				       kSendLastImm, kWriteLast,   kWriteLastImm};
	const uint8_t op = kOps[below(std::size(kOps))];
	const bool middle = op == kSendMiddle || op == kWriteMiddle;
	const bool imm = op == kSendLastImm || op == kWriteLastImm;
	const Bytes b = random_bytes(middle ? t_.pmtu :
				     uint32_t((imm ? 4 : 0) + below(t_.pmtu + 1)));

	return make(t_.dst4,
		    roce(t_.own4, t_.dst4, uint8_t(kUc | op), t_.uc->qpn,
			 below(kPsnMask + 1), b),
		    Reason::LostMessage, "lost-message");
}

Datagram Generator::next()
{
	switch (below(16)) {
	case 0:
		return runt();
	case 1:
		return truncated();
	case 2:
		return garbage();
	case 3:
		return bad_icrc();
	case 4:
		return ip_unsupported();
	case 5:
		return no_qp();
	case 6:
		return mcast_qpn();
	case 7:
		return bcast();
	case 8:
		return malformed();
	case 9:
		return invalid_request();
	case 10:
		return wrong_transport();
	case 11:
		return spoofed();
	case 12:
		return wrong_dst();
	case 13:
		return stale();
	case 14:
		return bad_qkey();
	default:
		return lost_message();
	}
}

} // namespace sroce::inject
