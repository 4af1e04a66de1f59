// Queue pairs on a live sroce device, run inside a test-bed guest as root
// (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='QueuePair.*'
// Only the control path exists so far: creation and its limits, the state
// machine with its attribute checks, query and destruction.
#include <gtest/gtest.h>

#include <poll.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			 IBV_QP_MAX_QP_RD_ATOMIC;

class QueuePair : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		cq_.reset(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_) << std::strerror(errno);
	}

	ibv_qp_init_attr init(uint32_t wr, uint32_t sge, uint32_t inl,
			      ibv_qp_type type = IBV_QPT_RC)
	{
		ibv_qp_init_attr a{};
		a.send_cq = cq_.get();
		a.recv_cq = cq_.get();
		a.qp_type = type;
		a.cap.max_send_wr = wr;
		a.cap.max_recv_wr = wr;
		a.cap.max_send_sge = sge;
		a.cap.max_recv_sge = sge;
		a.cap.max_inline_data = inl;
		return a;
	}

	Qp create(uint32_t wr = 16, uint32_t sge = 1, uint32_t inl = 0)
	{
		ibv_qp_init_attr a = init(wr, sge, inl);
		return Qp(ibv_create_qp(pd_.get(), &a));
	}

	int to_init(ibv_qp *qp)
	{
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		return ibv_modify_qp(qp, &a, kInitMask) ? errno : 0;
	}

	ibv_qp_attr rtr_attr(uint32_t dest_qpn)
	{
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = port_.active_mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = 0x123456;
		a.max_dest_rd_atomic = dev_.max_qp_rd_atom;
		a.min_rnr_timer = 12;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid_;
		a.ah_attr.grh.sgid_index = uint8_t(gid_index_);
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = 0x20;
		a.ah_attr.grh.flow_label = 0x1234;
		a.ah_attr.port_num = 1;
		return a;
	}

	ibv_qp_attr rts_attr()
	{
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 6;
		a.sq_psn = 0xabcdef;
		a.max_rd_atomic = dev_.max_qp_init_rd_atom;
		return a;
	}

	Context ctx_;
	ibv_device_attr dev_{};
	ibv_port_attr port_{};
	Pd pd_;
	Cq cq_;
	ibv_gid gid_{};
	int gid_index_ = -1;
};

TEST_F(QueuePair, ReportsLimits)
{
	EXPECT_EQ(dev_.max_qp, 1 << 14);
	EXPECT_EQ(dev_.max_qp_wr, 1 << 14);
	EXPECT_EQ(dev_.max_sge, 32);
	EXPECT_EQ(dev_.max_qp_rd_atom, 128);
	EXPECT_EQ(dev_.max_qp_init_rd_atom, 128);
}

TEST_F(QueuePair, CreatesRcWithCapsRoundedUp)
{
	struct Caps {
		uint32_t wr, sge, inl;
	};
	const uint32_t max_wr = uint32_t(dev_.max_qp_wr);
	const uint32_t max_sge = uint32_t(dev_.max_sge);
	std::set<uint32_t> qpns;
	std::vector<Qp> keep;

	for (const Caps c : {Caps{0, 0, 0}, Caps{1, 1, 0}, Caps{3, 2, 17},
			     Caps{100, 5, 64}, Caps{1000, max_sge, 512},
			     Caps{max_wr, max_sge, 0}}) {
		SCOPED_TRACE(testing::Message() << c.wr << "/" << c.sge << "/"
						<< c.inl);
		ibv_qp_init_attr a = init(c.wr, c.sge, c.inl);
		Qp qp(ibv_create_qp(pd_.get(), &a));
		ASSERT_TRUE(qp) << std::strerror(errno);
		EXPECT_GE(a.cap.max_send_wr, c.wr);
		EXPECT_GE(a.cap.max_recv_wr, c.wr);
		EXPECT_LE(a.cap.max_send_wr, max_wr);
		EXPECT_GE(a.cap.max_send_sge, c.sge);
		EXPECT_GE(a.cap.max_recv_sge, c.sge);
		EXPECT_LE(a.cap.max_send_sge, max_sge);
		EXPECT_GE(a.cap.max_inline_data, c.inl);
		EXPECT_GE(qp->qp_num, 2u) << "QPs 0 and 1 are special";
		EXPECT_LE(qp->qp_num, 0xffffffu);
		EXPECT_TRUE(qpns.insert(qp->qp_num).second) << "QPN reused";
		EXPECT_EQ(qp->state, IBV_QPS_RESET);
		EXPECT_EQ(qp->qp_type, IBV_QPT_RC);

		// Query reports the capacities granted.
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		ASSERT_EQ(ibv_query_qp(qp.get(), &qa, IBV_QP_STATE | IBV_QP_CAP,
				       &qi), 0);
		EXPECT_EQ(qa.qp_state, IBV_QPS_RESET);
		EXPECT_EQ(qi.cap.max_send_wr, a.cap.max_send_wr);
		EXPECT_EQ(qi.cap.max_recv_wr, a.cap.max_recv_wr);
		EXPECT_EQ(qi.cap.max_send_sge, a.cap.max_send_sge);
		EXPECT_EQ(qi.cap.max_recv_sge, a.cap.max_recv_sge);
		EXPECT_EQ(qi.cap.max_inline_data, a.cap.max_inline_data);
		keep.push_back(std::move(qp));
	}
}

