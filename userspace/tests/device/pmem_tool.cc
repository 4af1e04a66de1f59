// sroce_pmem: the IBTA 1.5 memory placement extensions between two guests,
// whatever RoCE driver each runs (selftests/interop.sh, rc.sh:
// t_atomic_write).  Not a GoogleTest binary, since its two halves run in
// different guests; the verbs cases on one device are RcPmem.* in
// verbs_device_tests.
//
//   sroce_pmem server PORT
//	Listen on TCP PORT (IPv4), exchange QP number, PSN, GID, R_Key,
//	buffer address and ATOMIC WRITE support with the client, take an RC
//	QP (remote write access) to RTS as the client's responder, say
//	"ready", then wait for the client's "done" with the words it wrote:
//	they must be in the buffer at their places, every other byte as it
//	was, the QP in ERR (the client's last request was refused).
//   sroce_pmem client HOST PORT
//	Connect, take an RC QP with the extended send API to RTS, post
//	kWords ATOMIC WRITEs (ibv_wr_atomic_write) of random words to the
//	server's buffer, every one completing with IBV_WC_ATOMIC_WRITE in
//	order, then one to a misaligned address, which the responder must
//	refuse: IBV_WC_REM_INV_REQ_ERR, and the QP in ERR.
//
// Each side prints one line, "sroce_pmem SIDE: ok ..." and exits 0 if all
// of it held, 1 with a message on stderr otherwise, 2 for a usage error.
// If either device does not announce ATOMIC WRITE (rdma_rxe before Linux
// 6.2), both print "sroce_pmem SIDE: skip REASON" and exit 3.  The device
// is $SROCE_RDMA_DEV, the GID that of $SROCE_IP4; SROCE_TEST_SLOW scales
// every wait.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
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

constexpr size_t kBuf = 4096;
constexpr int kWords = 4;
// Where the client writes: word i at kOffsets[i] of the server's buffer,
// the last one at its end.
constexpr size_t kOffsets[kWords] = {0, 8, 2048, kBuf - 8};
constexpr size_t kMisaligned = 1028;
// IB_UVERBS_DEVICE_ATOMIC_WRITE (Linux 6.2); libibverbs 44 has no name.
constexpr uint64_t kDevAtomicWrite = 1ull << 40;
constexpr uint8_t kFill = 0xa5;

[[noreturn]] void usage()
{
	std::cerr << "usage: sroce_pmem server PORT\n"
		     "       sroce_pmem client HOST PORT\n";
	std::exit(2);
}

// The verbs objects of one side; the QP goes before its CQ and MR.
struct Side {
	Context ctx;
	Pd pd;
	Cq cq;
	Buffer buf{kBuf, kFill};
	Mr mr;
	Qp qp;
	int sgid = -1;
	Wire own;
	bool atomic_write = false;

