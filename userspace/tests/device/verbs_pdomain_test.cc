// Thread domains and parent domains (Pdomain.*, part of
// verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Pdomain*'
// A parent domain stands in for its PD everywhere (ibv_alloc_parent_domain(3)):
// QPs, SRQs, CQs (IBV_CQ_INIT_ATTR_MASK_PD), MRs and AHs made through it
// are the PD's, and a TD or PD a parent domain uses cannot go.  The fixture
// is in verbs_pdomain_fixture.h; memory windows, re-registration and UD on
// parent domains are in verbs_pdomain_objects_test.cc.
// rdma_rxe's provider has no TDs or parent domains: there every case skips.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "test_env.h"
#include "verbs_pdomain_fixture.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test::rc {
namespace {

TEST_F(Pdomain, TdAllocDealloc)
{
	Td t1(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_TRUE(t1) << std::strerror(errno);
	ibv_td_init_attr ta{};
	Td t2(ibv_alloc_td(ctx_.get(), &ta));
	ASSERT_TRUE(t2) << std::strerror(errno);
	EXPECT_NE(t1.get(), t2.get());
	EXPECT_EQ(t1->context, ctx_.get());
	EXPECT_EQ(ibv_dealloc_td(t1.release()), 0);
	EXPECT_EQ(ibv_dealloc_td(t2.release()), 0);
}

TEST_F(Pdomain, ParentDomainWithAndWithoutTd)
{
	Td td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_TRUE(td);
	ParentDomain plain = pdom(nullptr);
	ASSERT_TRUE(plain) << std::strerror(errno);
	ParentDomain with_td = pdom(td.get());
	ASSERT_TRUE(with_td) << std::strerror(errno);
	EXPECT_NE(plain.get(), pd_.get());
	EXPECT_NE(plain.get(), with_td.get());
	EXPECT_EQ(plain->context, ctx_.get());
	EXPECT_EQ(with_td->context, ctx_.get());
	EXPECT_EQ(ibv_dealloc_pd(with_td.release()), 0);
	EXPECT_EQ(ibv_dealloc_pd(plain.release()), 0);
	EXPECT_EQ(ibv_dealloc_td(td.release()), 0);
}

// One side on a parent domain with a TD (no posting lock on sroce), the
// other on one without; SEND, WRITE and READ between their MRs.
TEST_F(Pdomain, RcPairOnParentDomainsMovesData)
{
	Td td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_TRUE(td);
	ParentDomain pa = pdom(td.get());
	ParentDomain pb = pdom(nullptr);
	ASSERT_TRUE(pa && pb) << std::strerror(errno);
	End a, b;
	ASSERT_TRUE(make_end(a, pa.get()));
	ASSERT_TRUE(make_end(b, pb.get()));
	EXPECT_EQ(a->pd, pa.get());
	ASSERT_TRUE(join(a, b));
	Region src(pa.get(), kLen, kMrAll, 1);
	Region dst(pb.get(), kLen, kMrAll, 2);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	EXPECT_EQ(src.mr->pd, pa.get());

	ASSERT_NO_FATAL_FAILURE(send_checked(a, src, b.qp.get(), b.rcq.get(),
					     dst));

	ASSERT_NO_FATAL_FAILURE(write_checked(a, src, dst, 2, 3));

	fill(dst.buf.data(), kLen, 4);
	ibv_sge s = src.sge(0, kLen);
	ASSERT_EQ(post(a.qp.get(), {rdma_wr(3, IBV_WR_RDMA_READ, &s, 1,
					    dst.buf.addr(), dst.mr->rkey)}),
		  0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {ok(3, IBV_WC_RDMA_READ, a.qp.get(), kLen)}));
	EXPECT_TRUE(same(src.buf.data(), dst.buf.data(), kLen, "read"));
}

// An SRQ and an extended CQ made on a parent domain serve a QP of the PD.
TEST_F(Pdomain, SrqAndCqExOnParentDomain)
{
	Td td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_TRUE(td);
	ParentDomain p = pdom(td.get());
	ASSERT_TRUE(p) << std::strerror(errno);
	ibv_cq_init_attr_ex ca{};
	ca.cqe = 64;
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = p.get();
	CqEx cqx(ibv_create_cq_ex(ctx_.get(), &ca));
	ASSERT_TRUE(cqx) << "ibv_create_cq_ex: " << std::strerror(errno);
	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	Srq srq(ibv_create_srq(p.get(), &sa));
	ASSERT_TRUE(srq) << "ibv_create_srq: " << std::strerror(errno);
	EXPECT_EQ(srq->pd, p.get());

	End a, b;
	ASSERT_TRUE(make_end(a, pd_.get()));
	b.scq.reset(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(b.scq);
	ibv_qp_init_attr qa{};
	qa.send_cq = b.scq.get();
	qa.recv_cq = ibv_cq_ex_to_cq(cqx.get());
	qa.srq = srq.get();
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	b.qp.reset(ibv_create_qp(p.get(), &qa));
	ASSERT_TRUE(b.qp) << "ibv_create_qp: " << std::strerror(errno);
	ASSERT_TRUE(join(a, b));
	Region src(pd_.get(), kLen, kMrAll, 5);
	Region dst(p.get(), kLen, kMrAll, 6);
	ASSERT_TRUE(src && dst);
	ASSERT_NO_FATAL_FAILURE(send_checked(a, src, b.qp.get(),
					     ibv_cq_ex_to_cq(cqx.get()), dst,
					     srq.get()));
	b.qp.reset();
}

// An MR registered on a parent domain is an MR of its PD: QPs made on the
// plain PD use it on both sides (local lkey and remote rkey).
TEST_F(Pdomain, MrOnParentDomainServesQpsOfThePd)
{
	ParentDomain p = pdom(nullptr);
	ASSERT_TRUE(p) << std::strerror(errno);
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(p.get(), kLen, kMrAll, 8);
	Region dst(p.get(), kLen, kMrAll, 9);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	ASSERT_NO_FATAL_FAILURE(send_checked(a, src, b.qp.get(), b.rcq.get(),
					     dst));
	ASSERT_NO_FATAL_FAILURE(write_checked(a, src, dst, 2, 10));
}

TEST_F(Pdomain, TdAndPdInUseAreBusyUntilTheParentDomainGoes)
{
	Pd pd(ibv_alloc_pd(ctx_.get()));
	Td td(ibv_alloc_td(ctx_.get(), nullptr));
	ASSERT_TRUE(pd && td);
	ParentDomain p = pdom(td.get(), nullptr, pd.get());
	ASSERT_TRUE(p) << std::strerror(errno);
	EXPECT_EQ(ibv_dealloc_td(td.get()), EBUSY);
	EXPECT_EQ(ibv_dealloc_pd(pd.get()), EBUSY);
	// Still whole: an AH on the parent domain is the PD's.
	ibv_ah_attr aa = ah_attr(gid_, gid_index_);
	Ah ah(ibv_create_ah(p.get(), &aa));
	ASSERT_TRUE(ah) << "ibv_create_ah: " << std::strerror(errno);
	EXPECT_EQ(ah->pd, p.get());
	// The kernel keeps a PD its AH uses, whichever domain made it.
	ASSERT_EQ(ibv_dealloc_pd(p.release()), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd.get()), EBUSY);
	ah.reset();
	EXPECT_EQ(ibv_dealloc_td(td.release()), 0);
	EXPECT_EQ(ibv_dealloc_pd(pd.release()), 0);
}

// The allocators: every alloc is matched by a free once the objects are
// gone.  sroce's own memory per object is the object itself and its rings
// are the kernel's, so it never calls them (provider.md).
class PdomainAllocators : public Pdomain,
			  public ::testing::WithParamInterface<bool> {};

TEST_P(PdomainAllocators, EveryAllocIsFreedAndDataMoves)
{
	Allocs allocs;
	allocs.use_default = GetParam();
	{
		Td td(ibv_alloc_td(ctx_.get(), nullptr));
		ASSERT_TRUE(td);
		ParentDomain p = pdom(td.get(), &allocs);
		ASSERT_TRUE(p) << std::strerror(errno);
		ibv_cq_init_attr_ex ca{};
		ca.cqe = 64;
		ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
		ca.parent_domain = p.get();
		CqEx cqx(ibv_create_cq_ex(ctx_.get(), &ca));
		ASSERT_TRUE(cqx) << std::strerror(errno);
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 4;
		sa.attr.max_sge = 1;
		Srq srq(ibv_create_srq(p.get(), &sa));
		ASSERT_TRUE(srq) << std::strerror(errno);
		End a, b;
		ASSERT_TRUE(make_end(a, p.get()));
		ASSERT_TRUE(make_end(b, pd_.get()));
		ASSERT_TRUE(join(a, b));
		Region src(p.get(), kLen, kMrAll, 11);
		Region dst(pd_.get(), kLen, kMrAll, 12);
		ASSERT_TRUE(src && dst);
		ASSERT_NO_FATAL_FAILURE(send_checked(a, src, b.qp.get(),
						     b.rcq.get(), dst));
	}
	for (const auto &[type, n] : allocs.alloc)
		EXPECT_EQ(allocs.free[type], allocs.use_default ? 0 : n)
			<< "resource type 0x" << std::hex << type;
	EXPECT_TRUE(allocs.live.empty()) << allocs.live.size()
					 << " buffers never freed";
	if (testing_sroce()) {
		EXPECT_TRUE(allocs.alloc.empty())
			<< "sroce called the allocator";
		EXPECT_TRUE(allocs.free.empty()) << "sroce called free";
	}
}

INSTANTIATE_TEST_SUITE_P(Pdomain, PdomainAllocators, ::testing::Bool(),
			 [](const ::testing::TestParamInfo<bool> &i) {
				 return std::string(i.param ? "UseDefault"
							    : "Own");
			 });

} // namespace
} // namespace sroce::test::rc
