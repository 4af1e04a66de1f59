// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The provider's registration, and its context, device, PD, MR and CQ
// verbs against libibverbs 44 and the fake uverbs kernel
// (provider_uverbs_fake.h explains the set-up).
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

TEST(ProviderRegistration, RegistersOnceAsSroce)
{
	ASSERT_NE(provider_ops(), nullptr) << dlerror();
	ASSERT_EQ(registered.size(), 1u);
	EXPECT_STREQ(provider_ops()->name, "sroce");
}

TEST(ProviderRegistration, MatchesOnlyTheSroceDriverId)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);
	const verbs_match_ent *table = ops->match_table;
	ASSERT_NE(table, nullptr);

	EXPECT_EQ(table[0].kind, VERBS_MATCH_DRIVER_ID);
	EXPECT_EQ(table[0].u.driver_id, uint64_t{ SROCE_DRIVER_ID });
	EXPECT_EQ(table[1].kind, VERBS_MATCH_SENTINEL);
	// No name, modalias or custom matching that could claim other devices.
	EXPECT_EQ(ops->match_device, nullptr);
}

TEST(ProviderRegistration, AcceptsTheSroceUverbsAbi)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);

	EXPECT_LE(ops->match_min_abi_version, SROCE_UVERBS_ABI_VERSION);
	EXPECT_GE(ops->match_max_abi_version, SROCE_UVERBS_ABI_VERSION);
}

TEST(ProviderRegistration, ProvidesDeviceAndContextConstructors)
{
	const auto *ops = provider_ops();
	ASSERT_NE(ops, nullptr);

	EXPECT_NE(ops->alloc_device, nullptr);
	EXPECT_NE(ops->uninit_device, nullptr);
	EXPECT_NE(ops->alloc_context, nullptr);
	EXPECT_EQ(ops->static_providers, nullptr);
}

TEST_F(ProviderContext, GetContextCarriesTheSroceResponseTail)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr) << std::strerror(errno);
	ASSERT_EQ(kernel_.log.size(), 1u);
	const Command &c = kernel_.log[0];

	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_GET_CONTEXT);
	// header + response pointer, no driver request data
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_get_context));
	// core response followed by struct sroce_alloc_ucontext_resp
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_get_context_resp) +
					    sizeof(sroce_alloc_ucontext_resp));
	EXPECT_EQ(ctx->num_comp_vectors, 1);
	EXPECT_EQ(ctx->device, &dev_->device);
	EXPECT_EQ(to_sroce_ctx(ctx.get())->max_inline_data, 64u);
}

TEST_F(ProviderContext, RefusesAKernelSpeakingAnotherSroceAbi)
{
	int fd;

	kernel_.abi_version = SROCE_UVERBS_ABI_VERSION + 1;
	errno = 0;
	EXPECT_EQ(open(&fd), nullptr);
	EXPECT_EQ(errno, EPROTO);
	// alloc_context owns the descriptor even when it fails.
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, RefusesAKernelWithoutDriverData)
{
	kernel_.send_context_tail = false;
	errno = 0;
	EXPECT_EQ(open(), nullptr);
	EXPECT_EQ(errno, EPROTO);
}

TEST_F(ProviderContext, ReportsTheKernelsGetContextError)
{
	int fd;

	kernel_.fail_command = IB_USER_VERBS_CMD_GET_CONTEXT;
	kernel_.fail_errno = EINVAL;
	errno = 0;
	EXPECT_EQ(open(&fd), nullptr);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, CloseReleasesTheCommandDescriptor)
{
	int fd;
	auto ctx = open(&fd);
	ASSERT_NE(ctx, nullptr);

	EXPECT_TRUE(fd_is_open(fd));
	ctx.reset();
	EXPECT_FALSE(fd_is_open(fd));
}

