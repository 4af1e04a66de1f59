// sroce_rc_retry: an RC requester that must run out of transport retries,
// for selftests/rc.sh (t_netem_retry_exhausted).  Not a GoogleTest binary:
// the loss is made by the shell (netem dropping every RoCE packet the
// server's guest sends, ACKs included), and the shell checks the timing and
// the port counters against what this tool prints.  ibv_rc_pingpong cannot
// set the QP's timeout and retry_cnt, hence this tool.
//
//   sroce_rc_retry server PORT
//	Listen on TCP PORT (IPv4), exchange QP number, PSN, GID, R_Key and
//	buffer address with the client, take an RC QP to RTS as the client's
//	responder, say "ready", then wait for the client's "done".  Then its
//	CQ must be empty (RDMA WRITEs complete nothing at the responder) and
//	its QP still in RTR or RTS.
//   sroce_rc_retry client HOST PORT --timeout T --retry R [--count N]
//	Connect to the server, take an RC QP to RTS with the local ACK
//	timeout T (1 to 20: 4.096 us * 2^T) and retry_cnt R (0 to 7), post
//	N (1 to 32, default 3) signalled 64-byte RDMA WRITEs to the server's
//	buffer and poll until N completions: the first must be RETRY_EXC_ERR, the others
//	WR_FLUSH_ERR, in order, and the QP must then be in ERR.
//
// Each side prints one line, "sroce_rc_retry SIDE: key=value ...", the
// client's with wc= (the completion statuses in order) and elapsed_ms= (from
// the post to the RETRY_EXC_ERR completion), and exits 0 only if everything
// above held: 1 with a message on stderr otherwise, 2 for a usage error.
// The device is $SROCE_RDMA_DEV, the GID that of $SROCE_IP4.  Every wait is
// bounded (SROCE_TEST_SLOW scales the limits).
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "peer_exchange.h"
#include "test_env.h"
#include "verbs_util.h"

namespace {

using namespace sroce::test;
using namespace sroce::test::peer;
using std::chrono::milliseconds;

constexpr size_t kMsg = 64;
constexpr int kMaxCount = 32;

[[noreturn]] void usage()
{
	std::cerr << "usage: sroce_rc_retry server PORT\n"
		     "       sroce_rc_retry client HOST PORT --timeout T "
		     "--retry R [--count N]\n";
	std::exit(2);
}

// The verbs objects of one side; the QP goes before its CQ and MR.
struct Side {
	Context ctx;
	Pd pd;
	Cq cq;
	Buffer buf{kMsg * kMaxCount};
	Mr mr;
	Qp qp;
	int sgid = -1;
	Wire own;

	Side()
	{
		sgid = open_device_at_ip4(ctx, own.gid);
		pd.reset(ibv_alloc_pd(ctx.get()));
		cq.reset(ibv_create_cq(ctx.get(), 2 * kMaxCount, nullptr,
				       nullptr, 0));
		if (!pd || !cq || !buf.data())
			die("PD, CQ or buffer: " + err_str(errno));
		mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(),
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE));
		if (!mr)
			die("ibv_reg_mr: " + err_str(errno));
		ibv_qp_init_attr a{};
		a.send_cq = a.recv_cq = cq.get();
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = a.cap.max_recv_wr = kMaxCount;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		qp.reset(ibv_create_qp(pd.get(), &a));
		if (!qp)
			die("ibv_create_qp: " + err_str(errno));
		own.qpn = qp->qp_num;
		own.psn = std::random_device{}() & 0xffffff;
		own.rkey = mr->rkey;
		own.addr = buf.addr();
	}

	// RESET to RTS towards peer, with timeout and retry_cnt in l.
	void connect_to(const Wire &peer, Link l)
	{
		l.access = IBV_ACCESS_REMOTE_WRITE;
		l.sq_psn = own.psn;
		l.rq_psn = peer.psn;
		check(connect(qp.get(), peer.qpn, peer.gid, sgid, l));
	}

	ibv_qp_state state() const
	{
		const ibv_qp_state st = query_state(qp.get());

		if (st == ibv_qp_state(-1))
			die("ibv_query_qp: " + err_str(errno));
		return st;
	}
};

std::string status_name(ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return "SUCCESS";
	case IBV_WC_RETRY_EXC_ERR: return "RETRY_EXC_ERR";
	case IBV_WC_WR_FLUSH_ERR: return "WR_FLUSH_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR_RETRY_EXC_ERR";
	case IBV_WC_REM_ACCESS_ERR: return "REM_ACCESS_ERR";
	default: return "STATUS" + std::to_string(int(s));
	}
}

struct Options {
	std::string host, port;
	int timeout = -1, retry = -1, count = 3;
};

int number(const char *s, int lo, int hi, const char *what)
{
	char *end = nullptr;
	const long v = std::strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi) {
		std::cerr << "sroce_rc_retry: " << what << " must be " << lo
			  << " to " << hi << "\n";
		usage();
	}
	return int(v);
}

// How long the client waits for its completions: the retries (at most 4
// times the timeout each, sroce's largest back-off) and a generous margin.
Clock::duration run_limit(const Options &o)
{
	const auto t = std::chrono::nanoseconds(4096LL << std::max(o.timeout, 0));

	return slow(std::chrono::seconds{60}) + 4 * t * (o.retry + 1);
}

