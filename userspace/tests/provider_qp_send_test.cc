// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// RC QPs of the provider on the fake uverbs kernel (provider_uverbs_fake.h):
// creation, and what ibv_post_send() writes into the send ring, its
// limits, counters and doorbells.
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

TEST_F(ProviderQp, CreateQpMapsBothRingsAndKeepsTheCapacities)
{
	ibv_qp *qp = create_qp();
	ASSERT_NE(qp, nullptr) << std::strerror(errno);

	EXPECT_EQ(qp->handle, FakeUverbs::kQpHandle);
	EXPECT_EQ(qp->qp_num, FakeUverbs::kQpn);
	EXPECT_EQ(qp->state, IBV_QPS_RESET);
	const sroce_qp *sqp = to_sroce_qp(qp);
	EXPECT_EQ(static_cast<void *>(sqp->sq.ring), kernel_.sq.mem.get());
	EXPECT_EQ(static_cast<void *>(sqp->rq.ring), kernel_.rq.mem.get());
	EXPECT_EQ(sqp->sq.max_sge, kSendSge);
	EXPECT_EQ(sqp->rq.max_sge, kRecvSge);
	EXPECT_EQ(sqp->max_inline_data, kInline);
}

TEST_F(ProviderQp, CreateQpRefusesMoreSgesThanASlotHolds)
{
	// 128-byte SQ slots: 64-byte header and 4 SGEs.
	errno = 0;
	EXPECT_EQ(create_qp(kSendSge + 1), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	// 64-byte RQ slots: 16-byte header and 3 SGEs.
	errno = 0;
	EXPECT_EQ(create_qp(kSendSge, kRecvSge + 1), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	// Both rings of each attempt were unmapped.
	EXPECT_EQ(kernel_.unmapped.size(), 3u);
}

TEST_F(ProviderQp, CreateQpRefusesMoreInlineBytesThanASlotHolds)
{
	kernel_.qp_inline = kInline + 1;
	errno = 0;
	EXPECT_EQ(create_qp(), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DESTROY_QP);
	EXPECT_EQ(kernel_.unmapped.size(), 2u);
}

TEST_F(ProviderQp, PostSendIsRefusedBeforeRts)
{
	ASSERT_NE(create_qp(), nullptr) << std::strerror(errno);
	ibv_sge sg{ addr_of(buf_a), 8, 0x77 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);

	for (ibv_qp_state state : { IBV_QPS_RESET, IBV_QPS_INIT,
				    IBV_QPS_RTR }) {
		SCOPED_TRACE(state);
		ASSERT_EQ(to_state(state), 0);
		ibv_send_wr *bad = nullptr;
		EXPECT_EQ(post(&wr, &bad), EINVAL);
		EXPECT_EQ(bad, &wr);
		EXPECT_EQ(sq_producer(), 0u);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);

	ASSERT_EQ(to_state(IBV_QPS_RTS), 0);
	EXPECT_EQ(post(&wr), 0);
	EXPECT_EQ(sq_producer(), 1u);
}

TEST_F(ProviderQp, PostIsAcceptedInTheErrorState)
{
	ready();
	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	ibv_sge sg{ addr_of(buf_a), 8, 0x77 };
	ibv_send_wr swr = send_wr(IBV_WR_SEND, &sg, 1);
	ibv_recv_wr rwr = recv_wr(&sg, 1);

	EXPECT_EQ(post(&swr), 0);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_EQ(post(&rwr), 0);
	EXPECT_EQ(rq_producer(), 1u);
}

TEST_F(ProviderQp, SendSlotCarriesTheHeaderAndTheSges)
{
	ready();
	ibv_sge sg[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, sg, 2, 0xabcdef0123);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
			IBV_SEND_FENCE | IBV_SEND_IP_CSUM;
	wr.imm_data = 0xdeadbeef;	// not an IMM opcode: not carried

	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(sq_producer(), 1u);
	const sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.wr_id, 0xabcdef0123u);
	EXPECT_EQ(w.opcode, uint32_t{ IBV_WR_SEND });
	// IP_CSUM means nothing to RC and is not passed on.
	EXPECT_EQ(w.send_flags, uint32_t{ IBV_SEND_SIGNALED |
					  IBV_SEND_SOLICITED |
					  IBV_SEND_FENCE });
	EXPECT_EQ(w.ex, 0u);
	EXPECT_EQ(w.num_sge, 2u);
	EXPECT_EQ(w.inline_len, 0u);
	EXPECT_EQ(w.xrc_srqn, 0u);	// not an XRC send QP
	const unsigned char zero[sizeof(w.wr.raw)] = {};
	EXPECT_EQ(std::memcmp(w.wr.raw, zero, sizeof(zero)), 0);
	for (int i = 0; i < 2; i++) {
		SCOPED_TRACE(i);
		const sroce_sge s = send_sge(0, i);
		EXPECT_EQ(s.addr, sg[i].addr);
		EXPECT_EQ(s.length, sg[i].length);
		EXPECT_EQ(s.lkey, sg[i].lkey);
	}
}

TEST_F(ProviderQp, ImmediateDataIsCarriedAsGiven)
{
	ready();
	ibv_sge sg{ 0x1000, 4, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND_WITH_IMM, &sg, 1, 1),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1, 2),
	};
	chain(wrs);
	const unsigned char imm[4] = { 0x12, 0x34, 0x56, 0x78 };
	for (auto &wr : wrs)
		std::memcpy(&wr.imm_data, imm, sizeof(imm));

	ASSERT_EQ(post(wrs.data()), 0);
	for (uint32_t i = 0; i < 2; i++) {
		SCOPED_TRACE(i);
		// Byte for byte: the application's network order is kept.
		EXPECT_EQ(std::memcmp(kernel_.sq.slot(i) +
					      offsetof(sroce_send_wqe, ex),
				      imm, sizeof(imm)),
			  0);
		EXPECT_EQ(send_slot(i).opcode, uint32_t(wrs[i].opcode));
	}
}

