// QP states through the verbs (part of verbs_device_tests, the fixture is
// in verbs_ex_fixture.h): the send queue drain of SQD (ExSqd) and
// ibv_query_qp (ExQuery).
#include <gtest/gtest.h>

#include "verbs_ex_fixture.h"

namespace sroce::test {
namespace {

using namespace ex;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// SQD: the send queue drains, IBV_EVENT_SQ_DRAINED, and back to RTS

using ExSqd = Ex;

::testing::AssertionResult to_sqd(ibv_qp *q, bool notify)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = notify;
	const int r = ibv_modify_qp(q, &a,
				    IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
	if (r)
		return ::testing::AssertionFailure()
		       << "RTS->SQD: " << std::strerror(r);
	return ::testing::AssertionSuccess();
}

::testing::AssertionResult draining(ibv_qp *q, int want)
{
	ibv_qp_attr g{};
	ibv_qp_init_attr gi{};
	if (ibv_query_qp(q, &g, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, &gi))
		return ::testing::AssertionFailure() << "ibv_query_qp failed";
	if (g.qp_state != IBV_QPS_SQD || g.sq_draining != want)
		return ::testing::AssertionFailure()
		       << "state " << int(g.qp_state) << ", sq_draining "
		       << int(g.sq_draining) << "; want SQD, " << want;
	return ::testing::AssertionSuccess();
}

TEST_F(ExSqd, AnIdleSendQueueIsDrainedAtOnce)
{
	Cq c = cq();
	ASSERT_TRUE(c);
	Qp a = qp(c.get(), c.get()), b = qp(c.get(), c.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));

	ASSERT_TRUE(to_sqd(a.get(), true));
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_SQ_DRAINED, a.get(), 0}}));
	EXPECT_TRUE(draining(a.get(), 0));
	// en_sqd_async_notify cannot be queried from userspace: the uverbs
	// QUERY_QP response (struct ib_uverbs_query_qp_resp) has no field for
	// it, and libibverbs 44 leaves the caller's value alone.

	// Without en_sqd_async_notify, no event.
	ASSERT_TRUE(to_sqd(b.get(), false));
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
	EXPECT_TRUE(draining(b.get(), 0));
}

// A message started before SQD completes (once its peer answers); a
// message posted after it waits for RTS.
TEST_F(ExSqd, StartedMessagesFinishAndNewOnesWaitForRts)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 512, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	auto send = [&](uint64_t id) {
		return post_send(a.get(), id, IBV_WR_SEND,
				 {src.addr(), 16, src.mr->lkey},
				 IBV_SEND_SIGNALED);
	};

	// a in RTS, b still in INIT: b drops a's packets (counted as
	// qp_state drops), so a's SEND is started and stays unacknowledged
	// (the transport timer resends it) for as long as b stays in INIT.
	ASSERT_TRUE(to_init(a.get()));
	ASSERT_TRUE(to_init(b.get()));
	ASSERT_TRUE(to_rtr(a.get(), b->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(a.get()));
	const long before = rx_drops("qp_state");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";
	ASSERT_EQ(send(1), 0);
	const auto deadline = Clock::now() + kWait;
	while (rx_drops("qp_state") == before && Clock::now() < deadline)
		std::this_thread::sleep_for(1ms);
	ASSERT_GT(rx_drops("qp_state"), before) << "the SEND never left";

	ASSERT_TRUE(to_sqd(a.get(), true));
	EXPECT_TRUE(draining(a.get(), 1));
	ASSERT_EQ(send(2), 0);	// accepted in SQD, not started
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
	EXPECT_TRUE(draining(a.get(), 1));

	// b comes up; a's next retransmission gets through.
	for (uint64_t i = 0; i < 2; i++)
		ASSERT_EQ(post_recv(b.get(), 10 + i,
				    {dst.addr(64 * i), 64, dst.mr->lkey}),
			  0);
	ASSERT_TRUE(to_rtr(b.get(), a->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(b.get()));
	std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 1, IBV_WC_SEND, a.get()));
	// b may have been in RTR still when the SEND came (COMM_EST).
	const std::vector<Event> ev =
		events_upto(ctx_.get(), 1, slow(3s), [&b](const Event &e) {
			return e.type != IBV_EVENT_COMM_EST || e.element != b.get();
		});
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].type, IBV_EVENT_SQ_DRAINED);
	EXPECT_EQ(ev[0].element, a.get());
	EXPECT_TRUE(draining(a.get(), 0));
	// WR 2 waits in the SQ.
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());
	EXPECT_EQ(poll_wcs(rcq.get(), 2, kQuiet).size(), 1u);

	ibv_qp_attr rts{};
	rts.qp_state = IBV_QPS_RTS;
	ASSERT_TRUE(modify(a.get(), rts, IBV_QP_STATE, "SQD->RTS"));
	s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 2, IBV_WC_SEND, a.get()));
	EXPECT_EQ(poll_wcs(rcq.get(), 1).size(), 1u);
}

// ---------------------------------------------------------------------
// ibv_query_qp

using ExQuery = Ex;