TEST_F(QueuePair, RefusesCapsBeyondTheLimits)
{
	const uint32_t wr = uint32_t(dev_.max_qp_wr) + 1;
	const uint32_t sge = uint32_t(dev_.max_sge) + 1;
	ibv_qp_init_attr cases[] = {init(wr, 1, 0), init(1, sge, 0),
				    init(1, 1, 513), init(1u << 30, 1, 0)};
	cases[0].cap.max_recv_wr = 1;
	cases[1].cap.max_recv_sge = 1;
	ibv_qp_init_attr rwr = init(1, 1, 0);
	rwr.cap.max_recv_wr = wr;
	ibv_qp_init_attr rsge = init(1, 1, 0);
	rsge.cap.max_recv_sge = sge;

	int i = 0;
	for (ibv_qp_init_attr a : {cases[0], cases[1], cases[2], cases[3], rwr,
				   rsge}) {
		SCOPED_TRACE(i++);
		errno = 0;
		Qp qp(ibv_create_qp(pd_.get(), &a));
		EXPECT_FALSE(qp);
		EXPECT_EQ(errno, EINVAL);
	}
}

// RC, UC and UD are sroce's transports; raw Ethernet QPs are not.
TEST_F(QueuePair, RefusesRawPacketQps)
{
	for (ibv_qp_type t : {IBV_QPT_RAW_PACKET}) {
		SCOPED_TRACE(t);
		ibv_qp_init_attr a = init(4, 1, 0, t);
		errno = 0;
		Qp qp(ibv_create_qp(pd_.get(), &a));
		EXPECT_FALSE(qp);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
}

TEST_F(QueuePair, ConnectsAndQueriesEveryAttribute)
{
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";
	Qp a = create(), b = create();
	ASSERT_TRUE(a && b) << std::strerror(errno);

	ASSERT_EQ(to_init(a.get()), 0);
	EXPECT_EQ(a->state, IBV_QPS_INIT);
	ibv_qp_attr rtr = rtr_attr(b->qp_num);
	ASSERT_EQ(ibv_modify_qp(a.get(), &rtr, kRtrMask), 0)
		<< std::strerror(errno);
	EXPECT_EQ(a->state, IBV_QPS_RTR);
	ibv_qp_attr rts = rts_attr();
	ASSERT_EQ(ibv_modify_qp(a.get(), &rts, kRtsMask), 0)
		<< std::strerror(errno);
	EXPECT_EQ(a->state, IBV_QPS_RTS);

	ibv_qp_attr q{};
	ibv_qp_init_attr qi{};
	ASSERT_EQ(ibv_query_qp(a.get(), &q, kInitMask | kRtrMask | kRtsMask,
			       &qi), 0);
	EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(q.cur_qp_state, IBV_QPS_RTS);
	EXPECT_EQ(q.pkey_index, 0);
	EXPECT_EQ(q.port_num, 1);
	EXPECT_EQ(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC);
	EXPECT_EQ(q.path_mtu, port_.active_mtu);
	EXPECT_EQ(q.dest_qp_num, b->qp_num);
	EXPECT_EQ(q.rq_psn, 0x123456u);
	EXPECT_EQ(q.max_dest_rd_atomic, dev_.max_qp_rd_atom);
	EXPECT_EQ(q.min_rnr_timer, 12);
	EXPECT_EQ(q.ah_attr.is_global, 1);
	EXPECT_EQ(std::memcmp(&q.ah_attr.grh.dgid, &gid_, sizeof(gid_)), 0);
	EXPECT_EQ(q.ah_attr.grh.sgid_index, gid_index_);
	EXPECT_EQ(q.ah_attr.grh.hop_limit, 64);
	EXPECT_EQ(q.ah_attr.grh.traffic_class, 0x20);
	EXPECT_EQ(q.ah_attr.grh.flow_label, 0x1234u);
	EXPECT_EQ(q.ah_attr.port_num, 1);
	EXPECT_EQ(q.timeout, 14);
	EXPECT_EQ(q.retry_cnt, 7);
	EXPECT_EQ(q.rnr_retry, 6);
	EXPECT_EQ(q.sq_psn, 0xabcdefu);
	EXPECT_EQ(q.max_rd_atomic, dev_.max_qp_init_rd_atom);
	EXPECT_EQ(qi.qp_type, IBV_QPT_RC);
	EXPECT_EQ(qi.sq_sig_all, 0);

	// The peer connects the other way; PSNs are 24 bits wide.
	ASSERT_EQ(to_init(b.get()), 0);
	rtr = rtr_attr(a->qp_num);
	rtr.rq_psn = 0xff000001;
	ASSERT_EQ(ibv_modify_qp(b.get(), &rtr, kRtrMask), 0)
		<< std::strerror(errno);
	ASSERT_EQ(ibv_query_qp(b.get(), &q, IBV_QP_RQ_PSN, &qi), 0);
	EXPECT_EQ(q.rq_psn, 1u);
	rts = rts_attr();
	ASSERT_EQ(ibv_modify_qp(b.get(), &rts, kRtsMask), 0)
		<< std::strerror(errno);
	EXPECT_EQ(query_state(b.get()), IBV_QPS_RTS);
	// RTS->RTS takes only a few attributes, not the PSNs.
	rts = {};
	rts.sq_psn = 5;
	EXPECT_NE(ibv_modify_qp(b.get(), &rts, IBV_QP_SQ_PSN), 0);
	rts.min_rnr_timer = 3;
	EXPECT_EQ(ibv_modify_qp(b.get(), &rts, IBV_QP_MIN_RNR_TIMER), 0);
	ASSERT_EQ(ibv_query_qp(b.get(), &q, IBV_QP_MIN_RNR_TIMER, &qi), 0);
	EXPECT_EQ(q.min_rnr_timer, 3);
}

TEST_F(QueuePair, RefusesIllegalTransitions)
{
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";
	Qp qp = create();
	ASSERT_TRUE(qp) << std::strerror(errno);

	ibv_qp_attr a = rtr_attr(qp->qp_num);
	EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtrMask), 0) << "RESET->RTR";
	EXPECT_EQ(errno, EINVAL);
	a = rts_attr();
	EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtsMask), 0) << "RESET->RTS";
	EXPECT_EQ(errno, EINVAL);
	// A required attribute missing.
	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	EXPECT_NE(ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_EQ(query_state(qp.get()), IBV_QPS_RESET);

	ASSERT_EQ(to_init(qp.get()), 0);
	a = rts_attr();
	EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtsMask), 0) << "INIT->RTS";
	EXPECT_EQ(errno, EINVAL);
	// An attribute INIT->RTR does not take.
	a = rtr_attr(qp->qp_num);
	a.sq_psn = 1;
	EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtrMask | IBV_QP_SQ_PSN), 0);
	EXPECT_EQ(errno, EINVAL);
	// A wrong idea of the current state.
	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.cur_qp_state = IBV_QPS_RTS;
	EXPECT_NE(ibv_modify_qp(qp.get(), &a,
				IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	EXPECT_EQ(query_state(qp.get()), IBV_QPS_INIT);
}

TEST_F(QueuePair, RefusesBadAttributes)
{
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";
	Qp qp = create();
	ASSERT_TRUE(qp) << std::strerror(errno);
	ASSERT_EQ(to_init(qp.get()), 0);

	struct Bad {
		const char *what;
		void (*spoil)(ibv_qp_attr &, const ibv_port_attr &);
	};
	const Bad rtr_cases[] = {
		{"path MTU above active",
		 [](ibv_qp_attr &a, const ibv_port_attr &p) {
			 a.path_mtu = ibv_mtu(p.active_mtu + 1);
		 }},
		{"path MTU 0",
		 [](ibv_qp_attr &a, const ibv_port_attr &) {
			 a.path_mtu = ibv_mtu(0);
		 }},
		{"GID index out of the table",
		 [](ibv_qp_attr &a, const ibv_port_attr &p) {
			 a.ah_attr.grh.sgid_index = uint8_t(p.gid_tbl_len);
		 }},
		{"max_dest_rd_atomic above the limit",
		 [](ibv_qp_attr &a, const ibv_port_attr &) {
			 a.max_dest_rd_atomic = 129;
		 }},
		{"min_rnr_timer 32",
		 [](ibv_qp_attr &a, const ibv_port_attr &) {
			 a.min_rnr_timer = 32;
		 }},
		{"dest QPN beyond 24 bits",
		 [](ibv_qp_attr &a, const ibv_port_attr &) {
			 a.dest_qp_num = 1u << 24;
		 }},
		{"no GRH",
		 [](ibv_qp_attr &a, const ibv_port_attr &) {
			 a.ah_attr.is_global = 0;
		 }},
	};
	for (const Bad &b : rtr_cases) {
		SCOPED_TRACE(b.what);
		if (port_.active_mtu == IBV_MTU_4096 &&
		    std::string(b.what) == "path MTU above active")
			continue;
		ibv_qp_attr a = rtr_attr(qp->qp_num);
		b.spoil(a, port_);
		errno = 0;
		EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtrMask), 0);
		EXPECT_NE(errno, 0);
		if (b.what[0] != 'G') {	// ib_core answers for the GID table
			EXPECT_EQ(errno, EINVAL);
		}
		EXPECT_EQ(query_state(qp.get()), IBV_QPS_INIT);
	}

	ibv_qp_attr a = rtr_attr(qp->qp_num);
	ASSERT_EQ(ibv_modify_qp(qp.get(), &a, kRtrMask), 0)
		<< std::strerror(errno);
	const Bad rts_cases[] = {
		{"retry_cnt 8",
		 [](ibv_qp_attr &q, const ibv_port_attr &) { q.retry_cnt = 8; }},
		{"rnr_retry 8",
		 [](ibv_qp_attr &q, const ibv_port_attr &) { q.rnr_retry = 8; }},
		{"timeout 32",
		 [](ibv_qp_attr &q, const ibv_port_attr &) { q.timeout = 32; }},
		{"max_rd_atomic above the limit",
		 [](ibv_qp_attr &q, const ibv_port_attr &) {
			 q.max_rd_atomic = 129;
		 }},
	};
	for (const Bad &b : rts_cases) {
		SCOPED_TRACE(b.what);
		a = rts_attr();
		b.spoil(a, port_);
		errno = 0;
		EXPECT_NE(ibv_modify_qp(qp.get(), &a, kRtsMask), 0);
		EXPECT_EQ(errno, EINVAL);
		EXPECT_EQ(query_state(qp.get()), IBV_QPS_RTR);
	}
	a = rts_attr();
	EXPECT_EQ(ibv_modify_qp(qp.get(), &a, kRtsMask), 0)
		<< std::strerror(errno);
}

