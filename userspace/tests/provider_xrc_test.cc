// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// XRC in the provider on the fake uverbs kernel (provider_uverbs_fake.h):
// XRC domains, SRQs made by ibv_create_srq_ex() (basic and XRC), XRC send
// QPs (an SQ, whose slots name the target's SRQ), XRC receive QPs, made
// or opened (no rings at all).
#include <fcntl.h>

#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

constexpr size_t kReq = sizeof(ib_uverbs_cmd_hdr);

struct XrcdClose {
	void operator()(ibv_xrcd *xrcd) const { ibv_close_xrcd(xrcd); }
};
using XrcdPtr = std::unique_ptr<ibv_xrcd, XrcdClose>;

class ProviderXrc : public ProviderQp {
protected:
	void SetUp() override
	{
		ProviderQp::SetUp();
		if (HasFatalFailure())
			return;
		ibv_xrcd_init_attr a{};

		a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
		a.fd = -1;
		a.oflags = O_CREAT;
		xrcd_.reset(ibv_open_xrcd(ctx_.get(), &a));
		ASSERT_NE(xrcd_, nullptr) << std::strerror(errno);
		// The tests count the rings mapped after the fixture's CQ.
		kernel_.mapped.clear();
	}

	// An SRQ through create_srq_ex: the CQ bit keeps libibverbs from
	// taking a basic SRQ to create_srq instead.
	ibv_srq *create_srq_ex(ibv_srq_type type, uint32_t max_wr = 4)
	{
		ibv_srq_init_attr_ex a{};

		a.srq_context = this;
		a.attr.max_wr = max_wr;
		a.attr.max_sge = 3;
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_CQ;
		a.srq_type = type;
		a.pd = pd_.get();
		a.cq = cq_.get();
		if (type == IBV_SRQT_XRC) {
			a.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
			a.xrcd = xrcd_.get();
		}
		srq_.reset(ibv_create_srq_ex(ctx_.get(), &a));
		return srq_.get();
	}

	// An XRC send QP as qp_, so that ProviderQp's helpers apply; with
	// ops, an extended one.
	ibv_qp *create_xrc_send(uint64_t ops = 0)
	{
		ibv_qp_init_attr_ex a{};

		a.qp_type = IBV_QPT_XRC_SEND;
		a.send_cq = cq_.get();
		a.cap.max_send_wr = kernel_.sq_slots;
		a.cap.max_send_sge = kSendSge;
		a.cap.max_inline_data = kInline;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd_.get();
		if (ops) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = ops;
		}
		qp_.reset(ibv_create_qp_ex(ctx_.get(), &a));
		return qp_.get();
	}

	// The application may pass CQs; the kernel ignores them.
	ibv_qp *create_xrc_recv(uint64_t comp_mask = IBV_QP_INIT_ATTR_XRCD)
	{
		ibv_qp_init_attr_ex a{};

		a.qp_type = IBV_QPT_XRC_RECV;
		a.send_cq = cq_.get();
		a.recv_cq = cq_.get();
		a.comp_mask = comp_mask;
		a.xrcd = xrcd_.get();
		a.send_ops_flags = IBV_QP_EX_WITH_SEND;
		recv_qp_.reset(ibv_create_qp_ex(ctx_.get(), &a));
		return recv_qp_.get();
	}

	static int set_state(ibv_qp *qp, ibv_qp_state state)
	{
		ibv_qp_attr attr{};

		attr.qp_state = state;
		return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	}

	// Neither queue takes a WR, and nothing reaches the kernel.
	void expect_no_queues(ibv_qp *qp)
	{
		const size_t before = kernel_.log.size();
		ibv_sge sg{ addr_of(buf_a), 8, FakeUverbs::kMrKey };
		ibv_send_wr swr = send_wr(IBV_WR_SEND, &sg, 1);
		ibv_recv_wr rwr = recv_wr(&sg, 1);
		ibv_send_wr *sbad = nullptr;
		ibv_recv_wr *rbad = nullptr;

		EXPECT_EQ(ibv_post_send(qp, &swr, &sbad), EINVAL);
		EXPECT_EQ(sbad, &swr);
		EXPECT_EQ(ibv_post_recv(qp, &rwr, &rbad), EINVAL);
		EXPECT_EQ(rbad, &rwr);
		EXPECT_EQ(kernel_.log.size(), before);
	}

	uint32_t xrcd_handle() const
	{
		const verbs_xrcd *v =
			sroce_container_of(xrcd_.get(), verbs_xrcd, xrcd);

		return v->handle;
	}

	// Declared after the fixture's QP, destroyed before it.
	XrcdPtr xrcd_;
	SrqPtr srq_;
	QpPtr recv_qp_;
};

