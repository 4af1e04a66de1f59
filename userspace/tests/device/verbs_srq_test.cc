// Shared receive queues, the control path (part of verbs_device_tests; the
// fixture and the expectations are in verbs_srq_fixture.h): limits,
// creation, query, modify and arming, posting beyond capacity, QPs with an
// SRQ.
#include <gtest/gtest.h>

#include "verbs_srq_fixture.h"

namespace sroce::test {
namespace {

using namespace srq;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// Control path.

TEST_F(Srqs, DeviceReportsSrqLimits)
{
	EXPECT_GT(dev_.max_srq, 0);
	EXPECT_GT(dev_.max_srq_wr, 0);
	EXPECT_GT(dev_.max_srq_sge, 0);
}

TEST_F(Srqs, CreateRoundsUpAndQueryReportsTheGrantedAttributes)
{
	const long before = debugfs_count("srqs");
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(5, 3, &g), 0);
	EXPECT_GE(g.max_wr, 5u);
	EXPECT_GE(g.max_sge, 3u);
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq_.get(), &q), 0);
	EXPECT_EQ(q.max_wr, g.max_wr);
	EXPECT_EQ(q.max_sge, g.max_sge);
	EXPECT_EQ(q.srq_limit, 0u) << "a new SRQ is not armed";
	// The module's live-SRQ count, where debugfs shows it.
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("srqs"), before + 1);
	}
	srq_.reset();
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("srqs"), before);
	}
}

TEST_F(Srqs, CreateRefusesAttributesBeyondTheLimits)
{
	EXPECT_EQ(make_srq(0), EINVAL);
	EXPECT_EQ(make_srq(uint32_t(dev_.max_srq_wr) + 1), EINVAL);
	EXPECT_EQ(make_srq(4, uint32_t(dev_.max_srq_sge) + 1), EINVAL);
	// The largest legal one.
	EXPECT_EQ(make_srq(uint32_t(dev_.max_srq_wr),
			   uint32_t(dev_.max_srq_sge)),
		  0);
}

// XRC SRQs have tests of their own (verbs_xrc_test.cc); tag matching
// is refused.
TEST_F(Srqs, TagMatchingSrqIsNotSupported)
{
	ibv_srq_init_attr_ex a{};
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
		      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	a.pd = pd_.get();
	a.cq = rcq_.get();
	a.srq_type = IBV_SRQT_TM;
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	a.tm_cap.max_num_tags = 1;
	a.tm_cap.max_ops = 1;
	errno = 0;
	Srq s(ibv_create_srq_ex(ctx_.get(), &a));
	EXPECT_FALSE(s);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(Srqs, ModifyArmsTheLimitAndRefusesBadAttributes)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ibv_srq_attr a{};

	a.srq_limit = g.max_wr + 1;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), EINVAL);
	EXPECT_EQ(srq_limit(), 0u);
	// A resize to nothing (resizing: verbs_srq_resize_test.cc).
	a = {};
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_MAX_WR), EINVAL);
	a = {};
	a.srq_limit = g.max_wr;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(srq_limit(), g.max_wr);
	a.srq_limit = 3;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(srq_limit(), 3u);
	// Nothing was resized on the way.
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq_.get(), &q), 0);
	EXPECT_EQ(q.max_wr, g.max_wr);
}

TEST_F(Srqs, PostingBeyondCapacityFailsWithEnomem)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(16, 2, &g), 0);
	Region mem(pd_.get(), 4096);
	ASSERT_TRUE(mem) << std::strerror(errno);
	ibv_sge sg[3] = {mem.sge(0, 8), mem.sge(8, 8), mem.sge(16, 8)};

	for (uint32_t i = 0; i < g.max_wr; i++)
		ASSERT_EQ(post_srq(i, sg, 2), 0) << "WQE " << i;
	bool bad_is_it = false;
	EXPECT_EQ(post_srq(99, sg, 1, &bad_is_it), ENOMEM);
	EXPECT_TRUE(bad_is_it) << "bad_wr names the WR that did not fit";
	// More SGEs than granted is refused whatever the room.
	srq_.reset();
	ASSERT_EQ(make_srq(4, 1, &g), 0);
	EXPECT_EQ(post_srq(1, sg, int(g.max_sge) + 1), EINVAL);
}

TEST_F(Srqs, QpWithAnSrqHasNoReceiveQueue)
{
	ASSERT_EQ(make_srq(8), 0);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	ibv_qp_cap cap{};
	Qp qp = make_qp(cq.get(), true, &cap);
	ASSERT_TRUE(qp) << std::strerror(errno);
	EXPECT_EQ(cap.max_recv_wr, 0u);
	EXPECT_EQ(cap.max_recv_sge, 0u);

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	ASSERT_TRUE(modify(qp.get(), a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS,
			   "RESET->INIT"));
	ibv_recv_wr wr{};
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(qp.get(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);

	// The SRQ cannot go while a QP uses it, and can once it is gone.
	EXPECT_EQ(ibv_destroy_srq(srq_.get()), EBUSY);
	qp.reset();
	EXPECT_EQ(ibv_destroy_srq(srq_.release()), 0);
}

} // namespace
} // namespace sroce::test