TEST_F(QueuePair, GoesToErrorFromAnyStateButResetAndBackToReset)
{
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";

	for (ibv_qp_state from : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
				  IBV_QPS_RTS}) {
		SCOPED_TRACE(from);
		Qp qp = create();
		ASSERT_TRUE(qp) << std::strerror(errno);
		if (from >= IBV_QPS_INIT) {
			ASSERT_EQ(to_init(qp.get()), 0);
		}
		ibv_qp_attr a = rtr_attr(qp->qp_num);
		if (from >= IBV_QPS_RTR) {
			ASSERT_EQ(ibv_modify_qp(qp.get(), &a, kRtrMask), 0);
		}
		a = rts_attr();
		if (from >= IBV_QPS_RTS) {
			ASSERT_EQ(ibv_modify_qp(qp.get(), &a, kRtsMask), 0);
		}
		EXPECT_EQ(query_state(qp.get()), from);

		a = {};
		a.qp_state = IBV_QPS_ERR;
		if (from == IBV_QPS_RESET) {
			// The IB state table has no RESET->ERR.
			EXPECT_NE(ibv_modify_qp(qp.get(), &a, IBV_QP_STATE), 0);
			EXPECT_EQ(errno, EINVAL);
			continue;
		}
		ASSERT_EQ(ibv_modify_qp(qp.get(), &a, IBV_QP_STATE), 0);
		EXPECT_EQ(query_state(qp.get()), IBV_QPS_ERR);
		// ERR goes nowhere but RESET (or ERR).
		a.qp_state = IBV_QPS_RTS;
		EXPECT_NE(ibv_modify_qp(qp.get(), &a, IBV_QP_STATE), 0);
		a.qp_state = IBV_QPS_RESET;
		ASSERT_EQ(ibv_modify_qp(qp.get(), &a, IBV_QP_STATE), 0);
		EXPECT_EQ(query_state(qp.get()), IBV_QPS_RESET);
		// And the QP can be used again.
		EXPECT_EQ(to_init(qp.get()), 0);
	}
}