TEST_F(ProviderContext, QueryDeviceFormatsTheFirmwareVersion)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_device_attr attr{};

	ASSERT_EQ(ibv_query_device(ctx.get(), &attr), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_QUERY_DEVICE);
	EXPECT_STREQ(attr.fw_ver, "1.2.3");
	EXPECT_EQ(attr.vendor_id, uint32_t{ SROCE_VENDOR_ID });
	EXPECT_EQ(attr.vendor_part_id, uint32_t{ SROCE_VENDOR_PART_ID });
	EXPECT_EQ(attr.phys_port_cnt, 1);
}

TEST_F(ProviderContext, QueryDeviceExUsesTheExtendedCommand)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_device_attr_ex attr{};

	ASSERT_EQ(ibv_query_device_ex(ctx.get(), nullptr, &attr), 0);
	EXPECT_EQ(kernel_.log.back().command,
		  IB_USER_VERBS_CMD_FLAG_EXTENDED |
			  IB_USER_VERBS_EX_CMD_QUERY_DEVICE);
	EXPECT_STREQ(attr.orig_attr.fw_ver, "1.2.3");
	EXPECT_EQ(attr.orig_attr.max_pd, 16);
}

TEST_F(ProviderContext, QueryPortSendsThePortNumber)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_port_attr attr{};

	ASSERT_EQ(ibv_query_port(ctx.get(), 1, &attr), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_QUERY_PORT);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_query_port));
	EXPECT_EQ(c.at<uint8_t>(offsetof(verbs_cmd_query_port, port_num)),
		  1);
	EXPECT_EQ(attr.state, IBV_PORT_ACTIVE);
	EXPECT_EQ(attr.active_mtu, IBV_MTU_1024);
	EXPECT_EQ(attr.link_layer, IBV_LINK_LAYER_ETHERNET);
}

TEST_F(ProviderContext, AllocPdKeepsTheKernelsPdNumber)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr) << std::strerror(errno);

	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_ALLOC_PD);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_alloc_pd));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_alloc_pd_resp) +
					    sizeof(sroce_alloc_pd_resp));
	EXPECT_EQ(pd->handle, FakeUverbs::kPdHandle);
	EXPECT_EQ(pd->context, ctx.get());
	EXPECT_EQ(to_sroce_pd(pd.get())->pdn, FakeUverbs::kPdn);
}

TEST_F(ProviderContext, DeallocPdNamesTheKernelHandle)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);

	ASSERT_EQ(ibv_dealloc_pd(pd.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DEALLOC_PD);
	EXPECT_EQ(c.in_words * 4u, sizeof(ib_uverbs_cmd_hdr) +
					   sizeof(ib_uverbs_dealloc_pd));
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kPdHandle);
}

TEST_F(ProviderContext, AllocPdReportsTheKernelsError)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	kernel_.fail_command = IB_USER_VERBS_CMD_ALLOC_PD;
	kernel_.fail_errno = ENOMEM;
	errno = 0;
	EXPECT_EQ(PdPtr(ibv_alloc_pd(ctx.get())), nullptr);
	EXPECT_EQ(errno, ENOMEM);
}

TEST_F(ProviderContext, RegMrSendsTheRangeAndReturnsTheKernelsKeys)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[8192];
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

	MrPtr mr(ibv_reg_mr(pd.get(), buf + 1, 100, access));
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_REG_MR);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_reg_mr));
	// No sroce driver data: the core response only.
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_reg_mr_resp));
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, start)),
		  reinterpret_cast<uintptr_t>(buf + 1));
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, length)), 100u);
	EXPECT_EQ(c.at<uint64_t>(offsetof(verbs_cmd_reg_mr, hca_va)),
		  reinterpret_cast<uintptr_t>(buf + 1));
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_reg_mr, pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_reg_mr, access_flags)),
		  uint32_t(access));

	EXPECT_EQ(mr->handle, FakeUverbs::kMrHandle);
	EXPECT_EQ(mr->lkey, FakeUverbs::kMrKey);
	EXPECT_EQ(mr->rkey, FakeUverbs::kMrKey);
	EXPECT_EQ(mr->context, ctx.get());
	EXPECT_EQ(mr->pd, pd.get());
	EXPECT_EQ(mr->addr, buf + 1);
	EXPECT_EQ(mr->length, 100u);
	// What ibv_dereg_mr() will read back through the wrapper.
	const auto *vmr = &to_sroce_mr(mr.get())->base_mr;
	EXPECT_EQ(vmr->mr_type, IBV_MR_TYPE_MR);
	EXPECT_EQ(vmr->access, access);
}

