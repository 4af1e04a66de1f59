// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Shared receive queues of the provider on the fake uverbs kernel
// (provider_uverbs_fake.h).
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

class ProviderSrq : public ProviderQp {
protected:
	ibv_srq *create_srq(uint32_t max_wr = 4, uint32_t max_sge = 3)
	{
		ibv_srq_init_attr attr{};

		attr.attr.max_wr = max_wr;
		attr.attr.max_sge = max_sge;
		srq_.reset(ibv_create_srq(pd_.get(), &attr));
		return srq_.get();
	}

	int post_srq(ibv_recv_wr *wr, ibv_recv_wr **bad = nullptr)
	{
		ibv_recv_wr *ignored = nullptr;

		return ibv_post_srq_recv(srq_.get(), wr, bad ? bad : &ignored);
	}

	sroce_recv_wqe srq_slot(uint32_t idx) const
	{
		return read_at<sroce_recv_wqe>(kernel_.srq.slot(idx));
	}

	uint32_t srq_producer() const { return kernel_.srq.hdr()->producer; }

	// Declared after the fixture's PD and CQ, destroyed before them; the
	// QP that uses the SRQ goes first.
	SrqPtr srq_;
	QpPtr srq_qp_;
};

TEST_F(ProviderSrq, CreateSrqSendsTheRequestAndMapsTheRing)
{
	ibv_srq *srq = create_srq(3, 2);
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_SRQ);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq,
						pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq, max_wr)),
		  3u);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_srq,
						max_sge)),
		  2u);
	EXPECT_EQ(srq->handle, FakeUverbs::kSrqHandle);
	const sroce_srq *ssrq = to_sroce_srq(srq);
	EXPECT_EQ(static_cast<void *>(ssrq->rq.ring), kernel_.srq.mem.get());
	EXPECT_EQ(ssrq->rq.num_slots, kernel_.srq_slots);
	EXPECT_EQ(ssrq->srqn, FakeUverbs::kSrqn);
}

TEST_F(ProviderSrq, CreateSrqRefusesMoreSgesThanASlotHolds)
{
	// 64-byte slots: a 16-byte header and 3 SGEs.
	errno = 0;
	EXPECT_EQ(create_srq(4, 4), nullptr);
	EXPECT_EQ(errno, EPROTO);
	// The kernel's SRQ is not left behind.
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_SRQ);
}

TEST_F(ProviderSrq, PostSrqRecvFillsSlotsWithoutASystemCallUntilFull)
{
	ASSERT_NE(create_srq(), nullptr) << std::strerror(errno);
	ibv_sge sg[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	std::vector<ibv_recv_wr> wrs;
	for (uint64_t i = 0; i < kernel_.srq_slots + 1; i++)
		wrs.push_back(recv_wr(sg, 2, 100 + i));
	chain(wrs);
	const size_t before = kernel_.log.size();
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[4]);
	EXPECT_EQ(srq_producer(), 4u);
	for (uint32_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		const sroce_recv_wqe w = srq_slot(i);
		EXPECT_EQ(w.wr_id, 100u + i);
		EXPECT_EQ(w.num_sge, 2u);
		const sroce_sge s = read_at<sroce_sge>(
			kernel_.srq.slot(i) + sizeof(sroce_recv_wqe) +
			sizeof(sroce_sge));
		EXPECT_EQ(s.addr, sg[1].addr);
		EXPECT_EQ(s.length, sg[1].length);
		EXPECT_EQ(s.lkey, sg[1].lkey);
	}
	// The kernel consumed one: room for exactly one more.
	kernel_.srq.hdr()->consumer = 1;
	EXPECT_EQ(post_srq(&wrs[4]), 0);
	EXPECT_EQ(srq_producer(), 5u);
	EXPECT_EQ(srq_slot(4).wr_id, 104u);
	EXPECT_EQ(kernel_.log.size(), before);
}

TEST_F(ProviderSrq, PostSrqRecvRefusesMoreSgesThanGranted)
{
	ASSERT_NE(create_srq(), nullptr) << std::strerror(errno);
	ibv_sge sg[4] = {};
	std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 1, 1), recv_wr(sg, 4, 2) };
	chain(wrs);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq(wrs.data(), &bad), EINVAL);
	EXPECT_EQ(bad, &wrs[1]);
	EXPECT_EQ(srq_producer(), 1u);
}

TEST_F(ProviderSrq, ModifyAndQueryGoToTheKernel)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	ibv_srq_attr attr{};

	attr.srq_limit = 3;
	ASSERT_EQ(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_MODIFY_SRQ);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						srq_handle)),
		  FakeUverbs::kSrqHandle);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						attr_mask)),
		  uint32_t{ IBV_SRQ_LIMIT });
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_modify_srq,
						srq_limit)),
		  3u);

	kernel_.srq_query = { 4, 3, 1, 0 };
	attr = {};
	ASSERT_EQ(ibv_query_srq(srq, &attr), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_QUERY_SRQ);
	EXPECT_EQ(attr.max_wr, 4u);
	EXPECT_EQ(attr.max_sge, 3u);
	EXPECT_EQ(attr.srq_limit, 1u);
}

TEST_F(ProviderSrq, DestroySrqDestroysThenUnmaps)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	kernel_.fail_command = IB_USER_VERBS_CMD_DESTROY_SRQ;
	kernel_.fail_errno = EBUSY;
	EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);
	EXPECT_TRUE(kernel_.unmapped.empty());	// still usable

	kernel_.fail_command = ~0u;
	ASSERT_EQ(ibv_destroy_srq(srq_.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DESTROY_SRQ);
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
				 offsetof(ib_uverbs_destroy_srq, srq_handle)),
		  FakeUverbs::kSrqHandle);
	ASSERT_EQ(kernel_.unmapped.size(), 1u);
	EXPECT_EQ(kernel_.unmapped[0], kernel_.srq.mem.get());
}

TEST_F(ProviderSrq, QpWithAnSrqHasNoRqAndRefusesPostRecv)
{
	ibv_srq *srq = create_srq();
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	ibv_qp_init_attr attr{};

	attr.send_cq = cq_.get();
	attr.recv_cq = cq_.get();
	attr.srq = srq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = kernel_.sq_slots;
	attr.cap.max_send_sge = kSendSge;
	srq_qp_.reset(ibv_create_qp(pd_.get(), &attr));
	ASSERT_NE(srq_qp_, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_QP);
	const size_t req = sizeof(ib_uverbs_cmd_hdr);
	EXPECT_EQ(c.at<uint32_t>(req + offsetof(ib_uverbs_create_qp,
						srq_handle)),
		  FakeUverbs::kSrqHandle);
	EXPECT_EQ(c.at<uint8_t>(req + offsetof(ib_uverbs_create_qp, is_srq)),
		  1u);
	const sroce_qp *sqp = to_sroce_qp(srq_qp_.get());
	EXPECT_EQ(static_cast<void *>(sqp->sq.ring), kernel_.sq.mem.get());
	EXPECT_EQ(sqp->rq.ring, nullptr);

	ibv_qp_attr qa{};
	qa.qp_state = IBV_QPS_INIT;
	ASSERT_EQ(ibv_modify_qp(srq_qp_.get(), &qa, IBV_QP_STATE), 0);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(srq_qp_.get(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	// Refused in the provider: nothing reached the kernel.
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_MODIFY_QP);
}

} // namespace
