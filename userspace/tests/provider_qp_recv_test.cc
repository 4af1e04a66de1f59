// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// RC QPs of the provider on the fake uverbs kernel (provider_uverbs_fake.h):
// what ibv_post_recv() writes into the receive ring, its limits and
// doorbells, and concurrent posters.
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

TEST_F(ProviderQp, PostRecvIsRefusedInResetOnly)
{
	ASSERT_NE(create_qp(), nullptr) << std::strerror(errno);
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post(&wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(rq_producer(), 0u);
	ASSERT_EQ(to_state(IBV_QPS_INIT), 0);
	EXPECT_EQ(post(&wr), 0);
	ASSERT_EQ(to_state(IBV_QPS_RTR), 0);
	EXPECT_EQ(post(&wr), 0);
	EXPECT_EQ(rq_producer(), 2u);
}

TEST_F(ProviderQp, RecvSlotCarriesTheSges)
{
	ready();
	ibv_sge sg[3] = { { 0x1000, 100, 0x11 },
			  { 0x2000, 200, 0x22 },
			  { 0x3000, 300, 0x33 } };
	std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 3, 0x1234567890),
					 recv_wr(sg, 0, 7) };
	chain(wrs);

	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(rq_producer(), 2u);
	sroce_recv_wqe w = recv_slot(0);
	EXPECT_EQ(w.wr_id, 0x1234567890u);
	EXPECT_EQ(w.num_sge, 3u);
	EXPECT_EQ(w.reserved, 0u);
	for (int i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		const sroce_sge s = recv_sge(0, i);
		EXPECT_EQ(s.addr, sg[i].addr);
		EXPECT_EQ(s.length, sg[i].length);
		EXPECT_EQ(s.lkey, sg[i].lkey);
	}
	w = recv_slot(1);
	EXPECT_EQ(w.wr_id, 7u);
	EXPECT_EQ(w.num_sge, 0u);
}

TEST_F(ProviderQp, InvalidRecvWrIsReturnedAndTheOnesBeforeItArePosted)
{
	ready();
	ibv_sge sg[kRecvSge + 1] = {};
	for (const int num_sge : { int(kRecvSge) + 1, -1 }) {
		SCOPED_TRACE(num_sge);
		std::vector<ibv_recv_wr> wrs = { recv_wr(sg, 1, 1),
						 recv_wr(sg, num_sge, 2),
						 recv_wr(sg, 1, 3) };
		chain(wrs);
		ibv_recv_wr *bad = nullptr;
		const uint32_t before = rq_producer();

		EXPECT_EQ(post(wrs.data(), &bad), EINVAL);
		EXPECT_EQ(bad, &wrs[1]);
		EXPECT_EQ(rq_producer(), before + 1);
		EXPECT_EQ(recv_slot(before).wr_id, 1u);
	}
}

TEST_F(ProviderQp, FullReceiveQueueReportsEnomem)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_recv_wr> wrs;
	for (uint64_t i = 0; i < kernel_.rq_slots + 2; i++)
		wrs.push_back(recv_wr(&sg, 1, i));
	chain(wrs);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post(wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[4]);
	EXPECT_EQ(rq_producer(), 4u);
	kernel_.rq.hdr()->consumer = 1;
	EXPECT_EQ(post(&wrs[4], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[5]);
	EXPECT_EQ(rq_producer(), 5u);
	EXPECT_EQ(recv_slot(4).wr_id, 4u);
}

TEST_F(ProviderQp, RqDoorbellRingsOnlyWhenTheKernelAsks)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	std::vector<ibv_recv_wr> wrs = { recv_wr(&sg, 1, 1),
					 recv_wr(&sg, 1, 2) };
	chain(wrs);

	// Outside the error state a receive needs no doorbell.
	ASSERT_EQ(post(wrs.data()), 0);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_RECV), 0u);

	// In error, the kernel flushes: every post rings, once per call.
	ASSERT_EQ(to_state(IBV_QPS_ERR), 0);
	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;
	ASSERT_EQ(post(wrs.data()), 0);
	kernel_.rq.hdr()->consumer = 4;		// flushed
	wrs[0].next = nullptr;
	ASSERT_EQ(post(&wrs[0]), 0);
	EXPECT_EQ(kernel_.rq_doorbells, (std::vector<uint32_t>{ 4, 5 }));
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_POST_RECV);
	EXPECT_EQ(c.in_words * 4u,
		  sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_recv));
	const auto field = [&](size_t off) {
		return c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) + off);
	};
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, qp_handle)),
		  FakeUverbs::kQpHandle);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, wr_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, sge_count)), 0u);
	EXPECT_EQ(field(offsetof(ib_uverbs_post_recv, wqe_size)),
		  sizeof(ib_uverbs_recv_wr));
	// The RQ's flag does not concern the SQ, nor the reverse.
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

TEST_F(ProviderQp, FailedRqDoorbellIsReported)
{
	ready();
	ibv_sge sg{ 0x1000, 8, 0x11 };
	ibv_recv_wr wr = recv_wr(&sg, 1);
	ibv_recv_wr *bad = nullptr;

	kernel_.rq.hdr()->flags = SROCE_RQ_NEED_WAKEUP;
	kernel_.fail_command = IB_USER_VERBS_CMD_POST_RECV;
	kernel_.fail_errno = ENODEV;
	EXPECT_EQ(post(&wr, &bad), ENODEV);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(rq_producer(), 1u);
}

TEST_F(ProviderQp, ConcurrentPostersGetDistinctSlots)
{
	constexpr uint32_t kThreads = 4;
	constexpr uint32_t kEach = 16384;
	kernel_.sq_slots = kThreads * kEach;
	kernel_.rq_slots = kThreads * kEach;
	ready();
	std::atomic<uint32_t> waiting{ kThreads };
	std::vector<std::thread> threads;

	for (uint32_t t = 0; t < kThreads; t++) {
		threads.emplace_back([this, t, &waiting] {
			ibv_sge sg{ 0x1000, 8, 0x11 };

			// Start together, to collide as often as possible.
			waiting--;
			while (waiting)
				std::this_thread::yield();
			for (uint32_t i = 0; i < kEach; i++) {
				const uint64_t id = uint64_t{ t } << 32 | i;
				ibv_send_wr swr =
					send_wr(IBV_WR_SEND, &sg, 1, id);
				ibv_recv_wr rwr = recv_wr(&sg, 1, id);
				if (post(&swr) || post(&rwr))
					return;
			}
		});
	}
	for (auto &th : threads)
		th.join();

	EXPECT_EQ(sq_producer(), kThreads * kEach);
	EXPECT_EQ(rq_producer(), kThreads * kEach);
	std::set<uint64_t> sent, received;
	for (uint32_t i = 0; i < kThreads * kEach; i++) {
		sent.insert(send_slot(i).wr_id);
		received.insert(recv_slot(i).wr_id);
	}
	// Every WR in a slot of its own.
	EXPECT_EQ(sent.size(), size_t{ kThreads * kEach });
	EXPECT_EQ(received.size(), size_t{ kThreads * kEach });
}

} // namespace
