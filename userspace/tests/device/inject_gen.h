// A deterministic stream of malformed and adversarial RoCE v2 datagrams for
// a device with live traffic, each with the drop reason the receiver must
// count it under (kernel/stats.h, the port's rx_drop_<reason> counters):
// the generator of the sroce_inject tool (inject_tool.cc), held to the
// protocol core by inject_gen_test.cc.
//
// The target is a host with an sroce device whose live RC, UC and UD QPs
// talk to QPs of this host (the "own" addresses) over the target's IPv4
// address.  Packets aimed at a live QP must never disturb its traffic: the
// generator only makes ones the receive path drops before the QP acts on
// them (kernel/dp/net.c, kernel/dp/exec.c, resp.c, comp.c, ud.c):
//
//   runt            UDP payloads under 16 bytes, random or a valid packet
//                   cut short at each offset
//   bad_icrc        random bytes, valid packets cut after 16 bytes, and
//                   valid packets with one ICRC bit flipped
//   unsupported_ip  IPv4 with options, IPv6 with a destination options header
//   no_qp           valid packets for QP numbers 0x800000 and up
//   no_mcast_group  valid packets for QP 0xFFFFFF to a unicast address
//   bcast           any of these to the target subnet's broadcast address
//   malformed       at a live QP (or the GSI QP): unaligned lengths, headers
//                   cut short, transport version, unknown opcodes (RD,
//                   reserved ones, XRC FLUSH and ATOMIC WRITE, vendor), P_Keys,
//                   pad counts, payloads where none belongs, reserved AETH
//                   syndromes, CNP layouts, QP 1 for RC; from the live peer,
//                   UC requests longer than the path MTU, first packets not
//                   one path MTU, pads on first packets, RDMA WRITE DMA
//                   lengths that are not the payload's, RC responses with
//                   such lengths
//   wrong_transport opcodes of another transport than the live QP's (XRC
//                   SEND ONLY and CNPs included)
//   bad_src_addr    RC and UC packets, valid at the expected PSN or not, from
//                   a spoofed source or over IPv6
//   bad_dst_addr    the same from the live peer to another address of the
//                   target (only with Target::alt4)
//   stale           ACKs, NAKs, READ responses and atomic ACKs for PSNs far
//                   ahead of the RC requester's window; atomic requests far
//                   behind the RC responder's (duplicates with no saved
//                   result); aimed at Target::rc_idle if there is one (live
//                   RC traffic drops late duplicate ACKs as stale itself,
//                   which the receiver can then tell apart by QP number)
//   bad_qkey        UD SENDs with another Q_Key
//   lost_message    UC MIDDLE and LAST packets from the live peer between
//                   messages (live UC messages must be one packet each)
//
// "Far" is kPsnFar or more: the live traffic must advance its PSNs by less
// than kPsnFar (2^21 packets) while the stream is sent.  qp_state,
// no_recv_wqe, mcast_to_rc_uc, no_mem, rx_backlog and no_device are never
// produced: they must not rise either.
#ifndef SROCE_TESTS_INJECT_GEN_H
#define SROCE_TESTS_INJECT_GEN_H

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "roce_packet.h"

namespace sroce::inject {

// The receive path's drop reasons, in kernel/stats.h's order; named as
// their counters without "rx_drop_" (no_device: debugfs's rx_drops only).
enum class Reason {
	NoQp,
	Runt,
	UnsupportedIp,
	BadIcrc,
	Malformed,
	QpState,
	WrongTransport,
	Stale,
	NoMem,
	BadQkey,
	NoRecvWqe,
	LostMessage,
	NoMcastGroup,
	Bcast,
	McastToRcUc,
	BadSrcAddr,
	BadDstAddr,
	RxBacklog,
	NoDevice,
	Count_,
};

inline constexpr size_t kReasons = size_t(Reason::Count_);

const char *reason_name(Reason r);

// How far from the live PSNs the "far" PSNs are (see the top).
inline constexpr uint32_t kPsnFar = 1u << 21;

// A live QP of the target, as its peer on this host knows it.
struct LiveQp {
	uint32_t qpn = 0;
	uint32_t sq_psn = 0;	// the first PSN it sent (RC: its requester's)
	uint32_t rq_psn = 0;	// the first PSN it expected (RC: responder)
	uint32_t qkey = 0;	// UD
};

struct Target {
	roce::Addr own4, own6;	// this host; own4 is the live QPs' peer
	roce::Addr dst4, dst6;	// the target; dst4 is the live QPs' address
	std::optional<roce::Addr> alt4;	// another IPv4 address of the target
	roce::Addr spoof4, spoof6;	// addresses of the link nobody has
	roce::Addr bcast4;		// the broadcast address of dst4's subnet
	std::optional<LiveQp> rc, uc, ud;
	// an RC QP connected like rc but idle: nothing outstanding, nothing
	// to receive
	std::optional<LiveQp> rc_idle;
	uint32_t pmtu = 1024;	// the RC and UC QPs' path MTU
};

struct Datagram {
	roce::Addr dst;		// where it goes (also in the IP header)
	roce::Bytes ip;		// the whole IP packet
	Reason reason;		// what the target must count it as
	const char *kind;	// the generator's class of it
};

class Generator {
public:
	Generator(const Target &t, uint32_t seed);

	Datagram next();

	// The classes next() picks from, for the tests and the tool's summary.
	static const std::array<const char *, 16> &kinds();

private:
	using Bytes = roce::Bytes;
	using Addr = roce::Addr;

	uint32_t below(uint32_t n);
	bool coin() { return below(2); }
	const Addr &pick(const Addr &a, const Addr &b) { return coin() ? a : b; }
	// a source and destination pair of one family: the target's own
	// unicast addresses, from this host or a spoofed one
	std::pair<Addr, Addr> any_path();
	// a live QP and its transport; with gsi, possibly QP 1 (UD); if
	// there is no live QP at all, QP 1
	struct Live {
		const LiveQp *qp;
		roce::Transport t;
	};
	Live any_live(bool gsi);

	// A RoCE v2 packet: BTH for opcode, qpn, psn, then body (the
	// extension headers and payload as they go on the wire) and the zero
	// bytes that pad it to whole words, the BTH's pad count pad (that
	// number if unset), everything after the BTH cut to cut bytes if
	// set, and the ICRC.
	Bytes roce(const Addr &src, const Addr &dst, uint8_t opcode,
		   uint32_t qpn, uint32_t psn, const Bytes &body,
		   std::optional<uint8_t> pad = std::nullopt,
		   std::optional<uint32_t> cut = std::nullopt);
	Bytes random_bytes(uint32_t n);
	// a valid SEND ONLY or WRITE ONLY of any transport for qpn
	Bytes some_valid(const Addr &src, const Addr &dst, uint32_t qpn);
	Bytes aeth(uint8_t syndrome);

	Datagram runt();
	Datagram truncated();
	Datagram garbage();
	Datagram bad_icrc();
	Datagram ip_unsupported();
	Datagram no_qp();
	Datagram mcast_qpn();
	Datagram bcast();
	Datagram malformed();
	Datagram invalid_request();
	Datagram wrong_transport();
	Datagram spoofed();
	Datagram wrong_dst();
	Datagram stale();
	Datagram bad_qkey();
	Datagram lost_message();

	Target t_;
	std::mt19937 rng_;
	uint32_t cut_next_ = 0;		// truncated(): the next offset
};

} // namespace sroce::inject

#endif
