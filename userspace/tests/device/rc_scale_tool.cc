// sroce_rc_scale: many RC QPs connected between two guests, all moving
// verified data at once, for selftests/pair.sh (t_thousand_rc_qps).  Not a
// GoogleTest binary: its two halves run in different guests.
//
//   sroce_rc_scale server PORT [--qps N]
//   sroce_rc_scale client HOST PORT [--qps N]
//	The client connects to the server's TCP PORT (IPv4).  Each side
//	creates N (default 1000) RC QPs sharing a send and a receive CQ, and
//	one MR over a buffer with four slices of kMsg bytes per QP: where its
//	QP i receives a SEND, where the peer's QP i RDMA WRITEs, and the
//	sources of its own SEND and WRITE on QP i, filled with a pattern of
//	the side, the QP and the operation.  Over TCP the client sends its N
//	QPs (number, PSN, R_Key, address of the WRITE slice, GID), then the
//	server its own; each side connects its QP i to the peer's QP i, posts
//	a receive on every QP and says "ready".  Once both are ready, each
//	side posts an RDMA WRITE and then a SEND (both signalled) on every QP
//	and only then polls: 2N send completions, each WR once and
//	successful, and N receive completions, each QP's receive once,
//	successful, kMsg bytes long; then every byte of every receive and
//	WRITE slice must be the peer's pattern for that QP (the SEND follows
//	the WRITE on the same QP, so the WRITE's data is in place once the
//	SEND is received).  Last, the sides tell each other "done" before
//	either destroys anything, so no QP goes while its peer still needs it.
//
// Each side prints "sroce_rc_scale SIDE: ok qps=N ..." with the time each
// phase took and exits 0 if all of it held, 1 with the reason on stderr
// otherwise, 2 for a usage error.  The device is $SROCE_RDMA_DEV, the GID
// that of $SROCE_IP4.  Every wait is bounded (SROCE_TEST_SLOW scales the
// limits).
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
using std::chrono::seconds;

// Two packets at the path MTU of 1024, so that every message is
// reassembled from more than one packet.
constexpr size_t kMsg = 2048;
constexpr int kDefaultQps = 1000;
// The buffer's slices, each N * kMsg bytes.
enum Slice { kRecv, kWritten, kSendSrc, kWriteSrc, kSlices };
// The operations' patterns and wr_id bits.
enum Op : uint64_t { kSend = 0, kWrite = 1 };

[[noreturn]] void usage()
{
	std::cerr << "usage: sroce_rc_scale server PORT [--qps N]\n"
		     "       sroce_rc_scale client HOST PORT [--qps N]\n";
	std::exit(2);
}

// Byte off of what side (0 server, 1 client) sends on QP i with op: a
// stream of its own for every side, QP and operation, so that data of
// another QP, operation or offset does not match.
uint8_t pattern(int side, size_t i, Op op, size_t off)
{
	uint64_t x = (uint64_t(side) << 40 | uint64_t(op) << 32 | i) *
			     0x9e3779b97f4a7c15ull +
		     off / 8;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return uint8_t(x >> (8 * (off % 8)));
}

long ms_since(Clock::time_point t0)
{
	return long(std::chrono::duration_cast<milliseconds>(Clock::now() - t0)
			    .count());
}

// One side's verbs objects; the QPs go before the CQs and the MR.
struct Side {
	int role;	// 0 server, 1 client
	size_t n;
	Context ctx;
	Pd pd;
	Cq scq, rcq;
	Buffer buf;
	Mr mr;
	std::vector<Qp> qps;
	int sgid = -1;
	ibv_gid gid{};

