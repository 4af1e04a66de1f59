// sroce_live: RC, UC or UD ping-pong traffic that runs until it is told to
// stop and checks every byte of every message, for selftests/pair.sh
// (t_injection_under_traffic).  ibv_*_pingpong run a fixed number of
// iterations, and how long those take varies too much between runs for
// them to surely outlast an injection of known size without wasting
// minutes; their -c checks only one byte a page, of the last message.
//
//   sroce_live server rc|uc|ud PORT [--size N]
//	Listen on TCP PORT (IPv4), exchange QP number, PSN and GID with the
//	client, take a QP of the type to RTS, post a receive, say "ready",
//	then answer each message with one of the same size until the
//	client's last.
//   sroce_live client rc|uc|ud HOST PORT --until FILE [--size N]
//	Connect to the server, take a QP to RTS and send messages, each
//	after the answer to the one before, until FILE exists; then one
//	more, marked as the last.
//
// Every message carries its number and whether it is the last, and all its
// bytes follow from those and its direction; each side checks each message
// it receives (length, number, every byte) and fails at the first
// difference.  Both print the ibv_*_pingpong "local address:" and
// "remote address:" lines (QPN and PSN, as the injection reads them), then
// "sroce_live SIDE TYPE: messages=N bytes=B" at the end, and exit 0 only if
// every message arrived whole and in order: 1 with a message on stderr
// otherwise, 2 for a usage error.  A UD QP has the Q_Key of
// ibv_ud_pingpong (0x11111111).  The device is $SROCE_RDMA_DEV, the GID
// that of $SROCE_IP4.  Every wait is bounded (SROCE_TEST_SLOW scales it):
// a message not answered within 30 s fails the run.
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "peer_exchange.h"
#include "test_env.h"
#include "verbs_util.h"

namespace {

using namespace sroce::test;
using namespace sroce::test::peer;

constexpr uint32_t kUdQkey = 0x11111111;	// ibv_ud_pingpong's
constexpr size_t kGrh = 40;			// before a UD receive's data
constexpr uint32_t kMagic = 0x5372c1fe;
constexpr size_t kHeader = 16;			// magic, last, number

[[noreturn]] void usage()
{
	std::cerr << "usage: sroce_live server rc|uc|ud PORT [--size N]\n"
		     "       sroce_live client rc|uc|ud HOST PORT --until FILE "
		     "[--size N]\n";
	std::exit(2);
}

struct Options {
	ibv_qp_type type = IBV_QPT_RC;
	std::string name, host, port, until;
	size_t size = 4096;
};

// The byte at offset i of message n in direction dir (0: to the server).
uint8_t pattern(uint64_t n, size_t i, int dir)
{
	return uint8_t(n * 131 + i * 7 + size_t(dir) * 89 + (i >> 8));
}

void fill(uint8_t *p, size_t size, uint64_t n, bool last, int dir)
{
	const uint32_t magic = kMagic, flag = last;

	std::memcpy(p, &magic, 4);
	std::memcpy(p + 4, &flag, 4);
	std::memcpy(p + 8, &n, 8);
	for (size_t i = kHeader; i < size; i++)
		p[i] = pattern(n, i, dir);
}

// Checks message n in direction dir at p; returns whether it is the last.
bool check_message(const uint8_t *p, size_t size, uint64_t n, int dir)
{
	uint32_t magic, flag;
	uint64_t got;

	std::memcpy(&magic, p, 4);
	std::memcpy(&flag, p + 4, 4);
	std::memcpy(&got, p + 8, 8);
	if (magic != kMagic || flag > 1)
		die("message " + std::to_string(n) + ": bad header");
	if (got != n)
		die("message " + std::to_string(got) + " where " +
		    std::to_string(n) + " was due");
	for (size_t i = kHeader; i < size; i++)
		if (p[i] != pattern(n, i, dir))
			die("message " + std::to_string(n) + ": byte " +
			    std::to_string(i) + " differs");
	return flag;
}

// One side's verbs objects, the QP before its CQ and MR.  The buffer holds
// the message to send, then the one to receive (after room for a GRH).
struct Side {
	const Options &o;
	Context ctx;
	Pd pd;
	Channel ch;
	Cq cq;
	Buffer buf;
	Mr mr;
	Qp qp;
	Ah ah;
	int sgid = -1;
	Wire own, peer;
	unsigned events = 0;