TEST_F(ProviderQp, RdmaWrsCarryTheRemoteAddressAndKey)
{
	ready();
	ibv_sge sg{ 0x1000, 4096, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_RDMA_WRITE, &sg, 1, 1),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1, 2),
		send_wr(IBV_WR_RDMA_READ, &sg, 1, 3),
	};
	chain(wrs);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		wrs[i].wr.rdma.remote_addr = 0x7f0000001000ull + i;
		wrs[i].wr.rdma.rkey = 0xa0 + i;
	}

	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(sq_producer(), 3u);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		SCOPED_TRACE(i);
		const sroce_send_wqe w = send_slot(i);
		EXPECT_EQ(w.wr_id, i + 1);
		EXPECT_EQ(w.opcode, uint32_t(wrs[i].opcode));
		EXPECT_EQ(w.wr.rdma.remote_addr, 0x7f0000001000ull + i);
		EXPECT_EQ(w.wr.rdma.rkey, 0xa0 + i);
		EXPECT_EQ(w.wr.rdma.reserved, 0u);
		EXPECT_EQ(w.num_sge, 1u);
		EXPECT_EQ(send_sge(i, 0).length, 4096u);
	}
}

TEST_F(ProviderQp, AtomicWrsCarryTheOperandsAndOneSge)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_ATOMIC_CMP_AND_SWP, &sg, 1, 1),
		send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &sg, 1, 2),
	};
	chain(wrs);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		wrs[i].wr.atomic.remote_addr = 0x8000 + 8 * i;
		wrs[i].wr.atomic.compare_add = 0x1111111111111111ull * (i + 1);
		wrs[i].wr.atomic.swap = 0x0102030405060708ull + i;
		wrs[i].wr.atomic.rkey = 0xb0 + i;
	}

	ASSERT_EQ(post(wrs.data()), 0);
	for (uint32_t i = 0; i < wrs.size(); i++) {
		SCOPED_TRACE(i);
		const sroce_send_wqe w = send_slot(i);
		EXPECT_EQ(w.opcode, uint32_t(wrs[i].opcode));
		EXPECT_EQ(w.wr.atomic.remote_addr, 0x8000u + 8 * i);
		EXPECT_EQ(w.wr.atomic.compare_add,
			  0x1111111111111111ull * (i + 1));
		EXPECT_EQ(w.wr.atomic.swap, 0x0102030405060708ull + i);
		EXPECT_EQ(w.wr.atomic.rkey, 0xb0 + i);
		EXPECT_EQ(w.num_sge, 1u);
		EXPECT_EQ(send_sge(i, 0).addr, 0x1000u);
		EXPECT_EQ(send_sge(i, 0).length, 8u);
	}
}

