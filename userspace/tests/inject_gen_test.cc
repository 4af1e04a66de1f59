// The datagram generator of sroce_inject (device/inject_gen.cc) held to
// the protocol core: each datagram it makes is run through a model of the
// receive path (kernel/dp/net.c, exec.c, resp.c, comp.c, ud.c) whose
// decisions are the core's own functions (ICRC, parser, path MTU check,
// address check, RC and UC responder and RC ACK decisions), with the live
// QPs' PSNs moved on by what the live traffic may do meanwhile; the reason
// the model reaches must be the one the generator predicts.  The reason
// names are the module's counter names (kernel/stats.c).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "core_test_util.h"
#include "device/inject_gen.h"

extern "C" {
#include "kernel/core/addr.h"
#include "kernel/core/icrc.h"
#include "kernel/core/pkt.h"
#include "kernel/core/rc.h"
#include "kernel/core/uc.h"
}

namespace {

using sroce::inject::Datagram;
using sroce::inject::Generator;
using sroce::inject::LiveQp;
using sroce::inject::Reason;
using sroce::inject::Target;
using sroce::roce::Addr;
using sroce::roce::Bytes;

Addr addr(const char *text)
{
	const std::optional<Addr> a = sroce::roce::parse_addr(text);

	EXPECT_TRUE(a) << text;
	return a.value_or(Addr{});
}

void gid_of(const Addr &a, uint8_t gid[16])
{
	std::memset(gid, 0, 16);
	if (a.family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		std::memcpy(gid + 12, a.raw.data(), 4);
	} else {
		std::memcpy(gid, a.raw.data(), 16);
	}
}

Target target(bool alt = true)
{
	Target t;

	t.own4 = addr("192.0.2.2");
	t.own6 = addr("fd53:726f:6365::2");
	t.dst4 = addr("192.0.2.1");
	t.dst6 = addr("fd53:726f:6365::1");
	if (alt)
		t.alt4 = addr("192.0.2.11");
	t.spoof4 = addr("192.0.2.77");
	t.spoof6 = addr("fd53:726f:6365::77");
	t.bcast4 = addr("192.0.2.255");
	t.rc = LiveQp{0x11, 0xfffff0, 0x000100, 0};	// PSNs that wrap
	t.uc = LiveQp{0x12, 0x123456, 0x654321, 0};
	t.ud = LiveQp{0x13, 0, 0, 0x11111111};
	t.rc_idle = LiveQp{0x14, 0x000005, 0xfffffe, 0};
	t.pmtu = 1024;
	return t;
}

// The live QPs' state while the datagrams arrive: the live traffic has
// advanced the RC requester by sent PSNs (outstanding of them not yet
// acknowledged) and the responder by received ones.
struct Live {
	uint32_t sent, outstanding, received;
};

// What the receive path does with d at t's device, as a reason; a
// datagram the model finds acceptable fails the test.
class Model {
public:
	Model(const Target &t, Live l) : t_(t), l_(l) {}

