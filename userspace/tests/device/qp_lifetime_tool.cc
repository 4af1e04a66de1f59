// sroce_qp_lifetime: QP teardown under load, for the guest suites
// (selftests/pair.sh, selftests/device.sh).  Not a GoogleTest binary: each
// mode needs a set-up only the shell can make (a peer flooding the QPs, a
// qdisc that holds packets), and the shell asserts what the kernel shows
// afterwards (debugfs counts, the kernel log).  The verbs helpers are the
// device tests' (verbs_util.h).
//
//   sroce_qp_lifetime churn SRC_IP4 PEER_IP4 ITERATIONS SECONDS
//	Create an RC, a UC and a UD QP, take them to RTS addressed to the
//	peer, post receives and sends (RC retransmits to a QP the peer does
//	not have, so its timer runs), destroy them with all that in flight;
//	again, ITERATIONS times or for SECONDS, whichever ends first.
//   sroce_qp_lifetime ud-blocked SRC_IP4 DST_IP4 COUNT
//	Post COUNT UD sends to DST_IP4, wait until the transmit backpressure
//	has stopped the requester with a WQE fetched but not sent (debugfs
//	qps), and destroy the QP then.  The caller makes the packets wait
//	(a slow qdisc); the fetched WQE holds the AH's destination.
//
// The device is $SROCE_RDMA_DEV.  Exit status 0 if every verb did what it
// should, 1 with a message otherwise, 2 for a usage error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "test_env.h"
#include "verbs_util.h"

namespace {

using namespace sroce::test;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kNoQpn = 0xabcdef;	// a QP number nobody has
constexpr size_t kMsg = 64;

[[noreturn]] void die(const std::string &what)
{
	std::cerr << "sroce_qp_lifetime: " << what << "\n";
	std::exit(1);
}

void check(const ::testing::AssertionResult &r)
{
	if (!r)
		die(r.message());
}

// The IPv4-mapped GID of ip4.
ibv_gid gid_of(const char *ip4)
{
	ibv_gid g{};
	in_addr a{};

	if (inet_pton(AF_INET, ip4, &a) != 1)
		die(std::string("not an IPv4 address: ") + ip4);
	g.raw[10] = g.raw[11] = 0xff;
	std::memcpy(g.raw + 12, &a, 4);
	return g;
}

// What one run needs: the device, a PD, one CQ for everything, a buffer.
struct Env {
	Context ctx;
	Pd pd;
	Cq cq;
	Mr mr;
	std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
	int sgid = -1;

	Env(const char *src, int cqe)
	{
		ibv_gid own{};

		ctx = open_device(test_device_name());
		if (!ctx)
			die("cannot open " + test_device_name());
		sgid = ipv4_gid(ctx.get(), own, src);
		if (sgid < 0)
			die(std::string("no RoCE v2 GID for ") + src);
		pd.reset(ibv_alloc_pd(ctx.get()));
		cq.reset(ibv_create_cq(ctx.get(), cqe, nullptr, nullptr, 0));
		if (!pd || !cq)
			die("PD or CQ: " + err_str(errno));
		mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(), kMrAll));
		if (!mr)
			die("ibv_reg_mr: " + err_str(errno));
	}

	Qp qp(ibv_qp_type type, uint32_t wr)
	{
		ibv_qp_init_attr a{};

		a.send_cq = a.recv_cq = cq.get();
		a.qp_type = type;
		a.cap.max_send_wr = a.cap.max_recv_wr = wr;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
		Qp q(ibv_create_qp(pd.get(), &a));
		if (!q)
			die("ibv_create_qp: " + err_str(errno));
		return q;
	}

	Ah ah(const ibv_gid &dgid)
	{
		ibv_ah_attr a = ah_attr(dgid, sgid);
		Ah h(ibv_create_ah(pd.get(), &a));
		if (!h)
			die("ibv_create_ah: " + err_str(errno));
		return h;
	}

	ibv_sge sge(size_t off)
	{
		return {uintptr_t(buf.data() + off), uint32_t(kMsg),
			mr->lkey};
	}

	// Forget every completion: the QPs they name are gone.
	void drain()
	{
		ibv_wc wc[32];

		while (ibv_poll_cq(cq.get(), 32, wc) > 0)
			;
	}
};

void ud_ready(ibv_qp *qp)
{
	check(ud_to_rts(qp, kQkey));
}

// Work request i of a batch: one SGE s, the buffer's slot i % 32.
template <typename Wr> Wr nth_wr(Env &e, ibv_sge &s, int i)
{
	Wr wr{};

	s = e.sge(kMsg * size_t(i % 32));
	wr.wr_id = uint64_t(i);
	wr.sg_list = &s;
	wr.num_sge = 1;
	return wr;
}