// SEND_WITH_INV carries its rkey in ex and its SGEs; LOCAL_INV only the
// rkey: a local operation's slot is its header.
TEST_F(ProviderQp, InvalidateWrsCarryTheRkey)
{
	ready();
	ibv_sge sg{ 0x1000, 64, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND_WITH_INV, &sg, 1, 1),
		send_wr(IBV_WR_LOCAL_INV, &sg, 1, 2),
	};
	chain(wrs);
	wrs[0].invalidate_rkey = 0x123456c1;
	wrs[1].invalidate_rkey = 0x654321d2;
	wrs[1].send_flags = IBV_SEND_FENCE | IBV_SEND_INLINE;

	ASSERT_EQ(post(wrs.data()), 0);
	const sroce_send_wqe w0 = send_slot(0), w1 = send_slot(1);
	EXPECT_EQ(w0.opcode, uint32_t(IBV_WR_SEND_WITH_INV));
	EXPECT_EQ(w0.ex, 0x123456c1u);
	EXPECT_EQ(w0.num_sge, 1u);
	EXPECT_EQ(send_sge(0, 0).length, 64u);
	EXPECT_EQ(w1.opcode, uint32_t(IBV_WR_LOCAL_INV));
	EXPECT_EQ(w1.ex, 0x654321d2u);
	EXPECT_EQ(w1.num_sge, 0u);
	EXPECT_EQ(w1.inline_len, 0u);
	EXPECT_EQ(w1.send_flags, unsigned(IBV_SEND_FENCE));
}

// A type 2 bind names the window by its current rkey and carries the
// new one, the MR's lkey, the range and the rights; a type 1 window is
// refused here (it is bound with ibv_bind_mw()), and so is a type 2 bind
// without an MR.

TEST_F(ProviderQp, BindWrCarriesTheWindowAndTheRange)
{
	ready();
	FakeBind f;
	ibv_mw &mw2 = f.mw2, &mw1 = f.mw1;
	ibv_send_wr wr = send_wr(IBV_WR_BIND_MW, nullptr, 0, 5);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2.rkey);
	wr.bind_mw.bind_info = f.info;

	ASSERT_EQ(post(&wr), 0);
	const sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.opcode, uint32_t(IBV_WR_BIND_MW));
	EXPECT_EQ(w.wr_id, 5u);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.wr.bind.mw_rkey, 0x11223344u);
	EXPECT_EQ(w.wr.bind.new_rkey, 0x11223345u);
	EXPECT_EQ(w.wr.bind.mr_lkey, 0xabcdef01u);
	EXPECT_EQ(w.wr.bind.addr, 0x7f0000002000ull);
	EXPECT_EQ(w.wr.bind.length, 8192u);
	EXPECT_EQ(w.wr.bind.access, unsigned(IBV_ACCESS_REMOTE_WRITE));

	ibv_send_wr *bad = nullptr;
	wr.bind_mw.mw = &mw1;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.bind_info.mr = nullptr;
	wr.bind_mw.bind_info.length = 0;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(sq_producer(), 1u);
}