	Side(int r, size_t nqps) : role(r), n(nqps), buf(kSlices * nqps * kMsg)
	{
		sgid = open_device_at_ip4(ctx, gid);
		pd.reset(ibv_alloc_pd(ctx.get()));
		scq.reset(ibv_create_cq(ctx.get(), int(2 * n), nullptr,
					nullptr, 0));
		rcq.reset(ibv_create_cq(ctx.get(), int(n), nullptr, nullptr,
					0));
		if (!pd || !scq || !rcq || !buf.data())
			die("PD, CQs or buffer: " + err_str(errno));
		for (size_t i = 0; i < n; i++)
			for (size_t off = 0; off < kMsg; off++) {
				at(kSendSrc, i)[off] = pattern(role, i, kSend,
							       off);
				at(kWriteSrc, i)[off] = pattern(role, i,
								kWrite, off);
			}
		mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(),
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE));
		if (!mr)
			die("ibv_reg_mr: " + err_str(errno));
		qps.reserve(n);
		for (size_t i = 0; i < n; i++) {
			ibv_qp_init_attr a{};
			a.send_cq = scq.get();
			a.recv_cq = rcq.get();
			a.qp_type = IBV_QPT_RC;
			a.cap.max_send_wr = 2;
			a.cap.max_recv_wr = 1;
			a.cap.max_send_sge = a.cap.max_recv_sge = 1;
			qps.emplace_back(ibv_create_qp(pd.get(), &a));
			if (!qps.back())
				die("ibv_create_qp " + std::to_string(i + 1) +
				    " of " + std::to_string(n) + ": " +
				    err_str(errno));
		}
	}

	uint8_t *at(Slice s, size_t i) const
	{
		return buf.data() + (s * n + i) * kMsg;
	}

	// What the peer needs to reach QP i (its PSN drawn by the caller).
	Wire wire(size_t i, uint32_t psn) const
	{
		Wire w;

		w.qpn = qps[i]->qp_num;
		w.psn = psn;
		w.rkey = mr->rkey;
		w.addr = reinterpret_cast<uintptr_t>(at(kWritten, i));
		w.gid = gid;
		return w;
	}

	void post_recv(size_t i)
	{
		ibv_sge sge{reinterpret_cast<uintptr_t>(at(kRecv, i)),
			    uint32_t(kMsg), mr->lkey};
		ibv_recv_wr wr{}, *bad = nullptr;

		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		const int r = ibv_post_recv(qps[i].get(), &wr, &bad);
		if (r)
			die("ibv_post_recv on QP " + std::to_string(i) + ": " +
			    err_str(r));
	}

	// The RDMA WRITE to the peer's slice, then the SEND, on QP i.
	void post_send(size_t i, const Wire &peer)
	{
		ibv_sge sge[2] = {
			{reinterpret_cast<uintptr_t>(at(kWriteSrc, i)),
			 uint32_t(kMsg), mr->lkey},
			{reinterpret_cast<uintptr_t>(at(kSendSrc, i)),
			 uint32_t(kMsg), mr->lkey}};
		ibv_send_wr wr[2] = {}, *bad = nullptr;

		wr[0].wr_id = i << 1 | kWrite;
		wr[0].sg_list = &sge[0];
		wr[0].num_sge = 1;
		wr[0].opcode = IBV_WR_RDMA_WRITE;
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].wr.rdma.remote_addr = peer.addr;
		wr[0].wr.rdma.rkey = peer.rkey;
		wr[0].next = &wr[1];
		wr[1].wr_id = i << 1 | kSend;
		wr[1].sg_list = &sge[1];
		wr[1].num_sge = 1;
		wr[1].opcode = IBV_WR_SEND;
		wr[1].send_flags = IBV_SEND_SIGNALED;
		const int r = ibv_post_send(qps[i].get(), wr, &bad);
		if (r)
			die("ibv_post_send on QP " + std::to_string(i) + ": " +
			    err_str(r));
	}
};

// The problems of a side's run, the first few of each kind in full.
struct Problems {
	std::ostringstream text;
	size_t count = 0;

	void add(const std::string &what)
	{
		if (++count <= 10)
			text << " " << what << ";";
	}
};

// The completions of side s's CQs against what it posted.
void check_completions(const Side &s, const std::vector<ibv_wc> &sends,
		       const std::vector<ibv_wc> &recvs, Problems &p)
{
	std::vector<int> seen_send(2 * s.n), seen_recv(s.n);

	for (const ibv_wc &wc : sends) {
		const size_t i = size_t(wc.wr_id >> 1);
		const ibv_wc_opcode op = (wc.wr_id & 1) == kWrite ?
						 IBV_WC_RDMA_WRITE :
						 IBV_WC_SEND;
		if (i >= s.n || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != op || wc.qp_num != s.qps[i]->qp_num ||
		    seen_send[wc.wr_id]++)
			p.add("send completion " + wc_str(wc));
	}
	for (const ibv_wc &wc : recvs) {
		const size_t i = size_t(wc.wr_id);
		if (i >= s.n || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != kMsg ||
		    wc.qp_num != s.qps[i]->qp_num || seen_recv[i]++)
			p.add("receive completion " + wc_str(wc));
	}
	if (sends.size() != 2 * s.n)
		p.add(std::to_string(sends.size()) + " of " +
		      std::to_string(2 * s.n) + " send completions in time");
	if (recvs.size() != s.n)
		p.add(std::to_string(recvs.size()) + " of " +
		      std::to_string(s.n) + " receive completions in time");
}