TEST_F(ProviderXrc, OpenAndCloseXrcdAreKernelCommands)
{
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_OPEN_XRCD);
	EXPECT_EQ(c.at<int32_t>(kReq + offsetof(ib_uverbs_open_xrcd, fd)), -1);
	EXPECT_EQ(c.at<uint32_t>(kReq + offsetof(ib_uverbs_open_xrcd, oflags)),
		  uint32_t{ O_CREAT });
	EXPECT_EQ(xrcd_handle(), FakeUverbs::kXrcdHandle);
	EXPECT_EQ(xrcd_->context, ctx_.get());

	// Refused while in use: the XRCD stays.
	kernel_.fail_command = IB_USER_VERBS_CMD_CLOSE_XRCD;
	kernel_.fail_errno = EBUSY;
	EXPECT_EQ(ibv_close_xrcd(xrcd_.get()), EBUSY);
	kernel_.fail_command = ~0u;
	ASSERT_EQ(ibv_close_xrcd(xrcd_.release()), 0);
	const Command &close = kernel_.log.back();
	EXPECT_EQ(close.command, IB_USER_VERBS_CMD_CLOSE_XRCD);
	EXPECT_EQ(close.at<uint32_t>(kReq + offsetof(ib_uverbs_close_xrcd,
						     xrcd_handle)),
		  FakeUverbs::kXrcdHandle);
}

TEST_F(ProviderXrc, CreateSrqExMakesABasicSrqWithItsRing)
{
	ibv_srq *srq = create_srq_ex(IBV_SRQT_BASIC);
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_CREATE_SRQ);
	const sroce_srq *ssrq = to_sroce_srq(srq);
	EXPECT_EQ(static_cast<void *>(ssrq->rq.ring), kernel_.srq.mem.get());
	EXPECT_EQ(ssrq->srqn, FakeUverbs::kSrqn);
	EXPECT_EQ(ssrq->base_vsrq.srq_type, IBV_SRQT_BASIC);
	EXPECT_EQ(srq->handle, FakeUverbs::kSrqHandle);
	EXPECT_EQ(srq->srq_context, this);
	EXPECT_EQ(srq->pd, pd_.get());
	uint32_t num = 0;
	EXPECT_EQ(ibv_get_srq_num(srq, &num), 0);
	EXPECT_EQ(num, FakeUverbs::kSrqn);
}

TEST_F(ProviderXrc, CreateSrqExMakesAnXrcSrqWithItsRing)
{
	ibv_srq *srq = create_srq_ex(IBV_SRQT_XRC, 3);
	ASSERT_NE(srq, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_XSRQ);
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(kReq + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_create_xsrq, srq_type)),
		  uint32_t{ IBV_SRQT_XRC });
	EXPECT_EQ(field(offsetof(ib_uverbs_create_xsrq, pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_create_xsrq, xrcd_handle)),
		  FakeUverbs::kXrcdHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_create_xsrq, cq_handle)),
		  FakeUverbs::kCqHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_create_xsrq, max_wr)), 3u);
	// Room for the driver tail after the core response.
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_create_srq_resp) +
					    sizeof(sroce_create_srq_resp));

	const sroce_srq *ssrq = to_sroce_srq(srq);
	EXPECT_EQ(static_cast<void *>(ssrq->rq.ring), kernel_.srq.mem.get());
	EXPECT_EQ(ssrq->base_vsrq.srq_type, IBV_SRQT_XRC);
	EXPECT_EQ(ssrq->base_vsrq.srq_num, FakeUverbs::kSrqn);
	uint32_t num = 0;
	EXPECT_EQ(ibv_get_srq_num(srq, &num), 0);
	EXPECT_EQ(num, FakeUverbs::kSrqn);

	// Posted to exactly as a basic SRQ, without a system call.
	const size_t before = kernel_.log.size();
	ibv_sge sg{ 0x1000, 64, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1, 77);
	ibv_recv_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
	EXPECT_EQ(kernel_.srq.hdr()->producer, 1u);
	EXPECT_EQ(read_at<sroce_recv_wqe>(kernel_.srq.slot(0)).wr_id, 77u);
	EXPECT_EQ(kernel_.log.size(), before);
}

