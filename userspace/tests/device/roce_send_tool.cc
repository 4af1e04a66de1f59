// sroce_roce_send: send hand-made RoCE v2 packets through raw IP sockets,
// for the guest tests (selftests/pair.sh).  See usage() and
// roce_packet.h for what the packets are.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "roce_packet.h"

namespace {

using namespace sroce::roce;

const char kUsage[] =
	"usage: sroce_roce_send [-n COUNT] [-q QPN[-LAST]] [-p PSN] "
	"[-t rc|uc|ud|xrc] [-f BYTE]\n"
	"                       [-o OPCODE] [-l LEN] [-P PAD] [-c CUT] "
	"[-k QKEY] [-x SRQN]\n"
	"                       KIND SRC DST [KIND SRC DST ...]\n"
	"\n"
	"Sends COUNT (default 10) RoCE v2 packets to QP number QPN (default\n"
	"0xabcdef) for each KIND SRC DST triple, and prints one line per\n"
	"triple.  QPN may be a range FIRST-LAST: the packets then go to each\n"
	"number in turn.  KIND is \"valid\" (a correct ICRC) or \"bad-icrc\" "
	"(the\n"
	"correct ICRC with one random bit flipped).  SRC and DST are both IPv4\n"
	"or both IPv6 addresses; SRC is written into the packet as is, and DST\n"
	"may be a broadcast address.  Needs root (raw sockets).\n"
	"\n"
	"The packets are SEND ONLY requests of transport -t (default rc; ud\n"
	"adds a DETH with Q_Key QKEY, default 0; xrc an XRCETH naming XRC SRQ\n"
	"SRQN, default 0) unless -o names another opcode: send-first,\n"
	"send-middle, send-last, send-only, write-first, write-middle,\n"
	"write-last, write-only (of transport -t), or a number (any BTH\n"
	"opcode).  The builder writes the XRCETH, RETH (RDMA WRITE FIRST and\n"
	"ONLY: VA 0, R_Key 0, DMA length LEN), DETH, ImmDt (0) and IETH (0)\n"
	"the opcode carries, no other extension header.  The PSN is PSN if\n"
	"given, else random; the LEN (default 16) payload bytes are BYTE if\n"
	"given, else random, followed by the zero bytes that pad them to whole\n"
	"words, which the BTH's PadCnt counts.  Malformed packets:\n"
	"  -P PAD   write PAD (0-3) into PadCnt instead, whatever the length\n"
	"  -c CUT   keep only CUT bytes after the BTH (extension headers,\n"
	"           payload, pad), cutting the rest off before the ICRC\n"
	"The ICRC always covers the packet as sent (bad-icrc excepted).\n"
	"\n"
	"The IP, UDP and BTH fields the ICRC does not cover (IPv4 TOS and TTL,\n"
	"IPv6 traffic class, flow label and hop limit, BTH byte 4) are random;\n"
	"the UDP checksum is 0, as RoCE v2 sends it.  Numbers may be decimal,\n"
	"0x hexadecimal or 0 octal.\n";

[[noreturn]] void usage(const std::string &msg)
{
	const std::string u = kUsage;

	// the synopsis, up to the first empty line
	std::fprintf(stderr, "sroce_roce_send: %s\n%s(see --help)\n",
		     msg.c_str(), u.substr(0, u.find("\n\n") + 1).c_str());
	std::exit(2);
}

// A whole number no larger than max, or a usage error naming what.
uint64_t number(const char *what, const std::string &text, uint64_t max)
{
	char *end = nullptr;

	errno = 0;
	const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
	if (text.empty() || text[0] == '-' || *end || errno || v > max)
		usage(std::string(what) + " '" + text + "': not a number up to " +
		      std::to_string(max));
	return v;
}

struct Options {
	unsigned long count = 10;
	uint32_t first = 0xabcdef, last = 0xabcdef;
	std::optional<uint32_t> psn;
	Transport transport = Transport::RC;
	std::string opcode;		// "" for SEND ONLY
	Spec spec;
};

void qpn_range(Options &o, const std::string &arg)
{
	const size_t dash = arg.find('-');

	o.first = uint32_t(number("-q", arg.substr(0, dash), 0xffffff));
	o.last = dash == std::string::npos ?
			 o.first :
			 uint32_t(number("-q", arg.substr(dash + 1), 0xffffff));
	if (o.last < o.first)
		usage("empty QPN range " + arg);
}

// Options are only taken in front of the KIND SRC DST triples.
size_t parse_options(int argc, char **argv, Options &o)
{
	int i = 1;

	if (argc > 1 && (!std::strcmp(argv[1], "-h") ||
			 !std::strcmp(argv[1], "--help"))) {
		std::fputs(kUsage, stdout);
		std::exit(0);
	}
	for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] &&
	       !argv[i][2];
	     i += 2) {
		const std::string v = argv[i + 1];

		switch (argv[i][1]) {
		case 'n':
			o.count = number("-n", v, 1u << 30);
			break;
		case 'q':
			qpn_range(o, v);
			break;
		case 'p':
			o.psn = uint32_t(number("-p", v, 0xffffffff) & 0xffffff);
			break;
		case 't':
			if (!transport_by_name(v))
				usage("-t " + v + ": not rc, uc, ud or xrc");
			o.transport = *transport_by_name(v);
			break;
		case 'f':
			o.spec.fill = uint8_t(number("-f", v, 0xff));
			break;
		case 'o':
			o.opcode = v;
			break;
		case 'l':
			o.spec.len = uint32_t(number("-l", v, 65000));
			break;
		case 'P':
			o.spec.pad = uint8_t(number("-P", v, 3));
			break;
		case 'c':
			o.spec.cut = uint32_t(number("-c", v, 65000));
			break;
		case 'k':
			o.spec.qkey = uint32_t(number("-k", v, 0xffffffff));
			break;
		case 'x':
			o.spec.xrc_srqn = uint32_t(number("-x", v, 0xffffff));
			break;
		default:
			usage(std::string("unknown option ") + argv[i]);
		}
	}
	if (o.opcode.empty()) {
		o.spec.opcode = *opcode_by_name(o.transport, "send-only");
	} else if (auto op = opcode_by_name(o.transport, o.opcode)) {
		o.spec.opcode = *op;
	} else if (o.opcode[0] >= '0' && o.opcode[0] <= '9') {
		o.spec.opcode = uint8_t(number("-o", o.opcode, 0xff));
	} else {
		usage("-o " + o.opcode + ": no such opcode of " +
		      transport_name(o.transport));
	}
	return size_t(i);
}