TEST_F(ProviderQp, InlineSendCopiesThePayloadIntoTheSlot)
{
	ready();
	std::memcpy(buf_a, "hello ", 6);
	std::memcpy(buf_b, "inline world", 12);
	ibv_sge sg[3] = { { addr_of(buf_a), 6, 0 },
			  { 0, 0, 0 },	// empty: nothing to read
			  { addr_of(buf_b), 12, 0 } };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, sg, 3, 1),
		send_wr(IBV_WR_RDMA_WRITE, sg, 1, 2),
	};
	chain(wrs);
	for (auto &wr : wrs)
		wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wrs[1].wr.rdma.remote_addr = 0x9000;
	wrs[1].wr.rdma.rkey = 0xc1;

	ASSERT_EQ(post(wrs.data()), 0);
	sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.inline_len, 18u);
	EXPECT_EQ(w.send_flags,
		  uint32_t{ IBV_SEND_INLINE | IBV_SEND_SIGNALED });
	EXPECT_EQ(std::memcmp(kernel_.sq.slot(0) + sizeof(w),
			      "hello inline world", 18),
		  0);
	w = send_slot(1);
	EXPECT_EQ(w.num_sge, 0u);
	EXPECT_EQ(w.inline_len, 6u);
	EXPECT_EQ(w.wr.rdma.rkey, 0xc1u);
	EXPECT_EQ(std::memcmp(kernel_.sq.slot(1) + sizeof(w), "hello ", 6),
		  0);
}

TEST_F(ProviderQp, InlineFillsItsSlotAndNoMore)
{
	ready();
	std::memset(buf_a, 0x5a, sizeof(buf_a));
	// 64 inline bytes: up to the last byte of the 128-byte slot.
	ibv_sge sg[2] = { { addr_of(buf_a), 40, 0 },
			  { addr_of(buf_a), 24, 0 } };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, sg, 2);
	wr.send_flags = IBV_SEND_INLINE;
	ASSERT_EQ(kernel_.sq.slot_size(), sizeof(sroce_send_wqe) + kInline);

	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(send_slot(0).inline_len, kInline);
	const unsigned char *slot = kernel_.sq.slot(0);
	EXPECT_TRUE(std::all_of(slot + sizeof(sroce_send_wqe),
				slot + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0x5a; }));
	const unsigned char *next = kernel_.sq.slot(1);
	EXPECT_TRUE(std::all_of(next, next + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0; }));

	// One byte more does not fit.
	sg[1].length = 25;
	ibv_send_wr *bad = nullptr;
	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_TRUE(std::all_of(next, next + kernel_.sq.slot_size(),
				[](unsigned char b) { return b == 0; }));
}