TEST_F(ProviderXrc, XrcSrqNumberMustBeTheDrivers)
{
	kernel_.xsrq_core_srqn = FakeUverbs::kSrqn + 1;
	errno = 0;
	EXPECT_EQ(create_srq_ex(IBV_SRQT_XRC), nullptr);
	EXPECT_EQ(errno, EPROTO);
	// The kernel's SRQ is not left behind, and nothing was mapped.
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_SRQ);
	EXPECT_TRUE(kernel_.mapped.empty());
}

TEST_F(ProviderXrc, CreateSrqExRefusesOtherTypesBeforeTheKernel)
{
	const size_t before = kernel_.log.size();
	errno = 0;
	EXPECT_EQ(create_srq_ex(IBV_SRQT_TM), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_EQ(kernel_.log.size(), before);
}

TEST_F(ProviderXrc, XrcSrqResizesAndIsDestroyed)
{
	ibv_srq *srq = create_srq_ex(IBV_SRQT_XRC);
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	ibv_sge sg{ 0x1000, 64, 0x11 };
	std::vector<ibv_recv_wr> wrs = { recv_wr(&sg, 1, 1),
					 recv_wr(&sg, 1, 2) };
	chain(wrs);
	ibv_recv_wr *bad = nullptr;
	ASSERT_EQ(ibv_post_srq_recv(srq, wrs.data(), &bad), 0);

	ibv_srq_attr attr{};
	attr.max_wr = 6;
	ASSERT_EQ(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), 0);
	const sroce_srq *ssrq = to_sroce_srq(srq);
	EXPECT_EQ(static_cast<void *>(ssrq->rq.ring),
		  kernel_.srq_resized.mem.get());
	EXPECT_EQ(kernel_.mapped, (std::vector<uint64_t>{
		FakeUverbs::kSrqKey, FakeUverbs::kSrqResizedKey }));
	ASSERT_EQ(kernel_.unmapped.size(), 1u);
	EXPECT_EQ(kernel_.unmapped[0], kernel_.srq.mem.get());

	// Posting carries on in the new ring, from the same counter.
	wrs[1].next = nullptr;
	wrs[1].wr_id = 3;
	ASSERT_EQ(ibv_post_srq_recv(srq, &wrs[1], &bad), 0);
	EXPECT_EQ(kernel_.srq_resized.hdr()->producer, 3u);
	EXPECT_EQ(read_at<sroce_recv_wqe>(kernel_.srq_resized.slot(2)).wr_id,
		  3u);

	ASSERT_EQ(ibv_destroy_srq(srq_.release()), 0);
	ASSERT_EQ(kernel_.unmapped.size(), 2u);
	EXPECT_EQ(kernel_.unmapped[1], kernel_.srq_resized.mem.get());
}

TEST_F(ProviderXrc, XrcSendQpMapsOnlyItsSq)
{
	ASSERT_NE(create_xrc_send(), nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_QP);
	EXPECT_EQ(c.at<uint8_t>(kReq + offsetof(ib_uverbs_create_qp, qp_type)),
		  uint8_t{ IBV_QPT_XRC_SEND });
	EXPECT_EQ(c.at<uint32_t>(kReq + offsetof(ib_uverbs_create_qp,
						 recv_cq_handle)),
		  0u);
	const sroce_qp *sqp = to_sroce_qp(qp_.get());
	EXPECT_EQ(static_cast<void *>(sqp->sq.ring), kernel_.sq.mem.get());
	EXPECT_EQ(sqp->rq.ring, nullptr);
	EXPECT_EQ(kernel_.mapped, std::vector<uint64_t>{ FakeUverbs::kSqKey });

	// No RQ: post_recv is refused in the provider, in any state.
	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	const size_t before = kernel_.log.size();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(kernel_.log.size(), before);

	ASSERT_EQ(ibv_destroy_qp(qp_.release()), 0);
	EXPECT_EQ(kernel_.unmapped,
		  std::vector<void *>{ kernel_.sq.mem.get() });
}