TEST_F(ProviderContext, DeregMrNamesTheKernelHandle)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[64];
	MrPtr mr(ibv_reg_mr(pd.get(), buf, sizeof(buf), 0));
	ASSERT_NE(mr, nullptr);

	ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DEREG_MR);
	EXPECT_EQ(c.in_words * 4u, sizeof(ib_uverbs_cmd_hdr) +
					   sizeof(ib_uverbs_dereg_mr));
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr)),
		  FakeUverbs::kMrHandle);
}

TEST_F(ProviderContext, RegMrReportsTheKernelsError)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	PdPtr pd(ibv_alloc_pd(ctx.get()));
	ASSERT_NE(pd, nullptr);
	static char buf[64];

	kernel_.fail_command = IB_USER_VERBS_CMD_REG_MR;
	kernel_.fail_errno = EINVAL;
	errno = 0;
	EXPECT_EQ(MrPtr(ibv_reg_mr(pd.get(), buf, sizeof(buf),
				   IBV_ACCESS_REMOTE_WRITE)),
		  nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(ProviderContext, TagMatchingSrqsAreNotSupported)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	// Only the context matters to libibverbs' dispatch, which reaches
	// the provider's create_srq_ex (XRC SRQs: provider_xrc_test.cc).
	ibv_pd pd{};
	pd.context = ctx.get();
	ibv_cq cq{};
	ibv_srq_init_attr_ex attr{};
	attr.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
			 IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	attr.pd = &pd;
	attr.cq = &cq;
	attr.srq_type = IBV_SRQT_TM;
	attr.tm_cap.max_num_tags = 8;
	errno = 0;
	EXPECT_EQ(ibv_create_srq_ex(ctx.get(), &attr), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	// Refused in the provider: nothing reached the kernel.
	EXPECT_EQ(kernel_.log.size(), 1u);
}

TEST_F(ProviderContext, CreateCqMapsTheRingTheKernelNames)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);

	CqPtr cq(ibv_create_cq(ctx.get(), 5, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_CQ);
	EXPECT_EQ(c.in_words * 4u, sizeof(verbs_cmd_create_cq));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_create_cq_resp) +
					    sizeof(sroce_create_cq_resp));
	EXPECT_EQ(c.at<uint32_t>(offsetof(verbs_cmd_create_cq, cqe)), 5u);
	EXPECT_EQ(c.at<int32_t>(offsetof(verbs_cmd_create_cq, comp_channel)),
		  -1);
	EXPECT_EQ(cq->handle, FakeUverbs::kCqHandle);
	EXPECT_EQ(cq->cqe, 8);
	auto *scq = to_sroce_cq(cq.get());
	EXPECT_EQ(static_cast<void *>(scq->ring), kernel_.ring_mem.get());
	EXPECT_EQ(scq->cqn, FakeUverbs::kCqn);

	ibv_wc wc[2];
	EXPECT_EQ(ibv_poll_cq(cq.get(), 2, wc), 0);
}