	explicit Side(bool client)
	{
		sgid = open_device_at_ip4(ctx, own.gid);
		ibv_device_attr_ex ex{};
		if (ibv_query_device_ex(ctx.get(), nullptr, &ex))
			die("ibv_query_device_ex: " + err_str(errno));
		atomic_write = ex.device_cap_flags_ex & kDevAtomicWrite;
		pd.reset(ibv_alloc_pd(ctx.get()));
		cq.reset(ibv_create_cq(ctx.get(), 4 * kWords, nullptr, nullptr,
				       0));
		if (!pd || !cq || !buf.data())
			die("PD, CQ or buffer: " + err_str(errno));
		mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(),
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE));
		if (!mr)
			die("ibv_reg_mr: " + err_str(errno));
		ibv_qp_init_attr_ex a{};
		a.send_cq = a.recv_cq = cq.get();
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = a.cap.max_recv_wr = 2 * kWords;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd.get();
		if (client && atomic_write) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
		}
		qp.reset(ibv_create_qp_ex(ctx.get(), &a));
		if (!qp)
			die("ibv_create_qp_ex: " + err_str(errno));
		own.qpn = qp->qp_num;
		own.psn = std::random_device{}() & 0xffffff;
		own.rkey = mr->rkey;
		own.addr = buf.addr();
	}

	void connect_to(const Wire &peer)
	{
		Link l;
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

// The exchange line: the QP, then whether the device has ATOMIC WRITE.
std::string hello(const Side &s)
{
	return s.own.text() + (s.atomic_write ? " aw" : " no-aw");
}

// The peer's QP, and whether it has ATOMIC WRITE.
Wire parse_hello(const std::string &line, bool *peer_aw)
{
	const size_t sp = line.rfind(' ');

	if (sp == std::string::npos)
		die("malformed exchange line from the peer: " + line);
	*peer_aw = line.substr(sp + 1) == "aw";
	return Wire::parse(line.substr(0, sp));
}

// Both sides skip alike: either device lacking ATOMIC WRITE.
bool skipping(const char *side, const Side &s, bool peer_aw)
{
	if (s.atomic_write && peer_aw)
		return false;
	std::cout << "sroce_pmem " << side << ": skip "
		  << (s.atomic_write ? "the peer's" : "this") << " device ("
		  << (s.atomic_write ? "peer" : test_device_name())
		  << ") does not announce ATOMIC WRITE" << std::endl;
	return true;
}

int run_server(const std::string &port)
{
	Side s(false);
	const Fd conn = accept_one(port);

	send_line(conn.get(), hello(s));
	bool peer_aw = false;
	const Wire peer = parse_hello(
		recv_line(conn.get(), slow(std::chrono::seconds{30}), "QP"),
		&peer_aw);
	if (skipping("server", s, peer_aw))
		return 3;
	s.connect_to(peer);
	send_line(conn.get(), "ready");
	const std::string done = recv_line(
		conn.get(), slow(std::chrono::seconds{60}), "\"done\"");
	std::istringstream in(done);
	std::string word;
	uint64_t v[kWords] = {};
	if (!(in >> word) || word != "done")
		die("the client said \"" + done + "\", not done");
	for (uint64_t &x : v)
		if (!(in >> x))
			die("the client's done line lacks its words: " + done);

	// the words where they were written, every other byte untouched
	std::vector<uint8_t> want(kBuf, kFill);
	for (int i = 0; i < kWords; i++)
		std::memcpy(want.data() + kOffsets[i], &v[i], 8);
	size_t bad = 0, first = kBuf;
	for (size_t i = 0; i < kBuf; i++)
		if (s.buf.data()[i] != want[i] && !bad++)
			first = i;
	const ibv_qp_state st = s.state();
	std::cout << "sroce_pmem server: " << (bad || st != IBV_QPS_ERR ?
					       "FAILED" : "ok")
		  << " words=" << kWords << " bad_bytes=" << bad
		  << " qp_state=" << state_name(st) << std::endl;
	if (bad)
		die(std::to_string(bad) + " bytes of the buffer differ, the "
		    "first at offset " + std::to_string(first));
	// the misaligned request was refused with a NAK, which ends the QP
	if (st != IBV_QPS_ERR)
		die(std::string("the responder's QP is in ") + state_name(st) +
		    ", not ERR, after refusing a misaligned ATOMIC WRITE");
	return 0;
}

int run_client(const std::string &host, const std::string &port)
{
	Side s(true);
	const Fd conn = connect_to_server(host, port);

	send_line(conn.get(), hello(s));
	bool peer_aw = false;
	const Wire peer = parse_hello(
		recv_line(conn.get(), slow(std::chrono::seconds{30}), "QP"),
		&peer_aw);
	if (skipping("client", s, peer_aw))
		return 3;
	s.connect_to(peer);
	if (recv_line(conn.get(), slow(std::chrono::seconds{30}),
		      "\"ready\"") != "ready")
		die("the server did not say ready");

	std::mt19937_64 rnd{std::random_device{}()};
	uint64_t v[kWords];
	ibv_qp_ex *x = ibv_qp_to_qp_ex(s.qp.get());
	if (!x)
		die("no ibv_qp_ex");
	ibv_wr_start(x);
	for (int i = 0; i < kWords; i++) {
		v[i] = rnd();
		x->wr_id = uint64_t(i + 1);
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, peer.rkey, peer.addr + kOffsets[i],
				    &v[i]);
	}
	int r = ibv_wr_complete(x);
	if (r)
		die("ibv_wr_complete: " + err_str(r));
	std::vector<ibv_wc> got = poll_n(s.cq.get(), kWords,
					 slow(std::chrono::seconds{30}));
	std::ostringstream why;
	for (size_t i = 0; i < got.size(); i++)
		if (got[i].wr_id != i + 1 || got[i].status != IBV_WC_SUCCESS ||
		    got[i].opcode != IBV_WC_ATOMIC_WRITE)
			why << " completion " << i << " is " << wc_str(got[i])
			    << ", want wr_id " << i + 1
			    << " ATOMIC_WRITE SUCCESS;";
	if (got.size() != size_t(kWords))
		why << " " << got.size() << " of " << kWords
		    << " completions in time;";

	// a misaligned word: an invalid request
	const uint64_t junk = rnd();
	ibv_wr_start(x);
	x->wr_id = 99;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, peer.rkey, peer.addr + kMisaligned, &junk);
	r = ibv_wr_complete(x);
	if (r)
		die("ibv_wr_complete (misaligned): " + err_str(r));
	got = poll_n(s.cq.get(), 1, slow(std::chrono::seconds{30}));
	if (got.size() != 1 || got[0].wr_id != 99 ||
	    got[0].status != IBV_WC_REM_INV_REQ_ERR)
		why << " the misaligned ATOMIC WRITE completed with "
		    << (got.empty() ? std::string("nothing") : wc_str(got[0]))
		    << ", want wr_id 99 REM_INV_REQ_ERR;";
	const ibv_qp_state st = s.state();
	if (st != IBV_QPS_ERR)
		why << " the QP is in " << state_name(st) << ", not ERR;";

	std::ostringstream done;
	done << "done";
	for (uint64_t w : v)
		done << ' ' << w;
	send_line(conn.get(), done.str());
	std::cout << "sroce_pmem client: " << (why.str().empty() ? "ok" :
						 "FAILED")
		  << " words=" << kWords << " qp_state=" << state_name(st)
		  << std::endl;
	if (!why.str().empty())
		die("unexpected:" + why.str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	const std::vector<std::string> a(argv + 1, argv + argc);

	if (a.size() == 2 && a[0] == "server")
		return run_server(a[1]);
	if (a.size() == 3 && a[0] == "client")
		return run_client(a[1], a[2]);
	usage();
}