TEST_F(ProviderXrc, XrcSendSlotsNameTheTargetSrq)
{
	ASSERT_NE(create_xrc_send(), nullptr) << std::strerror(errno);
	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	kernel_.sq.hdr()->flags = 0;
	static uint64_t orig;
	ibv_sge sg{ addr_of(buf_a), 16, FakeUverbs::kMrKey };
	ibv_sge atom{ addr_of(&orig), 8, FakeUverbs::kMrKey };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, &sg, 1, 1),
		send_wr(IBV_WR_RDMA_WRITE, &sg, 1, 2),
		send_wr(IBV_WR_SEND_WITH_INV, &sg, 1, 3),
		send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &atom, 1, 4),
	};
	const uint32_t srqns[] = { 0xabcdef, 0x123456, 1, 0 };
	for (size_t i = 0; i < wrs.size(); i++)
		wrs[i].qp_type.xrc.remote_srqn = srqns[i];
	wrs[1].wr.rdma = { 0x7000, 0x99 };
	wrs[3].wr.atomic.remote_addr = 0x8000;
	wrs[3].wr.atomic.rkey = 0x98;
	chain(wrs);

	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(sq_producer(), 4u);
	for (uint32_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		const sroce_send_wqe w = send_slot(i);
		EXPECT_EQ(w.wr_id, i + 1u);
		EXPECT_EQ(w.xrc_srqn, srqns[i]);
	}
	EXPECT_EQ(send_slot(1).wr.rdma.remote_addr, 0x7000u);
	EXPECT_EQ(send_slot(3).wr.atomic.rkey, 0x98u);
}

TEST_F(ProviderXrc, RcSlotsNameNoSrq)
{
	ready();
	ibv_sge sg{ addr_of(buf_a), 16, FakeUverbs::kMrKey };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);
	wr.qp_type.xrc.remote_srqn = 0x1234;	// meaningless to RC

	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(send_slot(0).xrc_srqn, 0u);
}

TEST_F(ProviderXrc, WrSetXrcSrqnNamesTheTargetSrq)
{
	const uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_SEND_WITH_INV |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	ASSERT_NE(create_xrc_send(ops), nullptr) << std::strerror(errno);
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp_.get());
	ASSERT_NE(qpx, nullptr);
	ASSERT_NE(qpx->wr_set_xrc_srqn, nullptr);
	ASSERT_NE(qpx->wr_rdma_read, nullptr);	// what RC has
	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	kernel_.sq.hdr()->flags = 0;

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, 0x424242);
	ibv_wr_set_sge(qpx, FakeUverbs::kMrKey, addr_of(buf_a), 16);
	qpx->wr_id = 2;
	ibv_wr_rdma_write(qpx, 0x99, 0x7000);
	ibv_wr_set_sge(qpx, FakeUverbs::kMrKey, addr_of(buf_a), 16);
	ibv_wr_set_xrc_srqn(qpx, 7);
	qpx->wr_id = 3;
	ibv_wr_send(qpx);			// no srqn set: 0
	ibv_wr_set_sge(qpx, FakeUverbs::kMrKey, addr_of(buf_a), 16);
	ASSERT_EQ(ibv_wr_complete(qpx), 0);

	EXPECT_EQ(sq_producer(), 3u);
	EXPECT_EQ(send_slot(0).xrc_srqn, 0x424242u);
	EXPECT_EQ(send_slot(1).xrc_srqn, 7u);
	EXPECT_EQ(send_slot(1).wr.rdma.rkey, 0x99u);
	EXPECT_EQ(send_slot(2).xrc_srqn, 0u);

	// A setter before any operation fails the batch.
	ibv_wr_start(qpx);
	ibv_wr_set_xrc_srqn(qpx, 1);
	EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
	EXPECT_EQ(sq_producer(), 3u);
}

TEST_F(ProviderXrc, OnlyXrcSendQpsHaveTheSrqnSetter)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_RC;
	a.send_cq = cq_.get();
	a.recv_cq = cq_.get();
	a.cap.max_send_wr = kernel_.sq_slots;
	a.cap.max_recv_wr = kernel_.rq_slots;
	a.cap.max_send_sge = kSendSge;
	a.cap.max_recv_sge = kRecvSge;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = pd_.get();
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qp_.reset(ibv_create_qp_ex(ctx_.get(), &a));
	ASSERT_NE(qp_, nullptr) << std::strerror(errno);
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp_.get());
	ASSERT_NE(qpx, nullptr);
	EXPECT_EQ(qpx->wr_set_xrc_srqn, nullptr);
}