// Every byte the peer sent and wrote to side s, against its pattern.
void check_data(const Side &s, Problems &p)
{
	const int peer = 1 - s.role;

	for (size_t i = 0; i < s.n; i++)
		for (const auto &[slice, op] :
		     {std::pair{kRecv, kSend}, std::pair{kWritten, kWrite}}) {
			const uint8_t *d = s.at(slice, i);
			for (size_t off = 0; off < kMsg; off++) {
				const uint8_t want = pattern(peer, i, op, off);
				if (d[off] == want)
					continue;
				std::ostringstream o;
				o << (op == kSend ? "SEND" : "WRITE")
				  << " data of QP " << i << ": byte " << off
				  << " is 0x" << std::hex << int(d[off])
				  << ", want 0x" << int(want);
				p.add(o.str());
				break;
			}
		}
}

int run(int role, const Fd &conn, size_t n)
{
	const char *name = role ? "client" : "server";
	const auto limit = slow(seconds{60});
	auto t0 = Clock::now();
	Side s(role, n);
	const long create_ms = ms_since(t0);

	// The client's QPs first, then the server's: one direction at a
	// time, so neither waits on a full socket buffer.
	std::mt19937 rng{std::random_device{}()};
	std::vector<Wire> own(n), peer(n);
	for (size_t i = 0; i < n; i++)
		own[i] = s.wire(i, rng() & 0xffffff);
	const auto send_own = [&] {
		send_line(conn.get(), "qps " + std::to_string(n));
		for (const Wire &w : own)
			send_line(conn.get(), w.text());
	};
	const auto recv_peer = [&] {
		const std::string head = recv_line(conn.get(), limit, "QPs");
		if (head != "qps " + std::to_string(n))
			die("the peer has \"" + head + "\", not " +
			    std::to_string(n) + " QPs");
		for (Wire &w : peer)
			w = Wire::parse(recv_line(conn.get(), limit, "QP"));
	};
	t0 = Clock::now();
	if (role) {
		send_own();
		recv_peer();
	} else {
		recv_peer();
		send_own();
	}
	for (size_t i = 0; i < n; i++) {
		Link l;
		l.access = IBV_ACCESS_REMOTE_WRITE;
		l.sq_psn = own[i].psn;
		l.rq_psn = peer[i].psn;
		check(connect(s.qps[i].get(), peer[i].qpn, peer[i].gid, s.sgid,
			      l));
		s.post_recv(i);
	}
	send_line(conn.get(), "ready");
	if (recv_line(conn.get(), limit, "\"ready\"") != "ready")
		die("the peer did not say ready");
	const long connect_ms = ms_since(t0);

	t0 = Clock::now();
	for (size_t i = 0; i < n; i++)
		s.post_send(i, peer[i]);
	// within 90 s for both CQs (poll_n() checks none of them)
	const auto deadline = t0 + slow(seconds{90});
	const std::vector<ibv_wc> sends = poll_n(s.scq.get(), 2 * n,
						 deadline - Clock::now());
	const std::vector<ibv_wc> recvs = poll_n(s.rcq.get(), n,
						 deadline - Clock::now());
	const long traffic_ms = ms_since(t0);
	Problems p;
	check_completions(s, sends, recvs, p);
	check_data(s, p);

	// Nothing is destroyed before the peer is done with it.
	send_line(conn.get(), p.count ? "done failed" : "done ok");
	const std::string peer_done = recv_line(conn.get(), slow(seconds{150}),
						"\"done\"");
	std::cout << "sroce_rc_scale " << name << ": "
		  << (p.count ? "FAILED" : "ok") << " qps=" << n
		  << " bytes=" << 2 * n * kMsg << " each way, create_ms="
		  << create_ms << " connect_ms=" << connect_ms
		  << " traffic_ms=" << traffic_ms << " peer=\"" << peer_done
		  << "\"" << std::endl;
	if (p.count)
		die(std::to_string(p.count) + " problems:" + p.text.str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> pos;
	long n = kDefaultQps;

	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--qps" && i + 1 < argc) {
			char *end = nullptr;
			n = std::strtol(argv[++i], &end, 10);
			if (*end || n < 1 || n > 16384) {
				std::cerr << "sroce_rc_scale: --qps must be 1 "
					     "to 16384\n";
				usage();
			}
		} else if (a == "-h" || a == "--help") {
			usage();
		} else {
			pos.push_back(a);
		}
	}
	if (pos.size() == 2 && pos[0] == "server")
		return run(0, accept_one(pos[1]), size_t(n));
	if (pos.size() == 3 && pos[0] == "client")
		return run(1, connect_to_server(pos[1], pos[2]), size_t(n));
	usage();
}