	std::string why(const Datagram &d)
	{
		const Bytes &p = d.ip;
		const bool v4 = (p[0] >> 4) == 4;
		const size_t ihl = v4 ? (p[0] & 0xf) * 4u : 40;

		if (v4 && !std::memcmp(p.data() + 16, t_.bcast4.raw.data(), 4))
			return "bcast";
		if (!v4 && p[6] != IPPROTO_UDP)
			return "unsupported_ip";
		if (p.size() < ihl + 8 + 16)
			return "runt";
		const uint32_t len = uint32_t(p.size() - ihl - 8);
		const uint8_t *bth = p.data() + ihl + 8;
		switch (sroce_icrc_verify(sroce_test::crc32_table, p.data(),
					  p.data() + ihl, bth, len)) {
		case SROCE_ICRC_OK:
			break;
		case SROCE_ICRC_TOO_SHORT:
			return "runt";
		case SROCE_ICRC_UNSUPPORTED_IP:
			return "unsupported_ip";
		default:
			return "bad_icrc";
		}
		const uint32_t qpn = uint32_t(bth[5]) << 16 | bth[6] << 8 | bth[7];
		if (qpn == 0xffffff)
			return "no_mcast_group";	// no group joined
		return qp(p, qpn, bth, len);
	}

private:
	std::string qp(const Bytes &p, uint32_t qpn, const uint8_t *bth,
		       uint32_t len)
	{
		int tr;		// the QP's transport
		const LiveQp *q = nullptr;

		if (t_.rc && qpn == t_.rc->qpn)
			q = &*t_.rc, tr = SROCE_TRANSPORT_RC;
		else if (t_.rc_idle && qpn == t_.rc_idle->qpn)
			q = &*t_.rc_idle, tr = SROCE_TRANSPORT_RC;
		else if (t_.uc && qpn == t_.uc->qpn)
			q = &*t_.uc, tr = SROCE_TRANSPORT_UC;
		else if (t_.ud && qpn == t_.ud->qpn)
			q = &*t_.ud, tr = SROCE_TRANSPORT_UD;
		else if (qpn == 1)
			tr = SROCE_TRANSPORT_UD;	// GSI
		else
			return "no_qp";

		sroce_pkt pkt{};
		sroce_drop reason = sroce_pkt_parse(bth, len, &pkt);
		if (reason != SROCE_DROP_NONE &&
		    !sroce_pkt_drop_is_request_error(reason))
			return "malformed";
		if (pkt.op->transport != tr)
			return "wrong_transport";
		if (tr != SROCE_TRANSPORT_UD) {
			const std::string a = address(p);
			if (!a.empty())
				return a;
		}
		const bool request = pkt.op->flags & SROCE_OPF_REQUEST;
		if (reason == SROCE_DROP_NONE && tr != SROCE_TRANSPORT_UD &&
		    request)
			reason = sroce_pkt_check_pmtu(&pkt, t_.pmtu);
		if (tr == SROCE_TRANSPORT_UD) {
			if (!request)
				return "wrong_transport";
			if (reason != SROCE_DROP_NONE)
				return "malformed";
			if (!q)
				return "GSI QP would receive it";
			if (pkt.deth.qkey != q->qkey)
				return "bad_qkey";
			return "UD QP would receive it";
		}
		if (tr == SROCE_TRANSPORT_UC) {
			if (!request)
				return "wrong_transport";
			if (reason != SROCE_DROP_NONE)
				return "malformed";
			// live UC messages are one packet: between messages
			sroce_rc_resp_state st{};
			st.epsn = (q->rq_psn + l_.received) & 0xffffff;
			st.seq = SROCE_RC_SEQ_IDLE;
			bool lost;
			if (sroce_uc_resp_decide(&st, &pkt, reason, &lost) ==
			    SROCE_UC_RESP_DROP)
				return "lost_message";
			return "UC QP would execute it";
		}
		if (request) {
			sroce_rc_resp_state st{};
			st.epsn = (q->rq_psn + l_.received) & 0xffffff;
			st.seq = SROCE_RC_SEQ_IDLE;
			switch (sroce_rc_resp_decide(&st, &pkt, reason)) {
			case SROCE_RC_RESP_DUPLICATE:
				// no saved atomic result; other duplicates
				// would be answered
				if (pkt.op->kind == SROCE_KIND_CMP_SWAP ||
				    pkt.op->kind == SROCE_KIND_FETCH_ADD)
					return "stale";
				return "RC responder would answer a duplicate";
			case SROCE_RC_RESP_DROP:
				return "stale";
			default:
				return "RC responder would act on it";
			}
		}
		if (reason != SROCE_DROP_NONE)
			return "malformed";
		const uint32_t una = (q->sq_psn + l_.sent - l_.outstanding) &
				     0xffffff;
		const uint32_t next = (q->sq_psn + l_.sent) & 0xffffff;
		if (pkt.op->kind == SROCE_KIND_ACK) {
			sroce_rc_ack ack{};
			sroce_rc_ack_decide(una, next, pkt.bth.psn,
					    pkt.aeth.syndrome, &ack);
			return ack.action == SROCE_RC_ACK_STALE ?
				       "stale" :
				       "RC requester would act on an ACK";
		}
		// a READ response or atomic ACK answers [una, next) only
		if (((pkt.bth.psn - una) & 0xffffff) <
		    ((next - una) & 0xffffff))
			return "RC requester would take a response";
		return "stale";
	}

