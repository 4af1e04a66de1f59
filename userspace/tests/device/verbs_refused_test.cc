// The verbs of libibverbs 44 a device does not implement must say so with
// EOPNOTSUPP, never with a misleading errno, and the device's attributes
// must not advertise them (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Refused/*'
// Documentation/provider.md has the verb-by-verb table; a verb that a
// device does advertise (rdma_rxe's, or sroce's once implemented) is
// skipped here with the attribute that advertises it, and tested where it
// works.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "test_env.h"
#include "verbs_raii.h"

namespace sroce::test {
namespace {

struct Objects {
	ibv_context *ctx;
	ibv_pd *pd;
	ibv_cq *cq;
	ibv_qp *qp;
	ibv_srq *srq;
	ibv_mr *mr;
};

struct RefusedCase {
	const char *name;
	// Why the device may have it: non-empty if its attributes advertise
	// the verb, which is then tested elsewhere, not here.
	std::function<std::string(const ibv_device_attr_ex &)> advertised;
	// The call, made with valid arguments; the errno-style result (the
	// return value, or errno after a NULL), 0 if it worked.
	std::function<int(const Objects &)> call;
};

std::string never(const ibv_device_attr_ex &) { return ""; }

// errno after a constructor that returned p (0 if it returned an object,
// which is then released with destroy).
template <typename T, typename D>
int ctor_errno(T *p, D destroy)
{
	if (p) {
		destroy(p);
		return 0;
	}
	return errno;
}

class Refused : public ::testing::TestWithParam<RefusedCase> {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &attr_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		cq_.reset(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_) << std::strerror(errno);
		ibv_qp_init_attr qa{};
		qa.send_cq = cq_.get();
		qa.recv_cq = cq_.get();
		qa.qp_type = IBV_QPT_RC;
		qa.cap = {4, 4, 1, 1, 0};
		qp_.reset(ibv_create_qp(pd_.get(), &qa));
		ASSERT_TRUE(qp_) << std::strerror(errno);
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 4;
		sa.attr.max_sge = 1;
		srq_.reset(ibv_create_srq(pd_.get(), &sa));
		ASSERT_TRUE(srq_) << std::strerror(errno);
		mr_.reset(ibv_reg_mr(pd_.get(), buf_, sizeof(buf_),
				     IBV_ACCESS_LOCAL_WRITE));
		ASSERT_TRUE(mr_) << std::strerror(errno);
	}