// Sends the packets of one triple; false (with a message) if one failed.
bool send_triple(const Options &o, const std::string &kind,
		 const std::string &src, const std::string &dst,
		 std::mt19937 &rng)
{
	const std::optional<Addr> s = parse_addr(src), d = parse_addr(dst);

	if (!s || !d)
		usage(src + " " + dst + ": not IP addresses");
	if (s->family != d->family)
		usage(src + " and " + dst + ": not the same IP version");
	RawSocket sock(s->family);
	if (!sock.error().empty()) {
		std::fprintf(stderr, "sroce_roce_send: %s\n",
			     sock.error().c_str());
		return false;
	}
	Spec spec = o.spec;
	spec.bad_icrc = kind == "bad-icrc";
	const uint32_t n = o.last - o.first + 1;
	for (unsigned long i = 0; i < o.count; i++) {
		spec.qpn = o.first + uint32_t(i % n);
		spec.psn = o.psn ? *o.psn :
				   std::uniform_int_distribution<uint32_t>(
					   0, 0xffffff)(rng);
		const std::string err = sock.send(build(*s, *d, spec, rng), *d);
		if (!err.empty()) {
			std::fprintf(stderr, "sroce_roce_send: %s -> %s: %s\n",
				     src.c_str(), dst.c_str(), err.c_str());
			return false;
		}
	}
	std::printf("sent %lu %s %s packets %s -> %s QPN 0x%x-0x%x opcode "
		    "0x%02x\n",
		    o.count, kind.c_str(), transport_name(o.transport),
		    src.c_str(), dst.c_str(), o.first, o.last, o.spec.opcode);
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	const size_t first = parse_options(argc, argv, o);
	const std::vector<std::string> args(argv + first, argv + argc);

	if (args.empty() || args.size() % 3)
		usage("arguments are KIND SRC DST triples");
	for (size_t i = 0; i < args.size(); i += 3)
		if (args[i] != "valid" && args[i] != "bad-icrc")
			usage("KIND " + args[i] + ": not valid or bad-icrc");

	std::random_device seed;
	std::mt19937 rng(seed());
	for (size_t i = 0; i < args.size(); i += 3)
		if (!send_triple(o, args[i], args[i + 1], args[i + 2], rng))
			return 1;
	return 0;
}