	// kernel/dp/net.c's sroce_net_rx_from_peer() for the live QPs: their
	// address vector is dst4 from own4.
	std::string address(const Bytes &p)
	{
		sroce_addr_pair a{};
		uint8_t sgid[16], dgid[16];

		gid_of(t_.dst4, sgid);
		gid_of(t_.own4, dgid);
		if (!sroce_addr_parse(p.data(), uint32_t(p.size()), &a))
			return "bad_src_addr";
		switch (sroce_addr_check_conn(&a, sgid, dgid)) {
		case SROCE_ADDR_OK:
			return "";
		case SROCE_ADDR_BCAST:
			return "bcast";
		case SROCE_ADDR_MCAST:
			return "mcast_to_rc_uc";
		case SROCE_ADDR_BAD_SRC:
			return "bad_src_addr";
		default:
			return "bad_dst_addr";
		}
	}

	Target t_;
	Live l_;
};

constexpr int kDatagrams = 30000;

// Every datagram's predicted reason is the model's, for live QPs that
// have just started and for ones far along (PSNs wrapped, ACKs pending).
TEST(InjectGen, EveryDatagramIsCountedAsPredicted)
{
	for (const Live l : {Live{0, 0, 0}, Live{200000, 3, 150000},
			     Live{sroce::inject::kPsnFar - 1, 16,
				  sroce::inject::kPsnFar - 1}}) {
		const Target t = target();
		Generator g(t, 7);
		Model m(t, l);
		std::map<std::string, int> mismatches;

		for (int i = 0; i < kDatagrams; i++) {
			const Datagram d = g.next();
			const std::string want =
				sroce::inject::reason_name(d.reason);
			const std::string got = m.why(d);
			if (got != want && mismatches[std::string(d.kind) +
						      ": predicted " + want +
						      ", model " + got]++ == 0)
				ADD_FAILURE()
					<< "datagram " << i << " (" << d.kind
					<< "): predicted " << want
					<< ", the receive path: " << got;
		}
		EXPECT_TRUE(mismatches.empty());
	}
}

// The stream is deterministic: the same seed, the same datagrams.
TEST(InjectGen, SameSeedSameStream)
{
	Generator a(target(), 42), b(target(), 42), c(target(), 43);
	int differ = 0;

	for (int i = 0; i < 2000; i++) {
		const Datagram x = a.next(), y = b.next(), z = c.next();
		ASSERT_EQ(x.ip, y.ip) << i;
		ASSERT_EQ(x.reason, y.reason) << i;
		differ += x.ip != z.ip;
	}
	EXPECT_GT(differ, 1000);
}

// Every class is drawn, and every reason the header promises is counted
// at least 1% of the time (in 30000 datagrams); the ones it rules out
// never.
TEST(InjectGen, EveryClassAndPromisedReasonOccurs)
{
	Generator g(target(), 1);
	std::map<std::string, int> kinds;
	int per[sroce::inject::kReasons] = {};

	for (int i = 0; i < kDatagrams; i++) {
		const Datagram d = g.next();
		kinds[d.kind]++;
		per[size_t(d.reason)]++;
	}
	for (const char *k : Generator::kinds())
		EXPECT_GT(kinds[k], 0) << k;
	EXPECT_EQ(kinds.size(), Generator::kinds().size());
	const std::set<Reason> never = {Reason::QpState, Reason::NoMem,
					Reason::NoRecvWqe, Reason::McastToRcUc,
					Reason::RxBacklog, Reason::NoDevice};
	for (size_t r = 0; r < sroce::inject::kReasons; r++) {
		const Reason reason = Reason(r);
		if (never.count(reason))
			EXPECT_EQ(per[r], 0) << sroce::inject::reason_name(reason);
		else
			EXPECT_GT(per[r], kDatagrams / 100)
				<< sroce::inject::reason_name(reason);
	}
}

// Without a second address of the target, nothing is predicted as
// bad_dst_addr; without live QPs, nothing aims at one.
TEST(InjectGen, OnlyWhatTheTargetHas)
{
	Target bare = target(false);
	bare.rc_idle.reset();
	bare.rc.reset();
	bare.uc.reset();
	bare.ud.reset();
	Generator g(target(false), 3), h(bare, 3);
	Model m(bare, Live{0, 0, 0});

	for (int i = 0; i < 5000; i++) {
		EXPECT_NE(g.next().reason, Reason::BadDstAddr);
		const Datagram d = h.next();
		EXPECT_EQ(m.why(d), sroce::inject::reason_name(d.reason))
			<< d.kind;
	}
}

// XRC (IBTA Annex A14) is a transport the core knows: its SEND ONLY at a
// live RC, UC or UD QP is a well-formed packet of another transport, and
// the opcodes refused as unknown include only XRC's that the core does not
// know (the reserved ones, FLUSH and ATOMIC WRITE) besides RD's, other
// reserved ones and the vendor range.
TEST(InjectGen, XrcOpcodes)
{
	Generator g(target(), 11);
	std::set<int> unknown;
	int xrc_send = 0;

	for (int i = 0; i < kDatagrams; i++) {
		const Datagram d = g.next();
		const size_t bth = ((d.ip[0] >> 4) == 4 ? (d.ip[0] & 0xf) * 4u : 40) + 8;
		if (d.ip.size() < bth + 16)
			continue;
		sroce_pkt pkt{};
		const sroce_drop r = sroce_pkt_parse(d.ip.data() + bth,
						     uint32_t(d.ip.size() - bth),
						     &pkt);
		const uint8_t op = d.ip[bth];

		if (d.reason == Reason::Malformed && r == SROCE_DROP_UNKNOWN_OPCODE) {
			EXPECT_EQ(sroce_opcode_lookup(op), nullptr) << int(op);
			unknown.insert(op);
		}
		if (d.reason == Reason::WrongTransport && op == 0xa4) {
			xrc_send++;
			EXPECT_EQ(sroce_pkt_drop_name(r), std::string("none"));
			ASSERT_NE(pkt.op, nullptr);
			EXPECT_EQ(pkt.op->transport, SROCE_TRANSPORT_XRC);
		}
	}
	EXPECT_GT(xrc_send, 50);
	int xrc_unknown = 0;
	for (int op : unknown) {
		EXPECT_FALSE(op >= 0xa0 && op <= 0xb4) << op;
		EXPECT_FALSE(op == 0xb6 || op == 0xb7) << op;
		xrc_unknown += op >= 0xa0 && op < 0xc0;
	}
	// 0xb5, 0xb8-0xbf: some of them, among the 193 unknown codes
	EXPECT_GT(xrc_unknown, 0);
	EXPECT_GT(unknown.size(), 100u);
}

// With an idle RC QP, every stale datagram is for it and nothing for the
// live RC QP is: the live traffic's own stale drops stay apart.
TEST(InjectGen, StaleGoesToTheIdleRcQp)
{
	const Target t = target();
	Generator g(t, 5);
	int stale = 0;

	for (int i = 0; i < 10000; i++) {
		const Datagram d = g.next();
		const size_t bth = ((d.ip[0] >> 4) == 4 ? (d.ip[0] & 0xf) * 4u : 40) + 8;
		if (d.ip.size() < bth + 8)
			continue;
		const uint32_t qpn = uint32_t(d.ip[bth + 5]) << 16 |
				     d.ip[bth + 6] << 8 | d.ip[bth + 7];
		if (d.reason == Reason::Stale) {
			EXPECT_EQ(qpn, t.rc_idle->qpn) << d.kind;
			stale++;
		}
	}
	EXPECT_GT(stale, 300);
}

// The names are the module's: kernel/stats.c's rx_drop_ counters, in
// kernel/stats.h's order, and no_device.
TEST(InjectGen, ReasonNamesAreTheModulesCounters)
{
	std::ifstream f(SROCE_KERNEL_DIR "/stats.c");
	ASSERT_TRUE(f) << SROCE_KERNEL_DIR "/stats.c";
	std::stringstream ss;
	ss << f.rdbuf();
	const std::string src = ss.str();
	const std::string desc = "SROCE_DROP_DESC(";
	std::vector<std::string> names;

	// SROCE_DROP_DESC(SROCE_DROP_X, "name"); the macro's definition has
	// no quoted name
	for (size_t at = src.find(desc); at != std::string::npos;
	     at = src.find(desc, at + 1)) {
		const size_t close = src.find(')', at);
		const size_t q = src.find('"', at);
		if (q > close)
			continue;
		names.push_back(src.substr(q + 1, src.find('"', q + 1) - q - 1));
	}
	names.push_back("no_device");
	ASSERT_EQ(names.size(), sroce::inject::kReasons);
	for (size_t r = 0; r < names.size(); r++)
		EXPECT_EQ(names[r], sroce::inject::reason_name(Reason(r)));
}

} // namespace