int run_server(const Options &o)
{
	Side s;
	const Fd conn = accept_one(o.port);

	send_line(conn.get(), s.own.text());
	const Wire peer = Wire::parse(
		recv_line(conn.get(), slow(std::chrono::seconds{30}), "QP"));
	s.connect_to(peer, Link{});
	send_line(conn.get(), "ready");
	// longer than the client's own limit (run_limit) for every --timeout
	// it accepts (up to 20, 4.3 s) at retry_cnt 7
	const std::string done = recv_line(
		conn.get(), slow(std::chrono::seconds{240}), "\"done\"");
	if (done.rfind("done", 0) != 0)
		die("the client said \"" + done + "\", not done");

	// Nothing may complete here: no receive is posted, and RDMA WRITEs
	// without immediate data consume none.
	ibv_wc wc[kMaxCount];
	const int n = ibv_poll_cq(s.cq.get(), kMaxCount, wc);
	const ibv_qp_state st = s.state();
	std::cout << "sroce_rc_retry server: qpn=" << s.own.qpn
		  << " completions=" << n << " qp_state=" << state_name(st)
		  << std::endl;
	if (n != 0)
		die("the responder has completions, the first " +
		    wc_str(wc[0]));
	if (st != IBV_QPS_RTR && st != IBV_QPS_RTS)
		die(std::string("the responder's QP is in ") + state_name(st));
	return 0;
}

int run_client(const Options &o)
{
	Side s;
	const Fd conn = connect_to_server(o.host, o.port);

	send_line(conn.get(), s.own.text());
	const Wire peer = Wire::parse(
		recv_line(conn.get(), slow(std::chrono::seconds{30}), "QP"));
	Link l;
	l.timeout = uint8_t(o.timeout);
	l.retry_cnt = uint8_t(o.retry);
	s.connect_to(peer, l);
	// the server's QP must be past RTR before anything reaches it
	if (recv_line(conn.get(), slow(std::chrono::seconds{30}), "\"ready\"") !=
	    "ready")
		die("the server did not say ready");

	std::vector<ibv_sge> sge(size_t(o.count));
	std::vector<ibv_send_wr> wr(size_t(o.count));
	for (int i = 0; i < o.count; i++) {
		sge[i] = {s.buf.addr(kMsg * i), uint32_t(kMsg), s.mr->lkey};
		wr[i].wr_id = uint64_t(i + 1);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = peer.addr + kMsg * i;
		wr[i].wr.rdma.rkey = peer.rkey;
		wr[i].next = i + 1 < o.count ? &wr[i + 1] : nullptr;
	}
	ibv_send_wr *bad = nullptr;
	const auto t0 = Clock::now();
	const int r = ibv_post_send(s.qp.get(), wr.data(), &bad);
	if (r)
		die("ibv_post_send: " + err_str(r));

	// Poll with a short nap (a software device needs the CPU); the time
	// of the first completion is taken as soon as it is seen.
	std::vector<ibv_wc> got;
	auto t_first = t0;
	const auto deadline = t0 + run_limit(o);
	while (got.size() < size_t(o.count) && Clock::now() < deadline) {
		ibv_wc wc;
		const int k = ibv_poll_cq(s.cq.get(), 1, &wc);
		if (k < 0)
			die("ibv_poll_cq: " + err_str(k));
		if (k == 0) {
			std::this_thread::sleep_for(kNap);
			continue;
		}
		if (got.empty())
			t_first = Clock::now();
		got.push_back(wc);
	}
	ibv_wc extra;
	const int more = ibv_poll_cq(s.cq.get(), 1, &extra);
	const ibv_qp_state st = s.state();
	const auto ms =
		std::chrono::duration_cast<milliseconds>(t_first - t0).count();

	std::ostringstream line, why;
	line << "sroce_rc_retry client: timeout=" << o.timeout
	     << " retry=" << o.retry << " count=" << o.count << " wc=";
	for (size_t i = 0; i < got.size(); i++) {
		line << (i ? "," : "") << status_name(got[i].status);
		const ibv_wc_status want =
			i ? IBV_WC_WR_FLUSH_ERR : IBV_WC_RETRY_EXC_ERR;
		if (got[i].status != want || got[i].wr_id != i + 1)
			why << " completion " << i << " is " << wc_str(got[i])
			    << ", want wr_id " << i + 1 << " "
			    << status_name(want) << ";";
	}
	line << " completions=" << got.size() << " elapsed_ms="
	     << (got.empty() ? -1 : ms) << " qp_state=" << state_name(st);
	std::cout << line.str() << std::endl;
	send_line(conn.get(), "done " + line.str());

	if (got.size() != size_t(o.count))
		why << " " << got.size() << " of " << o.count
		    << " completions in time;";
	if (more)
		why << " an extra completion " << wc_str(extra) << ";";
	if (st != IBV_QPS_ERR)
		why << " the QP is in " << state_name(st) << ", not ERR;";
	if (!why.str().empty())
		die("unexpected:" + why.str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	std::vector<std::string> pos;
	bool options = false;

	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if ((a == "--timeout" || a == "--retry" || a == "--count") &&
		    i + 1 < argc) {
			const char *v = argv[++i];
			options = true;
			if (a == "--timeout")
				o.timeout = number(v, 1, 20, "--timeout");
			else if (a == "--retry")
				o.retry = number(v, 0, 7, "--retry");
			else
				o.count = number(v, 1, kMaxCount, "--count");
		} else if (a == "-h" || a == "--help") {
			usage();
		} else {
			pos.push_back(a);
		}
	}
	if (pos.size() == 2 && pos[0] == "server" && !options) {
		o.port = pos[1];
		return run_server(o);
	}
	if (pos.size() == 3 && pos[0] == "client") {
		if (o.timeout < 0 || o.retry < 0)
			usage();
		o.host = pos[1];
		o.port = pos[2];
		return run_client(o);
	}
	usage();
}