TEST_F(ProviderQp, InvalidSendWrIsReturnedAndTheOnesBeforeItArePosted)
{
	struct Case {
		const char *what;
		ibv_wr_opcode opcode;
		int num_sge;
		uint32_t len0;
		unsigned int flags;
	};
	const Case cases[] = {
		{ "too many SGEs", IBV_WR_SEND, kSendSge + 1, 8, 0 },
		{ "negative SGE count", IBV_WR_SEND, -1, 8, 0 },
		{ "BIND_MW without a window", IBV_WR_BIND_MW, 0, 8, 0 },
		{ "TSO", IBV_WR_TSO, 1, 8, 0 },
		{ "unknown opcode", static_cast<ibv_wr_opcode>(99), 1, 8, 0 },
		{ "inline READ", IBV_WR_RDMA_READ, 1, 8, IBV_SEND_INLINE },
		{ "inline atomic", IBV_WR_ATOMIC_CMP_AND_SWP, 1, 8,
		  IBV_SEND_INLINE },
		{ "atomic without SGE", IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 0 },
		{ "atomic with 2 SGEs", IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 8, 0 },
		{ "atomic of 4 bytes", IBV_WR_ATOMIC_CMP_AND_SWP, 1, 4, 0 },
		{ "atomic of 16 bytes", IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 16, 0 },
		{ "inline beyond max_inline_data", IBV_WR_SEND, 2, kInline,
		  IBV_SEND_INLINE },
	};
	ready();
	uint32_t posted = 0;

	for (const Case &c : cases) {
		SCOPED_TRACE(c.what);
		ibv_sge sg[kSendSge + 1] = {};
		for (auto &s : sg)
			s = { addr_of(buf_a), 1, 0x11 };
		sg[0].length = c.len0;
		std::vector<ibv_send_wr> wrs = {
			send_wr(IBV_WR_SEND, sg, 1, 10),
			send_wr(c.opcode, sg, c.num_sge, 11),
			send_wr(IBV_WR_SEND, sg, 1, 12),
		};
		chain(wrs);
		wrs[1].send_flags = c.flags;
		ibv_send_wr *bad = nullptr;

		EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
		EXPECT_EQ(bad, &wrs[1]);
		// The first WR is published, the failing one and the rest not.
		EXPECT_EQ(sq_producer(), ++posted);
		EXPECT_EQ(send_slot(posted - 1).wr_id, 10u);
		kernel_.sq.hdr()->consumer = posted;	// keep room
	}
}

TEST_F(ProviderQp, FullSendQueueReportsEnomem)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs;
	for (uint64_t i = 0; i < kernel_.sq_slots + 1; i++)
		wrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, i));
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	// The kernel consumes nothing: 8 WRs fit, the 9th does not.
	EXPECT_EQ(post(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[8]);
	EXPECT_EQ(sq_producer(), 8u);
	EXPECT_EQ(post(&wrs[8], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[8]);
	EXPECT_EQ(sq_producer(), 8u);
	EXPECT_EQ(send_slot(0).wr_id, 0u);	// not overwritten

	// Once the kernel has released 3 slots, 3 more WRs fit.
	kernel_.sq.hdr()->consumer = 3;
	EXPECT_EQ(post(&wrs[4], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[7]);
	EXPECT_EQ(sq_producer(), 11u);
	EXPECT_EQ(send_slot(8).wr_id, 4u);
	EXPECT_EQ(send_slot(10).wr_id, 6u);
	EXPECT_EQ(send_slot(3).wr_id, 3u);	// still in use
}

TEST_F(ProviderQp, SendQueueIgnoresAConsumerBeyondTheRing)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);

	kernel_.sq.hdr()->consumer = 100;	// more than the ring could owe
	EXPECT_EQ(post(&wr), ENOMEM);
	EXPECT_EQ(sq_producer(), 0u);
}

TEST_F(ProviderQp, CountersWrapAroundTheRing)
{
	kernel_.qp_start = 0xfffffffe;
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> swrs;
	std::vector<ibv_recv_wr> rwrs;
	for (uint64_t i = 0; i < 4; i++) {
		swrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, 100 + i));
		rwrs.push_back(recv_wr(&sg, 1, 200 + i));
	}
	chain(swrs);
	chain(rwrs);

	ASSERT_EQ(post(swrs.data()), 0);
	ASSERT_EQ(post(rwrs.data()), 0);
	EXPECT_EQ(sq_producer(), 2u);
	EXPECT_EQ(rq_producer(), 2u);
	for (uint32_t i = 0; i < 4; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(send_slot(0xfffffffe + i).wr_id, 100u + i);
		EXPECT_EQ(recv_slot(0xfffffffe + i).wr_id, 200u + i);
	}
	// The RQ (4 slots) is full across the wrap.
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(post(&rwrs[0], &bad), ENOMEM);
}