TEST_F(ProviderContext, PollCqCopiesCqesAcrossTheCounterWrap)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.cq_start = 0xfffffffe;
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	// The kernel posts four CQEs, the counter wrapping after two.
	for (uint32_t i = 0; i < 4; i++) {
		sroce_cqe *e = kernel_.cqe_slot(kernel_.cq_start + i);
		e->wr_id = 100 + i;
		e->status = i == 3 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
		e->opcode = IBV_WC_RECV;
		e->byte_len = 10 * i;
		e->ex = 0x01020304;
		e->qp_num = 0x11;
		e->src_qp = 0x22;
		e->wc_flags = IBV_WC_WITH_IMM;
		e->pkey_index = 0;
		e->slid = 0;
		e->sl = 3;
	}
	kernel_.ring()->producer = kernel_.cq_start + 4;

	ibv_wc wc[8] = {};
	ASSERT_EQ(ibv_poll_cq(cq.get(), 3, wc), 3);
	EXPECT_EQ(kernel_.ring()->consumer, kernel_.cq_start + 3);
	ASSERT_EQ(ibv_poll_cq(cq.get(), 8, wc + 3), 1);
	EXPECT_EQ(kernel_.ring()->consumer, 2u);
	EXPECT_EQ(ibv_poll_cq(cq.get(), 8, wc + 4), 0);
	for (uint32_t i = 0; i < 4; i++) {
		EXPECT_EQ(wc[i].wr_id, 100u + i);
		EXPECT_EQ(wc[i].opcode, IBV_WC_RECV);
		EXPECT_EQ(wc[i].byte_len, 10 * i);
		EXPECT_EQ(wc[i].imm_data, 0x01020304u);
		EXPECT_EQ(wc[i].qp_num, 0x11u);
		EXPECT_EQ(wc[i].src_qp, 0x22u);
		EXPECT_EQ(wc[i].wc_flags, unsigned{ IBV_WC_WITH_IMM });
		EXPECT_EQ(wc[i].sl, 3);
	}
	EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc[3].status, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(ProviderContext, PollCqIgnoresAProducerBeyondTheRing)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	kernel_.ring()->producer = 9;	// more than 8 slots ahead
	ibv_wc wc[16];
	EXPECT_EQ(ibv_poll_cq(cq.get(), 16, wc), 0);
	EXPECT_EQ(kernel_.ring()->consumer, 0u);
}

TEST_F(ProviderContext, ReqNotifyCqArmsInSharedMemory)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	CqPtr cq(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq, nullptr) << std::strerror(errno);
	const size_t commands = kernel_.log.size();

	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 1), 0);
	EXPECT_EQ(kernel_.ring()->flags, uint32_t{ SROCE_CQ_ARM_SOLICITED });
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(kernel_.ring()->flags,
		  uint32_t{ SROCE_CQ_ARM_SOLICITED | SROCE_CQ_ARM_NEXT });
	EXPECT_EQ(kernel_.log.size(), commands);	// no system call
}

TEST_F(ProviderContext, DestroyCqDestroysThenUnmaps)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	ibv_cq *cq = ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0);
	ASSERT_NE(cq, nullptr) << std::strerror(errno);

	kernel_.fail_command = IB_USER_VERBS_CMD_DESTROY_CQ;
	kernel_.fail_errno = EBUSY;
	EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
	EXPECT_TRUE(kernel_.unmapped.empty());	// still usable

	kernel_.fail_command = ~0u;
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_DESTROY_CQ);
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
				 offsetof(ib_uverbs_destroy_cq, cq_handle)),
		  FakeUverbs::kCqHandle);
	ASSERT_EQ(kernel_.unmapped.size(), 1u);
	EXPECT_EQ(kernel_.unmapped[0], kernel_.ring_mem.get());
}

TEST_F(ProviderContext, CreateCqUndoesTheKernelCqIfTheRingCannotBeMapped)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.mmap_errno = ENOMEM;

	errno = 0;
	EXPECT_EQ(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_CQ);
}

TEST_F(ProviderContext, CreateCqRefusesARingLargerThanItsMapping)
{
	auto ctx = open();
	ASSERT_NE(ctx, nullptr);
	kernel_.cq_header_slots = 1024;

	errno = 0;
	EXPECT_EQ(ibv_create_cq(ctx.get(), 8, nullptr, nullptr, 0), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_CQ);
	EXPECT_EQ(kernel_.unmapped.size(), 1u);
}

} // namespace