	Context ctx_;
	ibv_device_attr_ex attr_{};
	Pd pd_;
	Cq cq_;
	Qp qp_;
	Srq srq_;
	Mr mr_;
	char buf_[4096] = {};
};

TEST_P(Refused, AnswersEopnotsupp)
{
	const RefusedCase &c = GetParam();
	const std::string why = c.advertised(attr_);
	if (!why.empty()) {
		GTEST_SKIP() << test_device_name() << " advertises " << why;
	}
	const Objects o{ctx_.get(), pd_.get(), cq_.get(),
			qp_.get(),  srq_.get(), mr_.get()};
	errno = 0;
	EXPECT_EQ(c.call(o), EOPNOTSUPP) << "errno " << std::strerror(errno);
}

int create_wq(const Objects &o)
{
	ibv_wq_init_attr a{};
	a.wq_type = IBV_WQT_RQ;
	a.max_wr = 4;
	a.max_sge = 1;
	a.pd = o.pd;
	a.cq = o.cq;
	return ctor_errno(ibv_create_wq(o.ctx, &a), ibv_destroy_wq);
}

int create_flow(const Objects &o)
{
	struct {
		ibv_flow_attr attr;
		ibv_flow_spec_eth eth;
	} f{};
	f.attr.type = IBV_FLOW_ATTR_NORMAL;
	f.attr.size = sizeof(f);
	f.attr.num_of_specs = 1;
	f.attr.port = 1;
	f.eth.type = IBV_FLOW_SPEC_ETH;
	f.eth.size = sizeof(f.eth);
	return ctor_errno(ibv_create_flow(o.qp, &f.attr), ibv_destroy_flow);
}

int alloc_dm(const Objects &o)
{
	ibv_alloc_dm_attr a{};
	a.length = 64;
	return ctor_errno(ibv_alloc_dm(o.ctx, &a), ibv_free_dm);
}

int create_counters(const Objects &o)
{
	ibv_counters_init_attr a{};
	return ctor_errno(ibv_create_counters(o.ctx, &a),
			  ibv_destroy_counters);
}

int modify_cq(const Objects &o)
{
	ibv_modify_cq_attr a{};
	a.attr_mask = IBV_CQ_ATTR_MODERATE;
	a.moderate.cq_count = 4;
	a.moderate.cq_period = 10;
	return ibv_modify_cq(o.cq, &a);
}

int rate_limit(const Objects &o)
{
	ibv_qp_rate_limit_attr a{};
	a.rate_limit = 1000;
	return ibv_modify_qp_rate_limit(o.qp, &a);
}

int srq_ops(const Objects &o)
{
	ibv_ops_wr op{};
	ibv_ops_wr *bad = nullptr;
	op.opcode = IBV_WR_TAG_ADD;
	return ibv_post_srq_ops(o.srq, &op, &bad);
}

int advise_mr(const Objects &o)
{
	ibv_sge sge{};
	sge.addr = uintptr_t(o.mr->addr);
	sge.length = 64;
	sge.lkey = o.mr->lkey;
	return ibv_advise_mr(o.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
}

int set_ece(const Objects &o)
{
	ibv_ece e{};
	e.vendor_id = 1;
	e.options = 1;
	return ibv_set_ece(o.qp, &e);
}

int query_ece(const Objects &o)
{
	ibv_ece e{};
	return ibv_query_ece(o.qp, &e);
}

// ibv_import_device(), _pd() and _mr() work (Import.*, verbs_import_test.cc);
// device memory, which sroce has none of, cannot be imported either.
int import_dm(const Objects &o)
{
	return ctor_errno(ibv_import_dm(o.ctx, 1), ibv_unimport_dm);
}

int alloc_null_mr(const Objects &o)
{
	return ctor_errno(ibv_alloc_null_mr(o.pd), ibv_dereg_mr);
}

int reg_dmabuf_mr(const Objects &o)
{
	return ctor_errno(ibv_reg_dmabuf_mr(o.pd, 0, 4096, 0, -1,
					    IBV_ACCESS_LOCAL_WRITE),
			  ibv_dereg_mr);
}

// The attribute named what, if on: the device advertises the verb.
std::string if_on(bool on, const char *what) { return on ? what : ""; }

std::string rss(const ibv_device_attr_ex &a)
{
	return if_on(a.rss_caps.max_rwq_indirection_tables || a.max_wq_type_rq,
		     "rss_caps or max_wq_type_rq");
}

std::string flow(const ibv_device_attr_ex &a)
{
	return if_on(a.orig_attr.device_cap_flags &
			     IBV_DEVICE_MANAGED_FLOW_STEERING,
		     "IBV_DEVICE_MANAGED_FLOW_STEERING");
}

std::string dm(const ibv_device_attr_ex &a)
{
	return if_on(a.max_dm_size, "max_dm_size");
}

std::string moderation(const ibv_device_attr_ex &a)
{
	return if_on(a.cq_mod_caps.max_cq_count, "cq_mod_caps");
}

std::string pacing(const ibv_device_attr_ex &a)
{
	return if_on(a.packet_pacing_caps.qp_rate_limit_max,
		     "packet_pacing_caps");
}

std::string tag_matching(const ibv_device_attr_ex &a)
{
	return if_on(a.tm_caps.max_num_tags, "tm_caps");
}

std::string odp(const ibv_device_attr_ex &a)
{
	return if_on(a.odp_caps.general_caps & IBV_ODP_SUPPORT,
		     "on-demand paging");
}

INSTANTIATE_TEST_SUITE_P(
	Refused, Refused,
	::testing::Values(
		RefusedCase{"ImportDm", never, import_dm},
		RefusedCase{"AllocNullMr", never, alloc_null_mr},
		RefusedCase{"RegDmabufMr", never, reg_dmabuf_mr},
		RefusedCase{"CreateWq", rss, create_wq},
		RefusedCase{"CreateFlow", flow, create_flow},
		RefusedCase{"AllocDm", dm, alloc_dm},
		RefusedCase{"CreateCounters", never, create_counters},
		RefusedCase{"ModifyCqModeration", moderation, modify_cq},
		RefusedCase{"QpRateLimit", pacing, rate_limit},
		RefusedCase{"SrqTagMatching", tag_matching, srq_ops},
		RefusedCase{"AdviseMr", odp, advise_mr},
		RefusedCase{"SetEce", never, set_ece},
		RefusedCase{"QueryEce", never, query_ece}),
	[](const ::testing::TestParamInfo<RefusedCase> &i) {
		return std::string(i.param.name);
	});

} // namespace
} // namespace sroce::test
