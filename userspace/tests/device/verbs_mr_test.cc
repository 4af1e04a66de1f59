// Memory regions on a live sroce device, run inside a test-bed guest as
// root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='MemoryRegion.*'
// Registration goes through libibverbs, the provider and ib_uverbs to
// sroce.ko, which pins the memory and chooses the keys.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"

namespace sroce::test {
namespace {

// Page-aligned anonymous memory, unmapped on destruction.
class Buffer {
public:
	explicit Buffer(size_t len, int prot = PROT_READ | PROT_WRITE,
			int extra_flags = 0)
		: len_(len)
	{
		void *p = mmap(nullptr, len, prot,
			       MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
		p_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
	}
	~Buffer()
	{
		if (p_)
			munmap(p_, len_);
	}
	Buffer(const Buffer &) = delete;
	Buffer &operator=(const Buffer &) = delete;

	char *get() const { return p_; }

private:
	char *p_;
	size_t len_;
};

class MemoryRegion : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_, &name_));
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		ASSERT_TRUE(page_.get());
	}

	// Registration that must fail; returns its errno.
	int reg_error(void *addr, size_t len, int access)
	{
		errno = 0;
		Mr mr(ibv_reg_mr(pd_.get(), addr, len, access));
		EXPECT_FALSE(mr) << "access 0x" << std::hex << access;
		return errno;
	}

	std::string name_;
	Context ctx_;
	Pd pd_;
	Buffer page_{4096};
};

// Every combination of the five supported rights that ib_core accepts:
// remote write and remote atomic need local write.
std::vector<int> valid_access_sets()
{
	std::vector<int> sets;

	for (int a = 0; a < 32; a++)
		if (!(a & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) ||
		    (a & IBV_ACCESS_LOCAL_WRITE))
			sets.push_back(a);
	return sets;
}

TEST_F(MemoryRegion, ReportsLimits)
{
	ibv_device_attr attr{};

	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	EXPECT_EQ(attr.max_mr, 1 << 16);
	EXPECT_EQ(attr.max_mr_size, uint64_t{1} << 36);
}

TEST_F(MemoryRegion, RegistersAnySizeWithEveryValidAccess)
{
	Buffer big(1 << 20);
	struct Range {
		const char *what;
		char *addr;
		size_t len;
	};
	const Range ranges[] = {
		{"1 byte", page_.get() + 100, 1},
		{"one page", page_.get(), 4096},
		{"1 MiB", big.get(), 1 << 20},
		{"unaligned, 3 pages", big.get() + 4093, 2 * 4096 + 7},
	};

	ASSERT_TRUE(big.get());
	for (const Range &r : ranges) {
		for (int access : valid_access_sets()) {
			Mr mr(ibv_reg_mr(pd_.get(), r.addr, r.len, access));

			ASSERT_TRUE(mr) << r.what << ", access 0x" << std::hex
					<< access << ": " << std::strerror(errno);
			EXPECT_EQ(mr->lkey, mr->rkey) << r.what;
			EXPECT_NE(mr->lkey, 0u) << r.what;
			EXPECT_EQ(mr->addr, r.addr);
			EXPECT_EQ(mr->length, r.len);
			EXPECT_EQ(mr->pd, pd_.get());
		}
	}
}

// perftest always asks for relaxed ordering; optional bits are hints.
TEST_F(MemoryRegion, IgnoresOptionalAccessBits)
{
	Mr ro(ibv_reg_mr(pd_.get(), page_.get(), 4096,
			       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_RELAXED_ORDERING));
	EXPECT_TRUE(ro) << std::strerror(errno);
	// Another optional bit nobody defines yet.
	Mr other(ibv_reg_mr(pd_.get(), page_.get(), 4096,
				  IBV_ACCESS_OPTIONAL_FIRST << 3));
	EXPECT_TRUE(other) << std::strerror(errno);
}