// The provider refuses WRs on a QP in RESET before they reach the ring.
TEST_F(QueuePair, PostingInResetIsRefused)
{
	Qp qp = create();
	ASSERT_TRUE(qp) << std::strerror(errno);
	ibv_send_wr swr{};
	ibv_send_wr *bad_s = nullptr;
	EXPECT_EQ(ibv_post_send(qp.get(), &swr, &bad_s), EINVAL);
	EXPECT_EQ(bad_s, &swr);
	ibv_recv_wr rwr{};
	ibv_recv_wr *bad_r = nullptr;
	EXPECT_EQ(ibv_post_recv(qp.get(), &rwr, &bad_r), EINVAL);
	EXPECT_EQ(bad_r, &rwr);
}

// Every kind of object, not only QPs and rings: a QP also takes references
// on its CQs, PD and (UD) address handles, any of which could leak.
TEST_F(QueuePair, CreateDestroyCyclesLeaveNothingBehind)
{
	const std::map<std::string, long> before = debugfs_counts();
	const long qps = debugfs_count("qps");
	const long rings = debugfs_count("rings");
	ASSERT_GE(qps, 0) << "debugfs not mounted?";
	ASSERT_TRUE(before.count("qps")) << "no qps count in the objects file";

	for (int i = 0; i < 200; i++) {
		Qp qp = create(64, 4, 64);
		ASSERT_TRUE(qp) << i << ": " << std::strerror(errno);
		if (i == 0) {
			EXPECT_EQ(debugfs_count("qps"), qps + 1);
			EXPECT_EQ(debugfs_count("rings"), rings + 2);
		}
	}
	EXPECT_EQ(debugfs_count("qps"), qps);
	EXPECT_EQ(debugfs_count("rings"), rings);
	EXPECT_EQ(debugfs_counts(), before);
}