TEST_F(ProviderQp, ThePublishedProducerIsNeverReadBack)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1, 1);
	ibv_recv_wr rwr = recv_wr(&sg, 1, 1);

	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&rwr), 0);
	// Someone scribbles over the shared copies.
	kernel_.sq.hdr()->producer = 5;
	kernel_.rq.hdr()->producer = 3;
	wr.wr_id = rwr.wr_id = 2;
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&rwr), 0);
	EXPECT_EQ(sq_producer(), 2u);
	EXPECT_EQ(rq_producer(), 2u);
	EXPECT_EQ(send_slot(1).wr_id, 2u);
	EXPECT_EQ(recv_slot(1).wr_id, 2u);
	EXPECT_EQ(send_slot(5).wr_id, 0u);
}

TEST_F(ProviderQp, SqDoorbellRingsOnlyWhenTheKernelAsks)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, 1);
	const size_t before = kernel_.log.size();

	// A new QP's worker is idle: the first post rings, which wakes it.
	ASSERT_EQ(kernel_.sq.hdr()->flags, uint32_t{ SROCE_SQ_NEED_WAKEUP });
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(kernel_.log.size(), before + 1);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_POST_SEND);
	EXPECT_EQ(c.in_words * 4u,
		  sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send));
	EXPECT_EQ(c.out_words * 4u, sizeof(ib_uverbs_post_send_resp));
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, qp_handle)),
		  FakeUverbs::kQpHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, wr_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, sge_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_send, wqe_size)),
		  sizeof(ib_uverbs_send_wr));
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 1 });

	// The worker runs: no doorbell.
	ASSERT_EQ(post(&wr), 0);
	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(kernel_.log.size(), before + 1);

	// It went idle again.
	kernel_.sq.hdr()->flags = SROCE_SQ_NEED_WAKEUP;
	ASSERT_EQ(post(&wr), 0);
	EXPECT_EQ(kernel_.sq_doorbells, (std::vector<uint32_t>{ 1, 4 }));
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);
}

TEST_F(ProviderQp, SqDoorbellRingsOncePerCallAfterEveryWrIsPublished)
{
	ready(false);
	kernel_.wake_clears_sq_flag = false;
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs;
	for (uint64_t i = 0; i < 3; i++)
		wrs.push_back(send_wr(IBV_WR_SEND, &sg, 1, i));
	chain(wrs);

	ASSERT_EQ(post(wrs.data()), 0);
	// One doorbell, which found all three WRs published.
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 3 });

	wrs[0].next = nullptr;
	ASSERT_EQ(post(&wrs[0]), 0);
	ASSERT_EQ(post(&wrs[0]), 0);
	EXPECT_EQ(kernel_.sq_doorbells, (std::vector<uint32_t>{ 3, 4, 5 }));
}

TEST_F(ProviderQp, NoDoorbellWhenNothingWasPosted)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_send_wr wr = send_wr(IBV_WR_SEND, &sg, kSendSge + 1);
	ibv_recv_wr rwr = recv_wr(&sg, kRecvSge + 1);
	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;

	EXPECT_EQ(post(&wr), EINVAL);
	EXPECT_EQ(post(&rwr), EINVAL);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);
}

TEST_F(ProviderQp, AFailedWrStillRingsForTheOnesBeforeIt)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, &sg, 1, 1),
		send_wr(IBV_WR_TSO, &sg, 1, 2),
	};
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
	EXPECT_EQ(bad, &wrs[1]);
	EXPECT_EQ(kernel_.sq_doorbells, std::vector<uint32_t>{ 1 });
}

TEST_F(ProviderQp, FailedSqDoorbellIsReported)
{
	ready(false);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, &sg, 1, 1),
		send_wr(IBV_WR_SEND, &sg, 1, 2),
	};
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	kernel_.fail_command = IB_USER_VERBS_CMD_POST_SEND;
	kernel_.fail_errno = EIO;
	EXPECT_EQ(post(wrs.data(), &bad), EIO);
	EXPECT_EQ(bad, &wrs[0]);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);
	// The WRs are in the ring all the same.
	EXPECT_EQ(sq_producer(), 2u);
}

} // namespace