TEST_F(MemoryRegion, RejectsRemoteWriteOrAtomicWithoutLocalWrite)
{
	EXPECT_EQ(reg_error(page_.get(), 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL);
	EXPECT_EQ(reg_error(page_.get(), 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
	EXPECT_EQ(reg_error(page_.get(), 4096,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		  EINVAL);
}

TEST_F(MemoryRegion, RejectsUnknownAndUnsupportedAccessBits)
{
	// Unknown to ib_core: refused before sroce sees it.
	EXPECT_EQ(reg_error(page_.get(), 4096, 1 << 15), EINVAL);
	// Known to ib_core, not implemented by sroce.
	EXPECT_EQ(reg_error(page_.get(), 4096,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED),
		  EOPNOTSUPP);
	EXPECT_EQ(reg_error(page_.get(), 4096, IBV_ACCESS_HUGETLB), EOPNOTSUPP);
	// No ODP capability: 6.1's ib_core says EINVAL, 6.12's EOPNOTSUPP.
	const int odp = reg_error(page_.get(), 4096, IBV_ACCESS_ON_DEMAND);
	EXPECT_TRUE(odp == EINVAL || odp == EOPNOTSUPP) << std::strerror(odp);
}

TEST_F(MemoryRegion, RejectsEmptyAndOversizedRanges)
{
	ibv_device_attr attr{};

	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	EXPECT_EQ(reg_error(page_.get(), 0, IBV_ACCESS_LOCAL_WRITE), EINVAL);

	// Address space only: the size check comes before any pinning.
	const size_t len = attr.max_mr_size + 4096;
	Buffer huge(len, PROT_READ, MAP_NORESERVE);
	ASSERT_TRUE(huge.get()) << std::strerror(errno);
	EXPECT_EQ(reg_error(huge.get(), len, 0), EINVAL);
}

// Keys must not let a peer guess other MRs' rkeys: distinct, never 0, no
// constant stride, and spread over all 32 bits.
TEST_F(MemoryRegion, KeysAreDistinctAndUnpredictable)
{
	constexpr int kCount = 1000;
	std::vector<Mr> mrs;
	std::vector<uint32_t> keys;

	for (int i = 0; i < kCount; i++) {
		mrs.emplace_back(ibv_reg_mr(pd_.get(), page_.get(), 4096,
					    IBV_ACCESS_LOCAL_WRITE));
		ASSERT_TRUE(mrs.back()) << i << ": " << std::strerror(errno);
		ASSERT_EQ(mrs.back()->lkey, mrs.back()->rkey);
		keys.push_back(mrs.back()->lkey);
	}

	std::set<uint32_t> distinct(keys.begin(), keys.end());
	std::set<uint32_t> strides, high, low;
	int rising = 0;

	EXPECT_EQ(distinct.size(), keys.size()) << "duplicate keys";
	EXPECT_EQ(distinct.count(0), 0u) << "key 0 handed out";
	for (int i = 1; i < kCount; i++) {
		strides.insert(keys[i] - keys[i - 1]);
		rising += keys[i] > keys[i - 1];
	}
	for (uint32_t k : keys) {
		high.insert(k >> 24);
		low.insert(k & 0xff);
	}
	// Random keys: ~999 strides, ~250 of 256 top and bottom bytes, about
	// half of the steps going up.
	EXPECT_GT(strides.size(), 990u) << "keys follow a pattern";
	EXPECT_GT(high.size(), 200u) << "high bits barely vary";
	EXPECT_GT(low.size(), 200u) << "low bits barely vary";
	EXPECT_GT(rising, kCount / 4);
	EXPECT_LT(rising, kCount * 3 / 4);
}

// The debugfs leak counter follows registrations and returns to where it
// was once they are deregistered.
TEST_F(MemoryRegion, DeregReleasesEveryMr)
{
	const long before = debugfs_count("mrs");
	std::vector<Mr> mrs;

	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("debugfs object counts");
	ASSERT_GE(before, 0);
	for (int i = 0; i < 10; i++) {
		mrs.emplace_back(ibv_reg_mr(pd_.get(), page_.get(), 4096,
					    IBV_ACCESS_LOCAL_WRITE));
		ASSERT_TRUE(mrs.back()) << std::strerror(errno);
	}
	EXPECT_EQ(debugfs_count("mrs"), before + 10);
	for (auto &mr : mrs)
		ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	EXPECT_EQ(debugfs_count("mrs"), before);

	// Closing a context deregisters what it left behind.
	{
		Context other = open_device(name_);
		ASSERT_TRUE(other);
		Pd pd(ibv_alloc_pd(other.get()));
		ASSERT_TRUE(pd);
		for (int i = 0; i < 5; i++)
			ASSERT_TRUE(ibv_reg_mr(pd.get(), page_.get(), 4096, 0));
		EXPECT_EQ(debugfs_count("mrs"), before + 5);
		// The MRs are leaked on purpose: ibv_close_device() below
		// destroys them in the kernel (the PD with them).
		pd.release();
	}
	EXPECT_EQ(debugfs_count("mrs"), before);
}

// A PD handle is only meaningful in the context that allocated it: the same
// number sent on another context's command file does not name that PD.
TEST_F(MemoryRegion, RejectsAPdOfAnotherContext)
{
	Context fresh = open_device(name_);
	Context other = open_device(name_);
	ASSERT_TRUE(fresh && other);
	Pd foreign(ibv_alloc_pd(other.get()));
	ASSERT_TRUE(foreign);

	// other's PD, as if it belonged to fresh, which has no objects.
	ibv_pd forged = *foreign;
	forged.context = fresh.get();
	errno = 0;
	Mr mr(ibv_reg_mr(&forged, page_.get(), 4096, 0));
	EXPECT_FALSE(mr);
	// ib_uverbs' answer to a handle that names no object here.
	EXPECT_EQ(errno, ENOENT) << std::strerror(errno);

	Mr own(ibv_reg_mr(foreign.get(), page_.get(), 4096, 0));
	EXPECT_TRUE(own) << std::strerror(errno);
}

// max_mr is a real limit: exactly that many MRs fit (counting any other
// live MR of this device), the next fails with ENOMEM, freeing one makes
// room again.
TEST_F(MemoryRegion, EnforcesMaxMr)
{
	ibv_device_attr attr{};
	const long before = debugfs_count("mrs");
	std::vector<Mr> mrs;

	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("debugfs object counts");
	ASSERT_GE(before, 0);
	mrs.reserve(attr.max_mr);
	for (long i = before; i < attr.max_mr; i++) {
		mrs.emplace_back(ibv_reg_mr(pd_.get(), page_.get(), 4096, 0));
		ASSERT_TRUE(mrs.back()) << "MR " << i << ": "
					<< std::strerror(errno);
	}
	errno = 0;
	Mr extra(ibv_reg_mr(pd_.get(), page_.get(), 4096, 0));
	EXPECT_FALSE(extra);
	EXPECT_EQ(errno, ENOMEM);
	mrs.pop_back();
	Mr retry(ibv_reg_mr(pd_.get(), page_.get(), 4096, 0));
	EXPECT_TRUE(retry) << std::strerror(errno);
}

} // namespace
} // namespace sroce::test