	explicit Side(const Options &opt) : o(opt), buf(2 * opt.size + kGrh)
	{
		sgid = open_device_at_ip4(ctx, own.gid);
		pd.reset(ibv_alloc_pd(ctx.get()));
		ch.reset(ibv_create_comp_channel(ctx.get()));
		if (!pd || !ch || !buf.data())
			die("PD, channel or buffer: " + err_str(errno));
		cq.reset(ibv_create_cq(ctx.get(), 4, nullptr, ch.get(), 0));
		mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(),
				    IBV_ACCESS_LOCAL_WRITE));
		if (!cq || !mr)
			die("CQ or MR: " + err_str(errno));
		ibv_qp_init_attr a{};
		a.send_cq = a.recv_cq = cq.get();
		a.qp_type = o.type;
		a.cap.max_send_wr = a.cap.max_recv_wr = 2;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		qp.reset(ibv_create_qp(pd.get(), &a));
		if (!qp)
			die("ibv_create_qp: " + err_str(errno));
		own.qpn = qp->qp_num;
		own.psn = std::random_device{}() & 0xffffff;
	}

	~Side()
	{
		if (cq)
			ibv_ack_cq_events(cq.get(), events);
	}

	uint8_t *send_buf() { return buf.data(); }
	uint8_t *recv_data() { return send_buf() + o.size + recv_skip(); }
	size_t recv_skip() const { return o.type == IBV_QPT_UD ? kGrh : 0; }

	void connect_to(const Wire &p)
	{
		peer = p;
		if (o.type != IBV_QPT_UD) {
			Link l;
			l.access = 0;
			l.sq_psn = own.psn;
			l.rq_psn = peer.psn;
			check(connect(qp.get(), peer.qpn, peer.gid, sgid, l));
			return;
		}
		check(ud_to_rts(qp.get(), kUdQkey, own.psn));
		ibv_ah_attr aa = ah_attr(peer.gid, sgid);
		ah.reset(ibv_create_ah(pd.get(), &aa));
		if (!ah)
			die("ibv_create_ah: " + err_str(errno));
	}

	// The two lines ibv_*_pingpong print, which the injection reads.
	void print_addresses() const
	{
		std::printf("  local address:  LID 0x0000, QPN 0x%06x, PSN "
			    "0x%06x, GID %s\n",
			    own.qpn, own.psn, gid_text(own.gid).c_str());
		std::printf("  remote address: LID 0x0000, QPN 0x%06x, PSN "
			    "0x%06x, GID %s\n",
			    peer.qpn, peer.psn, gid_text(peer.gid).c_str());
		std::fflush(stdout);
	}

	static std::string gid_text(const ibv_gid &g)
	{
		char s[40];

		std::snprintf(s, sizeof(s),
			      "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
			      "%02x%02x:%02x%02x:%02x%02x",
			      g.raw[0], g.raw[1], g.raw[2], g.raw[3], g.raw[4],
			      g.raw[5], g.raw[6], g.raw[7], g.raw[8], g.raw[9],
			      g.raw[10], g.raw[11], g.raw[12], g.raw[13],
			      g.raw[14], g.raw[15]);
		return s;
	}

	void post_recv()
	{
		ibv_sge sge{buf.addr(o.size), uint32_t(o.size + recv_skip()),
			    mr->lkey};
		ibv_recv_wr wr{}, *bad = nullptr;

		wr.wr_id = 2;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		const int r = ibv_post_recv(qp.get(), &wr, &bad);
		if (r)
			die("ibv_post_recv: " + err_str(r));
	}

	void post_send()
	{
		ibv_sge sge{buf.addr(), uint32_t(o.size), mr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;

		wr.wr_id = 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (o.type == IBV_QPT_UD) {
			wr.wr.ud.ah = ah.get();
			wr.wr.ud.remote_qpn = peer.qpn;
			wr.wr.ud.remote_qkey = kUdQkey;
		}
		const int r = ibv_post_send(qp.get(), &wr, &bad);
		if (r)
			die("ibv_post_send: " + err_str(r));
	}

	// The next completion, waiting on the channel (the guest's CPUs are
	// the device's), at most kWait.
	ibv_wc next()
	{
		const auto deadline = Clock::now() + kWait;
		ibv_wc wc;

		for (;;) {
			int n = ibv_poll_cq(cq.get(), 1, &wc);
			if (n == 0) {
				if (ibv_req_notify_cq(cq.get(), 0))
					die("ibv_req_notify_cq failed");
				n = ibv_poll_cq(cq.get(), 1, &wc);
			}
			if (n < 0)
				die("ibv_poll_cq: " + err_str(n));
			if (n == 1) {
				if (wc.status != IBV_WC_SUCCESS)
					die("completion " + wc_str(wc));
				return wc;
			}
			const auto left = deadline - Clock::now();
			if (left <= Clock::duration::zero() ||
			    !readable(ch->fd, left))
				die("no completion within the time limit");
			ibv_cq *c;
			void *cx;
			if (ibv_get_cq_event(ch.get(), &c, &cx))
				die("ibv_get_cq_event failed");
			events++;
		}
	}

	// Waits for the receive's completion and, unless sent says it came
	// already, the send's; checks the received message n (direction dir)
	// and returns whether it was the last.
	bool exchange(uint64_t n, int dir, bool sent = false)
	{
		bool got = false;
		ibv_wc r{};

		while (!sent || !got) {
			const ibv_wc wc = next();
			if (wc.wr_id == 1 && !sent) {
				sent = true;
			} else if (wc.wr_id == 2 && !got) {
				got = true;
				r = wc;
			} else {
				die("an unexpected completion " + wc_str(wc));
			}
		}
		if (r.byte_len != o.size + recv_skip())
			die("message " + std::to_string(n) + " has " +
			    std::to_string(r.byte_len) + " bytes");
		return check_message(recv_data(), o.size, n, dir);
	}
};

