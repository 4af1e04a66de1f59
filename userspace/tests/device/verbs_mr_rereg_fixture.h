// The fixture of the re-registration cases (MrRereg.*, part of
// verbs_device_tests; the conventions of the checks are in
// verbs_rc_fixture.h), shared by verbs_mr_rereg_test.cc and the parent-
// domain cases of verbs_pdomain_objects_test.cc: QP b owns the memory, QP a
// reaches it with RDMA WRITE and READ, and a refused access ends a's QP in
// the error state.
#ifndef SROCE_TEST_VERBS_MR_REREG_FIXTURE_H
#define SROCE_TEST_VERBS_MR_REREG_FIXTURE_H

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "test_env.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test::rc {

class MrRereg : public Rc {
protected:
	static constexpr size_t kLen = 8192;

	// ibv_rereg_mr(), skipping the case (outside sroce) if the device
	// does not do what flags ask; the return value, errno in *e.
	int rereg(ibv_mr *mr, int flags, ibv_pd *pd, void *addr, size_t len,
		  int access, int *e = nullptr)
	{
		errno = 0;
		const int r = ibv_rereg_mr(mr, flags, pd, addr, len, access);
		const int saved = errno;
		if (r && saved == EOPNOTSUPP && !testing_sroce())
			unsupported_ = true;
		if (e)
			*e = saved;
		return r;
	}

	// a and b connected, and the MR of b's buffer.
	void SetUpPair(int access = kMrAll)
	{
		ASSERT_TRUE(pair(a_, b_));
		mem_ = Region(pd_.get(), kLen, access, 1);
		ASSERT_TRUE(mem_) << std::strerror(errno);
	}

	// a WRITEs n bytes of its pattern 9 to remote address raddr.
	::testing::AssertionResult write(uint64_t id, uint64_t raddr,
					 uint32_t rkey, uint32_t n,
					 ibv_wc_status st = IBV_WC_SUCCESS)
	{
		if (!src_) {
			src_ = Region(pd_.get(), kLen, kMrAll, 9);
			if (!src_)
				return ::testing::AssertionFailure()
				       << "ibv_reg_mr: " << std::strerror(errno);
		}
		ibv_sge s = src_.sge(0, n);
		if (const int r = post(a_.qp.get(),
				       {rdma_wr(id, IBV_WR_RDMA_WRITE, &s, 1,
						raddr, rkey)}))
			return ::testing::AssertionFailure()
			       << "post: " << err_str(r);
		if (st == IBV_WC_SUCCESS)
			return completes(a_.scq.get(),
					 {ok(id, IBV_WC_RDMA_WRITE, a_.qp.get())});
		return completes(a_.scq.get(), {err(id, st, a_.qp.get())});
	}

	// a READs n bytes at raddr into its buffer dst (from offset 0).
	::testing::AssertionResult read(uint64_t id, Region &dst, uint64_t raddr,
					uint32_t rkey, uint32_t n,
					ibv_wc_status st = IBV_WC_SUCCESS)
	{
		ibv_sge s = dst.sge(0, n);
		if (const int r = post(a_.qp.get(),
				       {rdma_wr(id, IBV_WR_RDMA_READ, &s, 1,
						raddr, rkey)}))
			return ::testing::AssertionFailure()
			       << "post: " << err_str(r);
		if (st == IBV_WC_SUCCESS)
			return completes(a_.scq.get(),
					 {ok(id, IBV_WC_RDMA_READ, a_.qp.get(),
					     n)});
		return completes(a_.scq.get(), {err(id, st, a_.qp.get())});
	}

	End a_, b_;
	Region mem_, src_;
	bool unsupported_ = false;
};

#define SKIP_IF_UNSUPPORTED(what)                                             \
	do {                                                                  \
		if (unsupported_)                                             \
			GTEST_SKIP() << not_sroce("ibv_rereg_mr " what);      \
	} while (0)

} // namespace sroce::test::rc

#endif
