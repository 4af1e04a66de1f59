// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// What ibv_destroy_qp() does to the QP's CQs on the fake uverbs kernel
// (provider_uverbs_fake.h): the QP's unpolled completions go, the other
// QPs' stay in order, and a failed destroy leaves everything alone.
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

constexpr uint32_t kOther = 0x456;	// another QP's number

class ProviderQpDestroy : public ProviderQp {
protected:
	// The kernel posts CQEs for these QP numbers, wr_id 100, 101, ...
	void post_cqes(std::initializer_list<uint32_t> qpns)
	{
		uint32_t i = kernel_.ring()->producer;

		for (const uint32_t qpn : qpns) {
			sroce_cqe *e = kernel_.cqe_slot(i);
			*e = {};
			e->wr_id = 100 + (i - kernel_.cq_start);
			e->status = IBV_WC_WR_FLUSH_ERR;
			e->opcode = IBV_WC_RECV;
			e->qp_num = qpn;
			i++;
		}
		kernel_.ring()->producer = i;
	}

	// What a poll finds now: wr_id and QP number of each completion.
	std::vector<std::pair<uint64_t, uint32_t>> drain()
	{
		std::vector<std::pair<uint64_t, uint32_t>> got;
		ibv_wc wc[16];
		int n;

		while ((n = ibv_poll_cq(cq_.get(), 16, wc)) > 0)
			for (int i = 0; i < n; i++)
				got.emplace_back(wc[i].wr_id, wc[i].qp_num);
		EXPECT_EQ(n, 0);
		return got;
	}

	int destroy() { return ibv_destroy_qp(qp_.release()); }
};

using Got = std::vector<std::pair<uint64_t, uint32_t>>;

TEST_F(ProviderQpDestroy, DropsTheQpsCompletionsAndKeepsTheOthersInOrder)
{
	ready();
	const uint32_t q = FakeUverbs::kQpn;
	post_cqes({ q, kOther, q, q, kOther, q });

	ASSERT_EQ(destroy(), 0);
	// the four dropped slots are released at once
	EXPECT_EQ(kernel_.ring()->consumer, 4u);
	EXPECT_EQ(drain(), (Got{ { 101, kOther }, { 104, kOther } }));
	EXPECT_EQ(kernel_.ring()->consumer, 6u);
}

TEST_F(ProviderQpDestroy, DropsAcrossTheCounterWrap)
{
	// a CQ whose counters start there (the fixture's started at 0)
	cq_.reset();
	kernel_.cq_start = 0xfffffffd;
	cq_.reset(ibv_create_cq(ctx_.get(), 8, nullptr, nullptr, 0));
	ASSERT_NE(cq_, nullptr);
	ready();
	const uint32_t q = FakeUverbs::kQpn;
	post_cqes({ kOther, q, kOther, q, kOther });

	ASSERT_EQ(destroy(), 0);
	EXPECT_EQ(kernel_.ring()->consumer, 0xffffffffu);
	EXPECT_EQ(drain(), (Got{ { 100, kOther }, { 102, kOther },
				 { 104, kOther } }));
	EXPECT_EQ(kernel_.ring()->consumer, 2u);
}

TEST_F(ProviderQpDestroy, LeavesACqWithoutItsCompletionsAlone)
{
	ready();
	post_cqes({ kOther, kOther });
	ibv_wc wc;
	ASSERT_EQ(ibv_poll_cq(cq_.get(), 1, &wc), 1);

	ASSERT_EQ(destroy(), 0);
	EXPECT_EQ(kernel_.ring()->consumer, 1u);
	EXPECT_EQ(drain(), (Got{ { 101, kOther } }));
}

// Slots past a producer beyond the ring are not the kernel's CQEs: nothing
// is read or moved there.
TEST_F(ProviderQpDestroy, IgnoresAProducerBeyondTheRing)
{
	ready();
	post_cqes({ FakeUverbs::kQpn });
	kernel_.ring()->producer = kernel_.cq_slots + 1;

	ASSERT_EQ(destroy(), 0);
	EXPECT_EQ(kernel_.ring()->consumer, 0u);
}

TEST_F(ProviderQpDestroy, AFailedDestroyKeepsTheCompletions)
{
	ready();
	post_cqes({ FakeUverbs::kQpn, kOther });
	kernel_.fail_command = IB_USER_VERBS_CMD_DESTROY_QP;
	kernel_.fail_errno = EBUSY;

	EXPECT_EQ(ibv_destroy_qp(qp_.get()), EBUSY);
	EXPECT_EQ(kernel_.ring()->consumer, 0u);
	EXPECT_EQ(drain(), (Got{ { 100, FakeUverbs::kQpn }, { 101, kOther } }));
	kernel_.fail_command = ~0u;
}

} // namespace
