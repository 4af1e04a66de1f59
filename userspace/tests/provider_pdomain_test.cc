// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Thread domains and parent domains of the provider on the fake uverbs
// kernel (provider_uverbs_fake.h): they live in the provider only, every
// command names the real PD, a TD takes the posting lock off the QPs and
// SRQs made through it, and the custom allocators are never called.
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

struct TdDealloc {
	void operator()(ibv_td *td) const { ibv_dealloc_td(td); }
};
using TdPtr = std::unique_ptr<ibv_td, TdDealloc>;

struct Calls {
	int alloc = 0, free = 0;
};

void *count_alloc(ibv_pd *, void *c, size_t, size_t, uint64_t)
{
	static_cast<Calls *>(c)->alloc++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

void count_free(ibv_pd *, void *c, void *, uint64_t)
{
	static_cast<Calls *>(c)->free++;
}

class ProviderPdomain : public ProviderQp {
protected:
	ibv_pd *parent(ibv_td *td, Calls *calls = nullptr)
	{
		ibv_parent_domain_init_attr a{};

		a.pd = pd_.get();
		a.td = td;
		if (calls) {
			a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				      IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
			a.alloc = count_alloc;
			a.free = count_free;
			a.pd_context = calls;
		}
		return ibv_alloc_parent_domain(ctx_.get(), &a);
	}

	ibv_qp *qp_on(ibv_pd *pd)
	{
		ibv_qp_init_attr attr{};

		attr.send_cq = cq_.get();
		attr.recv_cq = cq_.get();
		attr.qp_type = IBV_QPT_RC;
		attr.cap.max_send_wr = kernel_.sq_slots;
		attr.cap.max_recv_wr = kernel_.rq_slots;
		attr.cap.max_send_sge = 1;
		attr.cap.max_recv_sge = 1;
		return ibv_create_qp(pd, &attr);
	}

	ibv_srq *srq_on(ibv_pd *pd)
	{
		ibv_srq_init_attr attr{};

		attr.attr.max_wr = 4;
		attr.attr.max_sge = 1;
		return ibv_create_srq(pd, &attr);
	}
};

TEST_F(ProviderPdomain, ParentDomainNamesTheRealPdAndSendsNoCommand)
{
	const size_t before = kernel_.log.size();
	PdPtr pdom(parent(nullptr));
	ASSERT_NE(pdom, nullptr) << std::strerror(errno);
	EXPECT_EQ(kernel_.log.size(), before);
	EXPECT_NE(pdom.get(), pd_.get());
	EXPECT_EQ(pdom->context, ctx_.get());
	EXPECT_EQ(pdom->handle, pd_->handle);
	EXPECT_EQ(to_sroce_pd(pdom.get())->pdn, FakeUverbs::kPdn);

	QpPtr qp(qp_on(pdom.get()));
	ASSERT_NE(qp, nullptr) << std::strerror(errno);
	const Command &c = kernel_.log.back();
	EXPECT_EQ(c.command, IB_USER_VERBS_CMD_CREATE_QP);
	EXPECT_EQ(c.at<uint32_t>(sizeof(ib_uverbs_cmd_hdr) +
				 offsetof(ib_uverbs_create_qp, pd_handle)),
		  FakeUverbs::kPdHandle);
	EXPECT_EQ(qp->pd, pdom.get());
	// Without a TD the posting locks stay.
	EXPECT_FALSE(to_sroce_qp(qp.get())->sq.single_thread);
	EXPECT_FALSE(to_sroce_qp(qp.get())->rq.single_thread);
	qp.reset();

	const size_t n = kernel_.log.size();
	EXPECT_EQ(ibv_dealloc_pd(pdom.release()), 0);
	EXPECT_EQ(kernel_.log.size(), n) << "a parent domain reached the kernel";
}

TEST_F(ProviderPdomain, ThreadDomainTakesThePostingLockOff)
{
	ibv_td_init_attr ta{};
	TdPtr td(ibv_alloc_td(ctx_.get(), &ta));
	ASSERT_NE(td, nullptr) << std::strerror(errno);
	EXPECT_EQ(td->context, ctx_.get());
	PdPtr pdom(parent(td.get()));
	ASSERT_NE(pdom, nullptr) << std::strerror(errno);

	QpPtr qp(qp_on(pdom.get()));
	ASSERT_NE(qp, nullptr) << std::strerror(errno);
	EXPECT_TRUE(to_sroce_qp(qp.get())->sq.single_thread);
	EXPECT_TRUE(to_sroce_qp(qp.get())->rq.single_thread);
	SrqPtr srq(srq_on(pdom.get()));
	ASSERT_NE(srq, nullptr) << std::strerror(errno);
	EXPECT_TRUE(to_sroce_srq(srq.get())->rq.single_thread);

	// A QP on the plain PD keeps its locks.  (The fake kernel has one
	// set of QP rings: one QP at a time.)
	qp.reset();
	QpPtr plain(qp_on(pd_.get()));
	ASSERT_NE(plain, nullptr) << std::strerror(errno);
	EXPECT_FALSE(to_sroce_qp(plain.get())->sq.single_thread);
}

TEST_F(ProviderPdomain, TdAndPdInUseByAParentDomainAreBusy)
{
	TdPtr td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_NE(td, nullptr) << std::strerror(errno);
	ibv_pd *pdom = parent(td.get());
	ASSERT_NE(pdom, nullptr) << std::strerror(errno);

	const size_t n = kernel_.log.size();
	EXPECT_EQ(ibv_dealloc_td(td.get()), EBUSY);
	EXPECT_EQ(ibv_dealloc_pd(pd_.get()), EBUSY);
	EXPECT_EQ(kernel_.log.size(), n) << "a busy PD reached the kernel";

	ASSERT_EQ(ibv_dealloc_pd(pdom), 0);
	EXPECT_EQ(ibv_dealloc_td(td.release()), 0);
	cq_.reset();
	ASSERT_EQ(ibv_dealloc_pd(pd_.release()), 0);
	EXPECT_EQ(kernel_.log.back().command, IB_USER_VERBS_CMD_DEALLOC_PD);
}

TEST_F(ProviderPdomain, RefusesWhatItCannotHonour)
{
	ibv_parent_domain_init_attr a{};
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL) << "no PD";

	PdPtr pdom(parent(nullptr));
	ASSERT_NE(pdom, nullptr);
	a.pd = pdom.get();
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL) << "a parent domain of a parent domain";

	a.pd = pd_.get();
	a.comp_mask = 1u << 2;
	errno = 0;
	EXPECT_EQ(ibv_alloc_parent_domain(ctx_.get(), &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP) << "an unknown comp_mask bit";

	ibv_td_init_attr ta{};
	ta.comp_mask = 1;
	errno = 0;
	EXPECT_EQ(ibv_alloc_td(ctx_.get(), &ta), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(ProviderPdomain, CustomAllocatorsAreNeverCalled)
{
	Calls calls;
	TdPtr td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_NE(td, nullptr);
	PdPtr pdom(parent(td.get(), &calls));
	ASSERT_NE(pdom, nullptr) << std::strerror(errno);
	{
		QpPtr qp(qp_on(pdom.get()));
		ASSERT_NE(qp, nullptr) << std::strerror(errno);
		SrqPtr srq(srq_on(pdom.get()));
		ASSERT_NE(srq, nullptr) << std::strerror(errno);
	}
	pdom.reset();
	EXPECT_EQ(calls.alloc, 0);
	EXPECT_EQ(calls.free, 0);
}

} // namespace
