// Thread domains and parent domains (Pdomain.*, part of
// verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Pdomain.*'
// A parent domain stands in for its PD everywhere (ibv_alloc_parent_domain(3)):
// QPs, SRQs, CQs (IBV_CQ_INIT_ATTR_MASK_PD), MRs and AHs made through it
// are the PD's, and a TD or PD a parent domain uses cannot go.  Two RC QPs
// of the device under test are connected through its own GID as in Rc*
// (verbs_rc_fixture.h) and the data they move is checked byte for byte.
// rdma_rxe's provider has no TDs or parent domains: there every case skips.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test::rc {
namespace {

constexpr size_t kLen = 8192;

// A parent domain is an ibv_pd, freed by ibv_dealloc_pd() like any PD.
using ParentDomain = Pd;

// Calls of the custom allocators, per resource type; what alloc handed
// out that free has not taken back yet.
struct Allocs {
	bool use_default = false;
	std::map<uint64_t, int> alloc, free;
	std::map<void *, uint64_t> live;
};

void *counting_alloc(ibv_pd *, void *c, size_t size, size_t align,
		     uint64_t type)
{
	auto *a = static_cast<Allocs *>(c);
	a->alloc[type]++;
	if (a->use_default)
		return IBV_ALLOCATOR_USE_DEFAULT;
	void *p = nullptr;
	if (posix_memalign(&p, std::max<size_t>(align, sizeof(void *)), size))
		return nullptr;
	std::memset(p, 0, size);
	a->live[p] = type;
	return p;
}

void counting_free(ibv_pd *, void *c, void *p, uint64_t type)
{
	auto *a = static_cast<Allocs *>(c);
	a->free[type]++;
	a->live.erase(p);
	std::free(p);
}

class Pdomain : public Rc {
protected:
	void SetUp() override
	{
		Rc::SetUp();
		if (HasFatalFailure() || IsSkipped())
			return;
		ibv_td_init_attr ta{};
		errno = 0;
		Td td(ibv_alloc_td(ctx_.get(), &ta));
		if (!td && errno == EOPNOTSUPP && !testing_sroce())
			GTEST_SKIP() << not_sroce("thread or parent domains");
		ASSERT_TRUE(td) << "ibv_alloc_td: " << std::strerror(errno);
	}

	// A parent domain of pd_ (or pd) with td and, if given, allocators.
	ParentDomain pdom(ibv_td *td, Allocs *allocs = nullptr,
			  ibv_pd *pd = nullptr)
	{
		ibv_parent_domain_init_attr a{};
		a.pd = pd ? pd : pd_.get();
		a.td = td;
		if (allocs) {
			a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				      IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
			a.alloc = counting_alloc;
			a.free = counting_free;
			a.pd_context = allocs;
		}
		return ParentDomain(ibv_alloc_parent_domain(ctx_.get(), &a));
	}

	::testing::AssertionResult join(End &a, End &b)
	{
		::testing::AssertionResult r =
			connect(a.qp.get(), b->qp_num, gid_, gid_index_,
				with_mtu({}));
		if (r)
			r = connect(b.qp.get(), a->qp_num, gid_, gid_index_,
				    with_mtu({}));
		return r;
	}

	// a SENDs kLen bytes of src to a receive into dst posted on b (on
	// its SRQ if srq is given, completing on rcq), and dst holds them.
	void send_checked(End &a, const Region &src, ibv_qp *b, ibv_cq *rcq,
			  Region &dst, ibv_srq *srq = nullptr)
	{
		ibv_sge rs = dst.sge(0, kLen);
		ibv_recv_wr rwr{};
		rwr.wr_id = 7;
		rwr.sg_list = &rs;
		rwr.num_sge = 1;
		ibv_recv_wr *bad = nullptr;
		if (srq)
			ASSERT_EQ(ibv_post_srq_recv(srq, &rwr, &bad), 0);
		else
			ASSERT_EQ(ibv_post_recv(b, &rwr, &bad), 0);
		ibv_sge ss = src.sge(0, kLen);
		ASSERT_EQ(post(a.qp.get(), {send_wr(1, &ss, 1)}), 0);
		EXPECT_TRUE(completes(a.scq.get(),
				      {ok(1, IBV_WC_SEND, a.qp.get())}));
		EXPECT_TRUE(completes(rcq, {ok(7, IBV_WC_RECV, b, kLen)}));
		EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), kLen,
				 "received data"));
	}

	// src, refilled from seed, RDMA WRITten into dst by a (WR id), checked.
	void write_checked(End &a, Region &src, const Region &dst, uint64_t id,
			   int seed)
	{
		fill(src.buf.data(), kLen, seed);
		ibv_sge s = src.sge(0, kLen);
		ASSERT_EQ(post(a.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_WRITE, &s, 1,
					dst.buf.addr(), dst.mr->rkey)}),
			  0);
		EXPECT_TRUE(completes(a.scq.get(),
				      {ok(id, IBV_WC_RDMA_WRITE, a.qp.get())}));
		EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), kLen,
				 "written"));
	}
};

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