TEST_F(ProviderXrc, XrcRecvQpHasNoRingsAndNoDriverTail)
{
	ibv_qp *qp = create_xrc_recv();
	ASSERT_NE(qp, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_QP);
	EXPECT_EQ(c.at<uint8_t>(kReq + offsetof(ib_uverbs_create_qp, qp_type)),
		  uint8_t{ IBV_QPT_XRC_RECV });
	// The XRCD's handle goes where a PD's would, and no CQ.
	EXPECT_EQ(c.at<uint32_t>(kReq + offsetof(ib_uverbs_create_qp,
						 pd_handle)),
		  FakeUverbs::kXrcdHandle);
	EXPECT_EQ(c.at<uint32_t>(kReq + offsetof(ib_uverbs_create_qp,
						 send_cq_handle)),
		  0u);
	// The kernel writes no driver tail (no udata), and none is asked for.
	EXPECT_LT(c.out_words * 4u, sizeof(sroce_create_qp_resp));
	EXPECT_EQ(qp->handle, FakeUverbs::kQpHandle);
	EXPECT_EQ(qp->qp_num, FakeUverbs::kQpn);
	EXPECT_TRUE(kernel_.mapped.empty());
	const sroce_qp *sqp = to_sroce_qp(qp);
	EXPECT_EQ(sqp->sq.ring, nullptr);
	EXPECT_EQ(sqp->rq.ring, nullptr);

	for (ibv_qp_state s : { IBV_QPS_INIT, IBV_QPS_RTR }) {
		SCOPED_TRACE(s);
		ASSERT_EQ(set_state(qp, s), 0);
		EXPECT_EQ(kernel_.log.back().command,
			  IB_USER_VERBS_CMD_MODIFY_QP);
		expect_no_queues(qp);
	}
}

TEST_F(ProviderXrc, DestroyXrcRecvQpUnmapsNothingAndKeepsCompletions)
{
	ASSERT_NE(create_xrc_recv(), nullptr) << std::strerror(errno);
	// A completion naming the QP's number, on the CQ the application
	// passed (and libibverbs recorded), which the kernel never used.
	sroce_cqe *e = kernel_.cqe_slot(0);
	*e = {};
	e->qp_num = FakeUverbs::kQpn;
	kernel_.ring()->producer = 1;

	ASSERT_EQ(ibv_destroy_qp(recv_qp_.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DESTROY_QP);
	EXPECT_EQ(c.at<uint32_t>(kReq + offsetof(ib_uverbs_destroy_qp,
						 qp_handle)),
		  FakeUverbs::kQpHandle);
	EXPECT_TRUE(kernel_.unmapped.empty());
	EXPECT_EQ(kernel_.ring()->consumer, 0u);
	ibv_wc wc{};
	EXPECT_EQ(ibv_poll_cq(cq_.get(), 1, &wc), 1);
}

TEST_F(ProviderXrc, XrcRecvQpRefusesTheExtendedSendApi)
{
	const size_t before = kernel_.log.size();
	errno = 0;
	EXPECT_EQ(create_xrc_recv(IBV_QP_INIT_ATTR_XRCD |
				  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS),
		  nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_EQ(kernel_.log.size(), before);
}

TEST_F(ProviderXrc, OpenedQpHasNoRings)
{
	ibv_qp_open_attr a{};
	a.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		      IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT;
	a.qp_num = 0x321;
	a.xrcd = xrcd_.get();
	a.qp_context = this;
	a.qp_type = IBV_QPT_XRC_RECV;
	QpPtr qp(ibv_open_qp(ctx_.get(), &a));
	ASSERT_NE(qp, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_OPEN_QP);
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(kReq + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_open_qp, pd_handle)),
		  FakeUverbs::kXrcdHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_open_qp, qpn)), 0x321u);
	EXPECT_EQ(c.at<uint8_t>(kReq + offsetof(ib_uverbs_open_qp, qp_type)),
		  uint8_t{ IBV_QPT_XRC_RECV });
	EXPECT_EQ(qp->handle, FakeUverbs::kOpenQpHandle);
	EXPECT_EQ(qp->qp_num, 0x321u);
	EXPECT_EQ(qp->qp_context, this);
	EXPECT_TRUE(kernel_.mapped.empty());
	expect_no_queues(qp.get());

	ASSERT_EQ(ibv_destroy_qp(qp.release()), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	EXPECT_TRUE(kernel_.unmapped.empty());
}

} // namespace