TEST_F(ExQuery, EveryAttributeRoundTrips)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	ibv_qp_init_attr ia{};
	ia.send_cq = scq.get();
	ia.recv_cq = rcq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap = {16, 8, 3, 2, 100};
	Qp q(ibv_create_qp(pd_.get(), &ia));
	ASSERT_TRUE(q) << std::strerror(errno);
	const ibv_qp_cap cap = ia.cap;	// as granted

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS,
			   "INIT"));
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_512;
	a.dest_qp_num = 0xabcde;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 3;
	a.min_rnr_timer = 9;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid_;
	a.ah_attr.grh.sgid_index = uint8_t(gid_index_);
	// ib_core replaces a RoCE address vector's hop limit with its route's
	// (rdma_addr_find_l2_eth_by_grh()), so only that value round-trips.
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 0x28;
	a.ah_attr.grh.flow_label = 0x12345;
	a.ah_attr.sl = 0;
	a.ah_attr.port_num = 1;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER,
			   "RTR"));
	const ibv_ah_attr ah = a.ah_attr;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 5;
	a.rnr_retry = 3;
	a.sq_psn = 0x654321;
	a.max_rd_atomic = 2;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC,
			   "RTS"));

	ibv_qp_attr g{};
	ibv_qp_init_attr gi{};
	const int all = IBV_QP_STATE | IBV_QP_CUR_STATE |
			IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
			IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
			IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_ALT_PATH |
			IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE |
			IBV_QP_CAP | IBV_QP_DEST_QPN;
	ASSERT_EQ(ibv_query_qp(q.get(), &g, all, &gi), 0);
	EXPECT_EQ(g.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(g.cur_qp_state, IBV_QPS_RTS);
	// (en_sqd_async_notify has no field in the uverbs response: ExSqd.)
	EXPECT_EQ(g.sq_draining, 0);
	EXPECT_EQ(g.qp_access_flags,
		  unsigned(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
	EXPECT_EQ(g.pkey_index, 0);
	EXPECT_EQ(g.port_num, 1);
	EXPECT_EQ(g.path_mtu, IBV_MTU_512);
	EXPECT_EQ(g.dest_qp_num, 0xabcdeu);
	EXPECT_EQ(g.rq_psn, 0x123456u);
	EXPECT_EQ(g.sq_psn, 0x654321u);
	EXPECT_EQ(g.max_dest_rd_atomic, 3);
	EXPECT_EQ(g.max_rd_atomic, 2);
	EXPECT_EQ(g.min_rnr_timer, 9);
	EXPECT_EQ(g.timeout, 14);
	EXPECT_EQ(g.retry_cnt, 5);
	EXPECT_EQ(g.rnr_retry, 3);
	EXPECT_EQ(g.path_mig_state, IBV_MIG_MIGRATED);
	EXPECT_EQ(g.cap.max_send_wr, cap.max_send_wr);
	EXPECT_EQ(g.cap.max_recv_wr, cap.max_recv_wr);
	EXPECT_EQ(g.cap.max_send_sge, cap.max_send_sge);
	EXPECT_EQ(g.cap.max_recv_sge, cap.max_recv_sge);
	EXPECT_EQ(g.cap.max_inline_data, cap.max_inline_data);
	EXPECT_EQ(g.ah_attr.is_global, 1);
	EXPECT_EQ(0, std::memcmp(g.ah_attr.grh.dgid.raw, ah.grh.dgid.raw, 16));
	EXPECT_EQ(g.ah_attr.grh.sgid_index, ah.grh.sgid_index);
	EXPECT_EQ(g.ah_attr.grh.hop_limit, 64);
	EXPECT_EQ(g.ah_attr.grh.traffic_class, 0x28);
	EXPECT_EQ(g.ah_attr.grh.flow_label, 0x12345u);
	EXPECT_EQ(g.ah_attr.sl, 0);
	EXPECT_EQ(g.ah_attr.port_num, 1);
	EXPECT_EQ(gi.send_cq, scq.get());
	EXPECT_EQ(gi.recv_cq, rcq.get());
	EXPECT_EQ(gi.qp_type, IBV_QPT_RC);
	EXPECT_EQ(gi.sq_sig_all, 1);
	EXPECT_EQ(gi.cap.max_send_wr, cap.max_send_wr);
	EXPECT_EQ(gi.cap.max_inline_data, cap.max_inline_data);

	// A second modify changes only what it names.
	a = {};
	a.min_rnr_timer = 20;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS,
			   "RTS->RTS"));
	g = {};
	ASSERT_EQ(ibv_query_qp(q.get(), &g, all, &gi), 0);
	EXPECT_EQ(g.min_rnr_timer, 20);
	EXPECT_EQ(g.qp_access_flags, unsigned(IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(g.timeout, 14);
	EXPECT_EQ(g.retry_cnt, 5);
	EXPECT_EQ(g.ah_attr.grh.flow_label, 0x12345u);
}

// The device moves a QP to the error state on its own; the query says so,
// and libibverbs' copy of the state follows.
TEST_F(ExQuery, ReportsTheErrorStateTheDeviceChose)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1);
	ASSERT_TRUE(src.mr);
	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 8, src.mr->lkey}, IBV_SEND_SIGNALED,
			    0x1000, 0x42),
		  0);
	ASSERT_EQ(poll_wcs(scq.get(), 1).size(), 1u);
	events(ctx_.get(), kQuiet);

	for (ibv_qp *q : {a.get(), b.get()}) {
		SCOPED_TRACE(q->qp_num);
		ibv_qp_attr g{};
		ibv_qp_init_attr gi{};
		ASSERT_EQ(ibv_query_qp(q, &g, IBV_QP_STATE | IBV_QP_CUR_STATE,
				       &gi),
			  0);
		EXPECT_EQ(g.qp_state, IBV_QPS_ERR);
		EXPECT_EQ(g.cur_qp_state, IBV_QPS_ERR);
		EXPECT_EQ(q->state, IBV_QPS_ERR);
		// ERR -> RESET is the way back.
		ibv_qp_attr r{};
		r.qp_state = IBV_QPS_RESET;
		EXPECT_TRUE(modify(q, r, IBV_QP_STATE, "ERR->RESET"));
	}
}

} // namespace
} // namespace sroce::test