void post_recvs(Env &e, ibv_qp *qp, int n)
{
	for (int i = 0; i < n; i++) {
		ibv_sge s;
		ibv_recv_wr wr = nth_wr<ibv_recv_wr>(e, s, i), *bad = nullptr;

		if (int r = ibv_post_recv(qp, &wr, &bad))
			die("ibv_post_recv: " + err_str(r));
	}
}

// n sends; a UD QP's go to ah, QP kNoQpn.
void post_sends(Env &e, ibv_qp *qp, int n, ibv_ah *ah = nullptr)
{
	for (int i = 0; i < n; i++) {
		ibv_sge s;
		ibv_send_wr wr = nth_wr<ibv_send_wr>(e, s, i), *bad = nullptr;

		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ah) {
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = kNoQpn;
			wr.wr.ud.remote_qkey = kQkey;
		}
		if (int r = ibv_post_send(qp, &wr, &bad))
			die("ibv_post_send: " + err_str(r));
	}
}

int churn(const char *src, const char *peer, long iterations, long seconds)
{
	Env e(src, 4096);
	const ibv_gid dgid = gid_of(peer);
	const auto end = Clock::now() + std::chrono::seconds(seconds);
	Link l;
	long n = 0;

	l.timeout = 8;		// ~1 ms: the timer fires while it lives
	for (; n < iterations && Clock::now() < end; n++) {
		Qp rc = e.qp(IBV_QPT_RC, 16), uc = e.qp(IBV_QPT_UC, 16);
		Qp ud = e.qp(IBV_QPT_UD, 16);
		Ah ah = e.ah(dgid);

		check(connect(rc.get(), kNoQpn, dgid, e.sgid, l));
		check(connect(uc.get(), kNoQpn, dgid, e.sgid, l));
		ud_ready(ud.get());
		for (ibv_qp *q : {rc.get(), uc.get(), ud.get()})
			post_recvs(e, q, 8);
		post_sends(e, rc.get(), 8);
		post_sends(e, uc.get(), 8);
		post_sends(e, ud.get(), 8, ah.get());
		// every other time, the AH goes while its WQEs may hold it
		if (n % 2)
			ah.reset();
		ud.reset();
		uc.reset();
		rc.reset();
		e.drain();
	}
	std::cout << "churn: " << n << " iterations of 3 QPs\n";
	return 0;
}

// The fields of debugfs qps's line for QP qpn; empty if it has none.
std::map<std::string, long> qp_fields(uint32_t qpn)
{
	for (DebugfsQp &q : debugfs_qps())
		if (q.fields.count("qpn") && q.fields["qpn"] == long(qpn))
			return std::move(q.fields);
	return {};
}

int ud_blocked(const char *src, const char *dst, int count)
{
	Env e(src, 2 * count);
	Qp qp = e.qp(IBV_QPT_UD, uint32_t(count));
	Ah ah = e.ah(gid_of(dst));
	const auto end = Clock::now() + kWait;
	std::map<std::string, long> f;

	ud_ready(qp.get());
	post_sends(e, qp.get(), count, ah.get());
	// the requester stops at its transmit limit with the next WQE fetched
	for (;;) {
		f = qp_fields(qp->qp_num);
		if (f.empty())
			die("QP not in /sys/kernel/debug/sroce/qps");
		if (f["tx_inflight"] > 0 && f["sq_fetched"] != f["sq_cur"])
			break;
		if (Clock::now() > end)
			die("the requester never blocked with a WQE fetched");
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	std::cout << "blocked: tx_inflight " << f["tx_inflight"]
		  << " sq_cur " << f["sq_cur"] << " sq_fetched "
		  << f["sq_fetched"] << "\n";
	qp.reset();
	return 0;
}

int usage()
{
	std::cerr << "usage: sroce_qp_lifetime churn SRC_IP4 PEER_IP4 "
		     "ITERATIONS SECONDS\n"
		     "       sroce_qp_lifetime ud-blocked SRC_IP4 DST_IP4 "
		     "COUNT\n";
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	const std::string mode = argc > 1 ? argv[1] : "";

	if (mode == "churn" && argc == 6)
		return churn(argv[2], argv[3], std::atol(argv[4]),
			     std::atol(argv[5]));
	if (mode == "ud-blocked" && argc == 5)
		return ud_blocked(argv[2], argv[3], std::atoi(argv[4]));
	return usage();
}
