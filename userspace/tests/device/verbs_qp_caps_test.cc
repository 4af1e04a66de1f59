// QPs created with capabilities drawn at random inside what the device
// advertises (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='QpCaps.*'
// Every combination inside the limits must be created and must report
// capacities at least as large as asked for, never above the limits, the
// same in ibv_query_qp().  SROCE_TEST_SEED repeats a run (each run prints
// its seed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "test_env.h"
#include "verbs_raii.h"

namespace sroce::test {
namespace {

constexpr int kQps = 200;
// Work requests drawn at most: sroce's limit (16384) is below it; rdma_rxe
// advertises 2^20, whose queues a test guest of 1 GiB cannot hold (ENOMEM).
constexpr uint32_t kMaxWrDrawn = 1u << 16;

class QpCaps : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		cq_.reset(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(cq_) << std::strerror(errno);
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		srq_.reset(ibv_create_srq(pd_.get(), &sa));
		ASSERT_TRUE(srq_) << std::strerror(errno);
	}

	ibv_qp_init_attr_ex base(ibv_qp_type type)
	{
		ibv_qp_init_attr_ex a{};
		a.send_cq = cq_.get();
		a.recv_cq = cq_.get();
		a.qp_type = type;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd_.get();
		return a;
	}

	// The largest max_inline_data a QP of this type is created with:
	// libibverbs has no attribute for it, so ask the device.
	uint32_t max_inline(ibv_qp_type type)
	{
		uint32_t lo = 0, hi = 1u << 16;

		while (lo < hi) {
			const uint32_t mid = lo + (hi - lo + 1) / 2;
			ibv_qp_init_attr_ex a = base(type);
			a.cap = {1, 1, 1, 1, mid};
			Qp qp(ibv_create_qp_ex(ctx_.get(), &a));
			if (qp)
				lo = mid;
			else
				hi = mid - 1;
		}
		return lo;
	}

	// The send operations a QP of this type may ask for, by the device's
	// attributes: UD sends only; UC adds RDMA WRITE; RC adds READ, and
	// atomics, memory windows and invalidation where advertised.
	uint64_t send_ops(ibv_qp_type type) const
	{
		uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

		if (type == IBV_QPT_UD)
			return ops;
		ops |= IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		if (type != IBV_QPT_RC)
			return ops;
		ops |= IBV_QP_EX_WITH_RDMA_READ;
		if (dev_.atomic_cap != IBV_ATOMIC_NONE)
			ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		if (dev_.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS)
			ops |= IBV_QP_EX_WITH_LOCAL_INV |
			       IBV_QP_EX_WITH_SEND_WITH_INV;
		if (dev_.device_cap_flags & IBV_DEVICE_MEM_WINDOW)
			ops |= IBV_QP_EX_WITH_BIND_MW;
		return ops;
	}

	Context ctx_;
	ibv_device_attr dev_{};
	Pd pd_;
	Cq cq_;
	Srq srq_;
};

// A count in [0, max], small and large values alike: a power-of-two
// scale first, then a value inside it.
uint32_t draw(std::mt19937 &rng, uint32_t max)
{
	if (max == 0)
		return 0;
	int bits = 0;
	while (bits < 31 && (1u << bits) <= max)
		bits++;
	const uint32_t top = std::uniform_int_distribution<int>(0, bits)(rng);
	const uint32_t hi = top >= 31 ? max : std::min(max, (1u << top) - 1);
	return std::uniform_int_distribution<uint32_t>(0, hi)(rng);
}

// A random subset of the bits of mask.
uint64_t subset(std::mt19937 &rng, uint64_t mask)
{
	return mask & std::uniform_int_distribution<uint64_t>()(rng);
}

TEST_F(QpCaps, RandomCapsInsideTheLimitsAreAllCreated)
{
	const char *env = std::getenv("SROCE_TEST_SEED");
	const uint32_t seed = env ? uint32_t(std::strtoul(env, nullptr, 0)) :
				    std::random_device{}();
	std::cout << "[ seed     ] SROCE_TEST_SEED=" << seed << std::endl;
	std::mt19937 rng(seed);
	const ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	uint32_t inl[3];

	for (int t = 0; t < 3; t++) {
		inl[t] = max_inline(types[t]);
		if (testing_sroce()) {
			EXPECT_EQ(inl[t], 512u) << "sroce's inline limit";
		}
	}
	const uint32_t max_wr = uint32_t(dev_.max_qp_wr);
	const uint32_t max_sge = uint32_t(dev_.max_sge);
	const uint32_t wr_drawn = std::min(max_wr, kMaxWrDrawn);
	for (int i = 0; i < kQps; i++) {
		const int t = std::uniform_int_distribution<int>(0, 2)(rng);
		ibv_qp_init_attr_ex a = base(types[t]);
		a.cap.max_send_wr = draw(rng, wr_drawn);
		a.cap.max_recv_wr = draw(rng, wr_drawn);
		a.cap.max_send_sge = draw(rng, max_sge);
		a.cap.max_recv_sge = draw(rng, max_sge);
		a.cap.max_inline_data = draw(rng, inl[t]);
		a.sq_sig_all = int(rng() & 1);
		if (rng() % 4 == 0) {
			a.srq = srq_.get();
		}
		if (rng() & 1) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = subset(rng, send_ops(types[t])) |
					   IBV_QP_EX_WITH_SEND;
		}
		const ibv_qp_cap want = a.cap;
		SCOPED_TRACE(testing::Message()
			     << "QP " << i << " type " << types[t] << " send "
			     << want.max_send_wr << "x" << want.max_send_sge
			     << " inline " << want.max_inline_data << " recv "
			     << want.max_recv_wr << "x" << want.max_recv_sge
			     << (a.srq ? " srq" : "") << " ops 0x" << std::hex
			     << a.send_ops_flags);

		Qp qp(ibv_create_qp_ex(ctx_.get(), &a));
		ASSERT_TRUE(qp) << std::strerror(errno);
		EXPECT_GE(a.cap.max_send_wr, want.max_send_wr);
		EXPECT_LE(a.cap.max_send_wr, max_wr);
		EXPECT_GE(a.cap.max_send_sge, want.max_send_sge);
		EXPECT_LE(a.cap.max_send_sge, max_sge);
		EXPECT_GE(a.cap.max_inline_data, want.max_inline_data);
		if (!a.srq) {
			EXPECT_GE(a.cap.max_recv_wr, want.max_recv_wr);
			EXPECT_LE(a.cap.max_recv_wr, max_wr);
			EXPECT_GE(a.cap.max_recv_sge, want.max_recv_sge);
			EXPECT_LE(a.cap.max_recv_sge, max_sge);
		}

		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		ASSERT_EQ(ibv_query_qp(qp.get(), &qa, IBV_QP_CAP, &qi), 0);
		EXPECT_EQ(qi.cap.max_send_wr, a.cap.max_send_wr);
		EXPECT_EQ(qi.cap.max_send_sge, a.cap.max_send_sge);
		EXPECT_EQ(qi.cap.max_inline_data, a.cap.max_inline_data);
		if (!a.srq) {
			EXPECT_EQ(qi.cap.max_recv_wr, a.cap.max_recv_wr);
			EXPECT_EQ(qi.cap.max_recv_sge, a.cap.max_recv_sge);
		}
		if (HasFailure())
			break;
	}
}

} // namespace
} // namespace sroce::test
