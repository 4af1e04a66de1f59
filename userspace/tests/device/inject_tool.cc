// sroce_inject: send a deterministic stream of malformed and adversarial
// RoCE v2 datagrams at an sroce device with live traffic and print how
// many of each drop reason the device must count, for selftests/pair.sh
// (t_injection_under_traffic).  See kUsage and inject_gen.h.
#include <sys/socket.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "inject_gen.h"
#include "roce_packet.h"

namespace {

using namespace sroce;
using inject::Reason;

const char kUsage[] =
	"usage: sroce_inject [-n COUNT] [-s SEED] [--rc QPN:SQPSN:RQPSN]\n"
	"                    [--rc-idle QPN:SQPSN:RQPSN] [--uc QPN:SQPSN:RQPSN]\n"
	"                    [--ud QPN:QKEY] [--pmtu BYTES]\n"
	"                    [--alt ADDR] [--spoof4 ADDR] [--spoof6 ADDR] "
	"[--bcast ADDR]\n"
	"                    OWN4 OWN6 DST4 DST6\n"
	"\n"
	"Sends COUNT (default $SROCE_INJECT_COUNT, else 100000) malformed and\n"
	"adversarial RoCE v2 datagrams, drawn from a generator seeded with\n"
	"SEED (default 1), through raw IP sockets to the target's addresses\n"
	"DST4 and DST6, from this host's OWN4 and OWN6 or spoofed ones, then\n"
	"prints what the target's sroce device must have counted:\n"
	"  expect REASON N    for every drop reason (the port's hw counter\n"
	"                     rx_drop_REASON; no_device: debugfs's rx_drops)\n"
	"  kind KIND N        how many datagrams of each class were sent\n"
	"  sent N datagrams in S s\n"
	"\n"
	"The target's live QPs talk to QPs of this host over DST4 and OWN4;\n"
	"name them with --rc and --uc (QP number, the first PSN the QP sent,\n"
	"the first PSN it expected: what this host's peer QP printed as the\n"
	"remote PSN and as its own) and --ud (QP number, Q_Key), and give\n"
	"the RC and UC QPs' path MTU (--pmtu, default 1024).  --rc-idle is an\n"
	"RC QP connected like --rc with no traffic at all: if given, the\n"
	"responses and requests for PSNs far outside the windows (stale) go\n"
	"there instead, apart from the stale ACKs live RC traffic can cause\n"
	"itself.  The datagrams\n"
	"aimed at them are ones the receive path drops before the QP acts on\n"
	"them, so the live traffic must go on undisturbed, as long as its UC\n"
	"messages are one packet each and it advances its PSNs by less than\n"
	"2^21 meanwhile (see userspace/tests/device/inject_gen.h).  --alt is\n"
	"another IPv4 address of the target (then bad_dst_addr is counted\n"
	"too).  The spoofed sources default to DST4 and DST6 with their last\n"
	"byte 77, the broadcast address to DST4's /24 broadcast; the target\n"
	"must accept the spoofed sources (no reverse-path filter against\n"
	"them).  Numbers may be decimal or 0x hexadecimal.  Needs root.\n";

[[noreturn]] void usage(const std::string &msg)
{
	const std::string u = kUsage;

	std::fprintf(stderr, "sroce_inject: %s\n%s(see --help)\n", msg.c_str(),
		     u.substr(0, u.find("\n\n") + 1).c_str());
	std::exit(2);
}

uint32_t number(const std::string &what, const std::string &text,
		uint64_t max)
{
	char *end = nullptr;

	errno = 0;
	const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
	if (text.empty() || text[0] == '-' || *end || errno || v > max)
		usage(what + " '" + text + "': not a number up to " +
		      std::to_string(max));
	return uint32_t(v);
}

roce::Addr address(const std::string &what, const std::string &text,
		   int family)
{
	const std::optional<roce::Addr> a = roce::parse_addr(text);

	if (!a || a->family != family)
		usage(what + " '" + text + "': not an IPv" +
		      (family == AF_INET ? "4" : "6") + " address");
	return *a;
}

// "A:B[:C]" split at the colons, each part a number.
std::vector<uint32_t> numbers(const std::string &what, const std::string &v,
			      size_t n)
{
	std::vector<uint32_t> out;
	size_t at = 0;

	for (;;) {
		const size_t colon = v.find(':', at);
		out.push_back(number(what, v.substr(at, colon - at),
				     0xffffffff));
		if (colon == std::string::npos)
			break;
		at = colon + 1;
	}
	if (out.size() != n)
		usage(what + " '" + v + "': " + std::to_string(n) +
		      " numbers separated by ':' expected");
	return out;
}

inject::LiveQp connected(const std::string &what, const std::string &v)
{
	const std::vector<uint32_t> n = numbers(what, v, 3);

	if (n[0] > 0xffffff || n[1] > 0xffffff || n[2] > 0xffffff)
		usage(what + " '" + v + "': QP numbers and PSNs are 24 bits");
	return inject::LiveQp{n[0], n[1], n[2], 0};
}

struct Options {
	uint32_t count = 100000;
	uint32_t seed = 1;
	inject::Target target;
	bool spoof4 = false, spoof6 = false, bcast = false;
};

void parse(int argc, char **argv, Options &o)
{
	std::vector<std::string> pos;

	if (const char *env = std::getenv("SROCE_INJECT_COUNT"); env && *env)
		o.count = number("SROCE_INJECT_COUNT", env, 1u << 30);
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];

