// Asynchronous events (ExAsync; part of verbs_device_tests, the fixture is
// in verbs_ex_fixture.h): QP access and request errors, COMM_EST, CQ
// overrun, port events.
#include <gtest/gtest.h>

#include "verbs_ex_fixture.h"

namespace sroce::test {
namespace {

using namespace ex;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// Asynchronous events

using ExAsync = Ex;

TEST_F(ExAsync, RkeyViolationRaisesAccessErrOnTheResponderOnly)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 64, src.mr->lkey}, IBV_SEND_SIGNALED,
			    dst.addr(), dst.mr->rkey ^ 0x5a5a0000),
		  0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].status, IBV_WC_REM_ACCESS_ERR) << str(s[0]);

	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_QP_ACCESS_ERR, b.get(), 0}}));
	EXPECT_EQ(query_state(b.get()), IBV_QPS_ERR);
	EXPECT_EQ(query_state(a.get()), IBV_QPS_ERR);
}

TEST_F(ExAsync, RequestTheQpDoesNotAllowRaisesReqErr)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	// b allows RDMA READ only.
	ASSERT_TRUE(connect(a.get(), b.get(), IBV_ACCESS_REMOTE_READ));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 8, src.mr->lkey}, IBV_SEND_SIGNALED,
			    dst.addr(), dst.mr->rkey),
		  0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].status, IBV_WC_REM_INV_REQ_ERR) << str(s[0]);

	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_QP_REQ_ERR, b.get(), 0}}));
	EXPECT_EQ(query_state(b.get()), IBV_QPS_ERR);
}

TEST_F(ExAsync, CommEstOnceWhenAQpInRtrReceives)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	// a in RTS, b only in RTR: b receives but does not send.
	ASSERT_TRUE(to_init(a.get()));
	ASSERT_TRUE(to_init(b.get()));
	ASSERT_TRUE(to_rtr(a.get(), b->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rtr(b.get(), a->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(a.get()));
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));

	Region src(pd_.get(), 64, 1), dst(pd_.get(), 256, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	for (uint64_t i = 0; i < 2; i++) {
		ASSERT_EQ(post_recv(b.get(), i,
				    {dst.addr(64 * i), 64, dst.mr->lkey}),
			  0);
		ASSERT_EQ(post_send(a.get(), i, IBV_WR_SEND,
				    {src.addr(), 16, src.mr->lkey},
				    IBV_SEND_SIGNALED),
			  0);
		const std::vector<Wc> s = poll_wcs(scq.get(), 1);
		ASSERT_EQ(s.size(), 1u);
		EXPECT_TRUE(is_ok(s[0], i, IBV_WC_SEND, a.get()));
	}
	EXPECT_EQ(poll_wcs(rcq.get(), 2).size(), 2u);
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_COMM_EST, b.get(), 0}}));

	// Once in RTS, more traffic raises nothing.
	ASSERT_TRUE(to_rts(b.get()));
	ASSERT_EQ(post_recv(b.get(), 3, {dst.addr(128), 64, dst.mr->lkey}), 0);
	ASSERT_EQ(post_send(a.get(), 3, IBV_WR_SEND,
			    {src.addr(), 16, src.mr->lkey}, 0),
		  0);
	EXPECT_EQ(poll_wcs(rcq.get(), 1).size(), 1u);
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
}

// A CQ that overflows is in error (CQ_ERR); the QP whose completion was
// lost cannot report it by a completion and is fatal (QP_FATAL).
TEST_F(ExAsync, CqOverrunRaisesCqErrAndQpFatal)
{
	Cq scq = cq(), rcq = cq(1);
	ASSERT_TRUE(scq && rcq);
	const int cap = rcq->cqe;
	ASSERT_GE(cap, 1);
	ASSERT_LT(cap, 32) << "receive CQ too large to overrun with 32 WRs";
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	for (int i = 0; i <= cap; i++) {
		ASSERT_EQ(post_recv(b.get(), uint64_t(i),
				    {dst.addr(), 64, dst.mr->lkey}),
			  0);
		ASSERT_EQ(post_send(a.get(), uint64_t(i), IBV_WR_SEND,
				    {src.addr(), 8, src.mr->lkey}, 0),
			  0);
	}
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_CQ_ERR, rcq.get(), 0},
				{IBV_EVENT_QP_FATAL, b.get(), 0}},
			       slow(5s)));
	EXPECT_EQ(query_state(b.get()), IBV_QPS_ERR);
}

// Port events reach ibv_get_async_event.  The device under test keeps its
// netdev; this one gets an sroce device of its own on a dummy netdev.
TEST_F(ExAsync, PortEventsFollowTheNetdev)
{
	const std::string nd = "sxev0", dev = "sroce_ev0";
	quiet_sh("rdma link delete " + dev);
	quiet_sh("ip link del " + nd);
	if (quiet_sh("ip link add " + nd + " type dummy"))
		GTEST_SKIP() << "cannot create a dummy netdev (ip link add "
			     << nd << " type dummy failed)";
	struct Cleanup {
		std::string nd, dev;
		~Cleanup()
		{
			quiet_sh("rdma link delete " + dev);
			quiet_sh("ip link del " + nd);
		}
	} cleanup{nd, dev};
	ASSERT_EQ(quiet_sh("ip link set " + nd + " up"), 0);
	ASSERT_EQ(quiet_sh("rdma link add " + dev + " type sroce netdev " + nd), 0);
	Context c = open_device(dev);
	ASSERT_TRUE(c) << "cannot open " << dev;
	ibv_port_attr p{};
	const auto deadline = Clock::now() + kWait;
	while (ibv_query_port(c.get(), 1, &p) == 0 &&
	       p.state != IBV_PORT_ACTIVE && Clock::now() < deadline)
		std::this_thread::sleep_for(10ms);
	ASSERT_EQ(p.state, IBV_PORT_ACTIVE);
	events(c.get(), slow(200ms));

	// The netdev's IPv6 link-local address comes and goes with it, so
	// GID_CHANGE events may come too; only the port events count here.
	auto port_events = [&c]() {
		return events_upto(c.get(), 1, slow(3s), [](const Event &e) {
			return e.type != IBV_EVENT_GID_CHANGE;
		});
	};
	ASSERT_EQ(quiet_sh("ip link set " + nd + " down"), 0);
	std::vector<Event> e = port_events();
	ASSERT_EQ(e.size(), 1u);
	EXPECT_EQ(e[0].type, IBV_EVENT_PORT_ERR);
	EXPECT_EQ(e[0].port, 1);
	ASSERT_EQ(ibv_query_port(c.get(), 1, &p), 0);
	EXPECT_EQ(p.state, IBV_PORT_DOWN);

	ASSERT_EQ(quiet_sh("ip link set " + nd + " up"), 0);
	e = port_events();
	ASSERT_EQ(e.size(), 1u);
	EXPECT_EQ(e[0].type, IBV_EVENT_PORT_ACTIVE);
	EXPECT_EQ(e[0].port, 1);
}

} // namespace
} // namespace sroce::test