Wire swap(Side &s, int fd)
{
	send_line(fd, s.own.text());
	return Wire::parse(recv_line(fd, kWait, "QP"));
}

void report(const char *side, const Options &o, uint64_t n)
{
	std::cout << "sroce_live " << side << ' ' << o.name
		  << ": messages=" << n << " bytes=" << n * o.size
		  << std::endl;
}

int run_server(const Options &o)
{
	Side s(o);
	const Fd conn = accept_one(o.port);

	s.connect_to(swap(s, conn.get()));
	s.print_addresses();
	s.post_recv();
	send_line(conn.get(), "ready");
	// message n in, answer n out; the answer's receive is the next one
	bool last = s.exchange(0, 0, true);	// nothing sent before it
	uint64_t n = 0;
	for (;;) {
		s.post_recv();
		fill(s.send_buf(), o.size, n, last, 1);
		s.post_send();
		if (last)
			break;
		n++;
		// the answer's send completion, then the next message
		last = s.exchange(n, 0);
	}
	// the last answer's send completion
	const ibv_wc wc = s.next();
	if (wc.wr_id != 1)
		die("an unexpected completion " + wc_str(wc));
	report("server", o, n + 1);
	return 0;
}

int run_client(const Options &o)
{
	Side s(o);
	const Fd conn = connect_to_server(o.host, o.port);

	s.connect_to(swap(s, conn.get()));
	s.print_addresses();
	if (recv_line(conn.get(), kWait, "\"ready\"") != "ready")
		die("the server did not say ready");
	uint64_t n = 0;
	for (bool last = false; !last; n++) {
		last = access(o.until.c_str(), F_OK) == 0;
		s.post_recv();
		fill(s.send_buf(), o.size, n, last, 0);
		s.post_send();
		if (s.exchange(n, 1) != last)
			die("the answer to message " + std::to_string(n) +
			    " has the wrong last mark");
	}
	report("client", o, n);
	return 0;
}

size_t size_arg(const char *s, ibv_qp_type t)
{
	char *end = nullptr;
	const unsigned long v = std::strtoul(s, &end, 10);
	// a UD message is one packet of the 1024-byte path MTU
	const unsigned long hi = t == IBV_QPT_UD ? 1024 : 1 << 20;

	if (!*s || *end || v < kHeader || v > hi) {
		std::cerr << "sroce_live: --size must be " << kHeader << " to "
			  << hi << "\n";
		usage();
	}
	return v;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	std::vector<std::string> pos;
	const char *size = nullptr;

	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--size" && i + 1 < argc)
			size = argv[++i];
		else if (a == "--until" && i + 1 < argc)
			o.until = argv[++i];
		else if (a == "-h" || a == "--help")
			usage();
		else
			pos.push_back(a);
	}
	if (pos.size() < 3)
		usage();
	o.name = pos[1];
	if (o.name == "rc")
		o.type = IBV_QPT_RC;
	else if (o.name == "uc")
		o.type = IBV_QPT_UC;
	else if (o.name == "ud")
		o.type = IBV_QPT_UD;
	else
		usage();
	if (size)
		o.size = size_arg(size, o.type);
	else if (o.type == IBV_QPT_UD)
		o.size = 512;
	if (pos.size() == 3 && pos[0] == "server" && o.until.empty()) {
		o.port = pos[2];
		return run_server(o);
	}
	if (pos.size() == 4 && pos[0] == "client" && !o.until.empty()) {
		o.host = pos[2];
		o.port = pos[3];
		return run_client(o);
	}
	usage();
}