		if (a == "-h" || a == "--help") {
			std::fputs(kUsage, stdout);
			std::exit(0);
		}
		if (a.empty() || a[0] != '-') {
			pos.push_back(a);
			continue;
		}
		if (i + 1 >= argc)
			usage(a + " needs a value");
		const std::string v = argv[++i];
		if (a == "-n") {
			o.count = number("-n", v, 1u << 30);
		} else if (a == "-s") {
			o.seed = number("-s", v, 0xffffffff);
		} else if (a == "--rc") {
			o.target.rc = connected(a, v);
		} else if (a == "--rc-idle") {
			o.target.rc_idle = connected(a, v);
		} else if (a == "--uc") {
			o.target.uc = connected(a, v);
		} else if (a == "--ud") {
			const std::vector<uint32_t> n = numbers(a, v, 2);
			if (n[0] > 0xffffff)
				usage("--ud '" + v + "': QP numbers are 24 bits");
			o.target.ud = inject::LiveQp{n[0], 0, 0, n[1]};
		} else if (a == "--pmtu") {
			o.target.pmtu = number(a, v, 4096);
			if (o.target.pmtu != 256 && o.target.pmtu != 512 &&
			    o.target.pmtu != 1024)
				usage("--pmtu " + v + ": 256, 512 or 1024 "
				      "(larger packets do not fit the wire)");
		} else if (a == "--alt") {
			o.target.alt4 = address(a, v, AF_INET);
		} else if (a == "--spoof4") {
			o.target.spoof4 = address(a, v, AF_INET);
			o.spoof4 = true;
		} else if (a == "--spoof6") {
			o.target.spoof6 = address(a, v, AF_INET6);
			o.spoof6 = true;
		} else if (a == "--bcast") {
			o.target.bcast4 = address(a, v, AF_INET);
			o.bcast = true;
		} else {
			usage("unknown option " + a);
		}
	}
	if (pos.size() != 4)
		usage("OWN4 OWN6 DST4 DST6 expected");
	inject::Target &t = o.target;
	t.own4 = address("OWN4", pos[0], AF_INET);
	t.own6 = address("OWN6", pos[1], AF_INET6);
	t.dst4 = address("DST4", pos[2], AF_INET);
	t.dst6 = address("DST6", pos[3], AF_INET6);
	if (!o.spoof4) {
		t.spoof4 = t.dst4;
		t.spoof4.raw[3] = 77;
	}
	if (!o.spoof6) {
		t.spoof6 = t.dst6;
		t.spoof6.raw[15] = 77;
	}
	if (!o.bcast) {
		t.bcast4 = t.dst4;
		t.bcast4.raw[3] = 255;
	}
}

} // namespace

int main(int argc, char **argv)
{
	Options o;

	parse(argc, argv, o);
	roce::RawSocket sock4(AF_INET), sock6(AF_INET6);
	// A flood that fills this host's netdev queue would have the live
	// traffic's own packets dropped there (a UD or UC pingpong then waits
	// forever): keep few of ours in it.
	for (roce::RawSocket *s : {&sock4, &sock6}) {
		const std::string err = s->limit_queue(16384);
		if (!err.empty()) {
			std::fprintf(stderr, "sroce_inject: %s\n", err.c_str());
			return 1;
		}
	}

	inject::Generator gen(o.target, o.seed);
	uint64_t expect[inject::kReasons] = {};
	std::map<std::string, uint64_t> kinds;
	const auto t0 = std::chrono::steady_clock::now();

	for (uint32_t i = 0; i < o.count; i++) {
		const inject::Datagram d = gen.next();
		roce::RawSocket &s = d.dst.family == AF_INET ? sock4 : sock6;
		const std::string err = s.send(d.ip, d.dst);

		if (!err.empty()) {
			std::fprintf(stderr,
				     "sroce_inject: datagram %u (%s, %zu "
				     "bytes): %s\n",
				     i, d.kind, d.ip.size(), err.c_str());
			return 1;
		}
		expect[size_t(d.reason)]++;
		kinds[d.kind]++;
	}
	const std::chrono::duration<double> took =
		std::chrono::steady_clock::now() - t0;

	for (size_t r = 0; r < inject::kReasons; r++)
		std::printf("expect %s %llu\n", inject::reason_name(Reason(r)),
			    static_cast<unsigned long long>(expect[r]));
	for (const auto &[k, n] : kinds)
		std::printf("kind %s %llu\n", k.c_str(),
			    static_cast<unsigned long long>(n));
	std::printf("sent %u datagrams in %.1f s\n", o.count, took.count());
	return 0;
}