// The QPs of the device under test in debugfs: its GSI QP (number 1, made
// by ib_core's MAD layer) and the others.
struct DeviceQps {
	long gsi = 0, others = 0;
};

DeviceQps device_qps()
{
	DeviceQps n;

	for (const DebugfsQp &q : debugfs_qps()) {
		if (q.dev != test_device_name())
			continue;
		if (q.fields.count("qpn") && q.fields.at("qpn") == 1)
			n.gsi++;
		else
			n.others++;
	}
	return n;
}

// max_qp is a real limit: exactly that many QPs of the device fit besides
// its GSI QP, counting its QPs already alive; the next create fails with
// ENOMEM, freeing one makes room again, and every object count goes back.
// sroce gives ordinary QPs the numbers 2 to max_qp + 1 and the GSI QP
// number 1 (kernel/obj/qp.c), so the GSI QP does not count.  Two threads
// create QPs of the smallest size, sharing one CQ, until a create fails,
// so creates race at the limit as well: two one-page rings and two
// mappings each, 128 MiB and 32768 mappings at 16384 QPs, and about
// 300 MB of slab in a test-bed guest (slub_debug).  About 35 s in a TCG
// guest (Documentation/testing.md).
TEST_F(QueuePair, EnforcesMaxQp)
{
	struct Filler {
		std::vector<Qp> qps;
		int err = 0;	// of the create that failed
	};
	const auto fill = [this](Filler &f) {
		while (f.qps.size() <= size_t(dev_.max_qp)) {
			Qp qp = create(1, 1, 0);
			if (!qp) {
				f.err = errno;
				return;
			}
			f.qps.push_back(std::move(qp));
		}
	};
	Filler f[2];

	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("debugfs object counts");
	const std::map<std::string, long> before = debugfs_counts();
	const DeviceQps own = device_qps();
	ASSERT_TRUE(before.count("qps") && before.count("rings"));
	EXPECT_EQ(own.gsi, 1) << "the GSI QP of " << test_device_name();
	std::thread other(fill, std::ref(f[1]));
	fill(f[0]);
	other.join();

	const long made = long(f[0].qps.size() + f[1].qps.size());
	EXPECT_EQ(own.others + made, dev_.max_qp)
		<< own.others << " QPs of the device before, " << made
		<< " made (" << f[0].qps.size() << " and " << f[1].qps.size()
		<< ")";
	EXPECT_EQ(f[0].err, ENOMEM) << std::strerror(f[0].err);
	EXPECT_EQ(f[1].err, ENOMEM) << std::strerror(f[1].err);
	EXPECT_EQ(debugfs_count("qps"), before.at("qps") + made);
	EXPECT_EQ(debugfs_count("rings"), before.at("rings") + 2 * made);
	errno = 0;
	Qp extra = create(1, 1, 0);
	EXPECT_FALSE(extra) << "QP number " << extra->qp_num << " beyond max_qp";
	EXPECT_EQ(errno, ENOMEM) << std::strerror(errno);

	// The one number free again is handed out again.
	std::vector<Qp> &some = f[0].qps.empty() ? f[1].qps : f[0].qps;
	ASSERT_FALSE(some.empty());
	const uint32_t freed = some.back()->qp_num;
	some.pop_back();
	Qp again = create(1, 1, 0);
	ASSERT_TRUE(again) << std::strerror(errno);
	EXPECT_EQ(again->qp_num, freed);
	again.reset();
	for (Filler &x : f)
		x.qps.clear();
	EXPECT_EQ(debugfs_counts(), before);
	const DeviceQps after = device_qps();
	EXPECT_EQ(after.others, own.others);
	EXPECT_EQ(after.gsi, 1);
}

