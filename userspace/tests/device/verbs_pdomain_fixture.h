// The fixtures of the thread- and parent-domain cases (part of
// verbs_device_tests), shared by verbs_pdomain_test.cc (Pdomain*: RC QPs,
// SRQs, CQs, MRs, allocators) and verbs_pdomain_objects_test.cc (memory
// windows, re-registration and UD on parent domains):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Pdomain*'
// A parent domain stands in for its PD everywhere (ibv_alloc_parent_domain(3)):
// what is made through it is the PD's, and a TD or PD a parent domain uses
// cannot go.  WithParentDomains<Base> adds parent domains to a fixture
// with a context ctx_ and a PD pd_ (rc::Rc, rc::MrRereg, ud::Ud) and skips
// its cases where the provider has no TDs or parent domains (rdma_rxe's).
//
// Objects made through a parent domain do not hold it: a fixture frees
// them before the parent domain (in TearDown() when they are members of
// Base, which outlive the derived fixture's own).
#ifndef SROCE_TEST_VERBS_PDOMAIN_FIXTURE_H
#define SROCE_TEST_VERBS_PDOMAIN_FIXTURE_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test {

// A parent domain is an ibv_pd, freed by ibv_dealloc_pd() like any PD.
using ParentDomain = Pd;

// Calls of the custom allocators, per resource type; what alloc handed
// out that free has not taken back yet.
struct Allocs {
	bool use_default = false;
	std::map<uint64_t, int> alloc, free;
	std::map<void *, uint64_t> live;
};

inline void *counting_alloc(ibv_pd *, void *c, size_t size, size_t align,
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

inline void counting_free(ibv_pd *, void *c, void *p, uint64_t type)
{
	auto *a = static_cast<Allocs *>(c);
	a->free[type]++;
	a->live.erase(p);
	std::free(p);
}

// Base with parent domains: its cases skip, saying so, on a provider
// without TDs (outside sroce; on sroce that is a failure).
template <typename Base> class WithParentDomains : public Base {
protected:
	void SetUp() override
	{
		Base::SetUp();
		if (this->HasFatalFailure() || this->IsSkipped())
			return;
		ibv_td_init_attr ta{};
		errno = 0;
		Td td(ibv_alloc_td(this->ctx_.get(), &ta));
		if (!td && errno == EOPNOTSUPP && !testing_sroce())
			GTEST_SKIP() << not_sroce("thread or parent domains");
		ASSERT_TRUE(td) << "ibv_alloc_td: " << std::strerror(errno);
	}

	// A parent domain of pd_ (or pd) with td and, if given, allocators.
	ParentDomain pdom(ibv_td *td, Allocs *allocs = nullptr,
			  ibv_pd *pd = nullptr)
	{
		ibv_parent_domain_init_attr a{};
		a.pd = pd ? pd : this->pd_.get();
		a.td = td;
		if (allocs) {
			a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				      IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
			a.alloc = counting_alloc;
			a.free = counting_free;
			a.pd_context = allocs;
		}
		return ParentDomain(ibv_alloc_parent_domain(this->ctx_.get(),
							    &a));
	}

	// td_ and pdom_, a parent domain of pd_ with it (on sroce its QPs
	// post without a lock).  What is made through them must go before
	// them, in the derived fixture's TearDown().
	void make_td_pdom()
	{
		td_.reset(ibv_alloc_td(this->ctx_.get(), nullptr));
		ASSERT_TRUE(td_) << "ibv_alloc_td: " << std::strerror(errno);
		pdom_ = pdom(td_.get());
		ASSERT_TRUE(pdom_) << "ibv_alloc_parent_domain: "
				   << std::strerror(errno);
	}

	Td td_;
	ParentDomain pdom_;
};

namespace rc {

// Two RC QPs of the device under test connected through its own GID as
// in Rc* (verbs_rc_fixture.h), moving data that is checked byte for byte.
class Pdomain : public WithParentDomains<Rc> {
protected:
	static constexpr size_t kLen = 8192;

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

} // namespace rc
} // namespace sroce::test

#endif