// A destroyed QP's unpolled completions go with it: a completion names its
// QP by number, and sroce hands a freed number to the next QP created,
// which would be given them.  The other QPs' stay, in order.  Each flush
// is waited for through the completion event, so all three completions
// are in the CQ when the QP goes.
TEST_F(QueuePair, UnpolledCompletionsGoWithTheQp)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("dropping a destroyed QP's completions");
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, ch.get(), 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	ibv_qp_init_attr a = init(4, 1, 0);
	a.send_cq = a.recv_cq = cq.get();
	Qp first(ibv_create_qp(pd_.get(), &a));
	Qp gone(ibv_create_qp(pd_.get(), &a));
	Qp last(ibv_create_qp(pd_.get(), &a));
	ASSERT_TRUE(first && gone && last) << std::strerror(errno);

	// q's one receive flushed: its completion is in the CQ once the
	// event has come (acked at once: a failed assertion must not leave
	// ibv_destroy_cq waiting for it)
	auto flush = [&](ibv_qp *q, uint64_t wr_id) {
		ibv_recv_wr wr{}, *bad = nullptr;
		ibv_qp_attr e{};
		pollfd p{ch->fd, POLLIN, 0};
		ibv_cq *c;
		void *cx;

		wr.wr_id = wr_id;
		ASSERT_EQ(to_init(q), 0);
		ASSERT_EQ(ibv_post_recv(q, &wr, &bad), 0);
		ASSERT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
		e.qp_state = IBV_QPS_ERR;
		ASSERT_EQ(ibv_modify_qp(q, &e, IBV_QP_STATE), 0);
		ASSERT_EQ(::poll(&p, 1, int(kWait.count() * 1000)), 1)
			<< "no completion event";
		ASSERT_EQ(ibv_get_cq_event(ch.get(), &c, &cx), 0);
		ibv_ack_cq_events(c, 1);
	};
	ASSERT_NO_FATAL_FAILURE(flush(first.get(), 1));
	ASSERT_NO_FATAL_FAILURE(flush(gone.get(), 2));
	ASSERT_NO_FATAL_FAILURE(flush(last.get(), 3));
	const uint32_t num = gone->qp_num;
	gone.reset();
	Qp next(ibv_create_qp(pd_.get(), &a));
	ASSERT_TRUE(next) << std::strerror(errno);
	EXPECT_EQ(next->qp_num, num) << "the freed number was not reused";

	ibv_wc wc[8];
	const int n = ibv_poll_cq(cq.get(), 8, wc);
	ASSERT_EQ(n, 2);
	for (int i = 0; i < n; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(wc[i].wr_id, i ? 3u : 1u) << wc_str(wc[i]);
		EXPECT_EQ(wc[i].status, IBV_WC_WR_FLUSH_ERR) << wc_str(wc[i]);
		EXPECT_NE(wc[i].qp_num, num) << wc_str(wc[i]);
	}
}

TEST_F(QueuePair, CqsInUseCannotBeDestroyed)
{
	Qp qp = create();
	ASSERT_TRUE(qp) << std::strerror(errno);
	EXPECT_EQ(ibv_destroy_cq(cq_.get()), EBUSY);
}

} // namespace
} // namespace sroce::test
