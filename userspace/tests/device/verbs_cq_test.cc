// Completion queues on a live sroce device, run inside a test-bed guest as
// root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='CompletionQueue.*'
// Nothing posts CQEs before QPs exist; these tests cover the life cycle,
// the limits, arming, completion channels and the ring mapping.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rdma/sroce-abi.h"
#include "test_env.h"
#include "uverbs_maps.h"
#include "verbs_raii.h"

namespace sroce::test {
namespace {

// What libfabric 1.17's ofi_rxm asks of the verbs provider for its CQ by
// default: (128 receive + 128 send WRs) x FI_UNIVERSE_SIZE 1024.
constexpr int kOfiRxmCqe = (128 + 128) * 1024;

class CompletionQueue : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &attr_), 0);
	}

	// Create, check, poll empty, destroy.
	void create_and_check(int cqe)
	{
		SCOPED_TRACE(cqe);
		Cq cq(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
		ASSERT_TRUE(cq) << std::strerror(errno);
		EXPECT_GE(cq->cqe, cqe);
		EXPECT_EQ(cq->cqe & (cq->cqe - 1), 0) << "not a power of two";
		EXPECT_LE(cq->cqe, attr_.max_cqe);
		ibv_wc wc[4];
		EXPECT_EQ(ibv_poll_cq(cq.get(), 4, wc), 0);
	}

	Context ctx_;
	ibv_device_attr attr_{};
};

TEST_F(CompletionQueue, ReportsLimits)
{
	EXPECT_EQ(attr_.max_cq, 1 << 14);
	// mlx5-class: libfabric 1.17's ofi_rxm asks for 262144 (kOfiRxmCqe)
	// and refuses to run on less.
	EXPECT_EQ(attr_.max_cqe, 1 << 22);
}

// Every size up to 2^16 (around each power of two), then each power of two
// up to max_cqe but the largest, which MaxSizeSucceedsOrFailsWithEnomem
// takes: rings of up to 128 MiB, one at a time.
TEST_F(CompletionQueue, CreatesEverySizeUpToMaxCqe)
{
	for (int cqe = 1; cqe <= 64; cqe++)
		create_and_check(cqe);
	for (int p = 128; p <= std::min(attr_.max_cqe, 1 << 16); p *= 2) {
		create_and_check(p - 1);
		create_and_check(p);
		create_and_check(p + 1);
	}
	for (int p = 1 << 17; p < attr_.max_cqe; p *= 2)
		create_and_check(p);
}

// The ring a CQ maps is as large as its cqe asks (rounded up to a power of
// two), not as large as max_cqe allows: one page of header and 64-byte
// CQEs.  ofi_rxm's request is 262144 CQEs: a 16 MiB ring.
TEST_F(CompletionQueue, RingIsSizedByTheRequest)
{
	const long page = sysconf(_SC_PAGESIZE);
	struct Want {
		int cqe, slots;
	} wants[] = {{1, 1}, {64, 64}, {100, 128}, {kOfiRxmCqe, kOfiRxmCqe},
		     {kOfiRxmCqe + 1, 2 * kOfiRxmCqe}};

	for (const auto &w : wants) {
		SCOPED_TRACE(w.cqe);
		const auto before = uverbs_mappings();
		Cq cq(ibv_create_cq(ctx_.get(), w.cqe, nullptr, nullptr, 0));
		ASSERT_TRUE(cq) << std::strerror(errno);
		EXPECT_EQ(cq->cqe, w.slots);
		const RingMap ring = new_mapping(before);
		const size_t want = (SROCE_RING_SLOTS_OFFSET +
				     size_t(w.slots) * sizeof(sroce_cqe) +
				     size_t(page) - 1) /
				    size_t(page) * size_t(page);
		EXPECT_EQ(ring.len, want);
	}
}

// The largest CQ the device advertises (a 256 MiB ring) either works or
// fails cleanly with ENOMEM in a guest of 1 GiB; the memory cgroup case
// of selftests/device.sh (t_memcg_limits) makes it fail on purpose.
TEST_F(CompletionQueue, MaxSizeSucceedsOrFailsWithEnomem)
{
	const long cqs = debugfs_count("cqs");
	errno = 0;
	Cq cq(ibv_create_cq(ctx_.get(), attr_.max_cqe, nullptr, nullptr, 0));
	if (!cq) {
		EXPECT_EQ(errno, ENOMEM) << std::strerror(errno);
		EXPECT_EQ(debugfs_count("cqs"), cqs);
		RecordProperty("max_cqe_cq", "ENOMEM");
		return;
	}
	RecordProperty("max_cqe_cq", "created");
	EXPECT_EQ(cq->cqe, attr_.max_cqe);
	EXPECT_EQ(debugfs_count("cqs"), cqs + 1);
	ibv_wc wc[4];
	EXPECT_EQ(ibv_poll_cq(cq.get(), 4, wc), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
}

TEST_F(CompletionQueue, RefusesSizesOutsideTheLimits)
{
	for (int cqe : {0, -1, attr_.max_cqe + 1, 1 << 30}) {
		SCOPED_TRACE(cqe);
		errno = 0;
		Cq cq(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
		EXPECT_FALSE(cq);
		EXPECT_EQ(errno, EINVAL);
	}
}

TEST_F(CompletionQueue, EnforcesMaxCq)
{
	const long before = debugfs_count("cqs");
	ASSERT_GE(before, 0) << "debugfs not mounted?";
	std::vector<Cq> cqs;

	errno = 0;
	for (;;) {
		Cq cq(ibv_create_cq(ctx_.get(), 1, nullptr, nullptr, 0));
		if (!cq)
			break;
		cqs.push_back(std::move(cq));
		ASSERT_LE(cqs.size(), size_t(attr_.max_cq)) << "no limit";
	}
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_EQ(long(cqs.size()) + before, attr_.max_cq);
	cqs.clear();
	EXPECT_EQ(debugfs_count("cqs"), before);
	// The limit frees up again.
	Cq again(ibv_create_cq(ctx_.get(), 1, nullptr, nullptr, 0));
	EXPECT_TRUE(again) << std::strerror(errno);
}

TEST_F(CompletionQueue, ArmsWithAndWithoutSolicitedOnly)
{
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);

	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 1), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
}

TEST_F(CompletionQueue, WorksWithACompletionChannel)
{
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);
	Cq cq(ibv_create_cq(ctx_.get(), 32, nullptr, ch.get(), 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	EXPECT_EQ(cq->channel, ch.get());

	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq.get(), 1), 0);
	// Armed but without completions: no event arrives.
	pollfd pfd = {ch->fd, POLLIN, 0};
	EXPECT_EQ(poll(&pfd, 1, 100), 0);
	ibv_wc wc;
	EXPECT_EQ(ibv_poll_cq(cq.get(), 1, &wc), 0);

	// The channel cannot go while a CQ uses it.
	EXPECT_NE(ibv_destroy_comp_channel(ch.get()), 0);
	ASSERT_EQ(ibv_destroy_cq(cq.release()), 0);
	EXPECT_EQ(ibv_destroy_comp_channel(ch.release()), 0);
}

TEST_F(CompletionQueue, CyclesLeaveNoObjectsBehind)
{
	const long cqs = debugfs_count("cqs");
	const long rings = debugfs_count("rings");
	ASSERT_GE(cqs, 0) << "debugfs not mounted?";
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);

	for (int i = 0; i < 200; i++) {
		ibv_cq *cq = ibv_create_cq(ctx_.get(), 1 + i * 37,
					   nullptr, i % 2 ? ch.get() : nullptr,
					   0);
		ASSERT_NE(cq, nullptr) << i << ": " << std::strerror(errno);
		if (i % 3 == 0) {
			ASSERT_EQ(ibv_req_notify_cq(cq, i % 2), 0);
		}
		ASSERT_EQ(ibv_destroy_cq(cq), 0);
	}
	EXPECT_EQ(debugfs_count("cqs"), cqs);
	EXPECT_EQ(debugfs_count("rings"), rings);

	// Closing a context with live CQs reaps them too, once the rings'
	// mappings, which hold the uverbs file open, are gone as well (as
	// when the process exits).
	const auto before = uverbs_mappings();
	{
		Context other(ibv_open_device(ctx_->device));
		ASSERT_TRUE(other);
		for (int i = 0; i < 8; i++)
			ASSERT_NE(ibv_create_cq(other.get(), 64, nullptr,
						nullptr, 0),
				  nullptr);
		EXPECT_EQ(debugfs_count("cqs"), cqs + 8);
	}
	for (const auto &m : new_mappings(before))
		munmap(reinterpret_cast<void *>(m.start), m.len);
	EXPECT_EQ(debugfs_count("cqs"), cqs);
	EXPECT_EQ(debugfs_count("rings"), rings);
}

// The provider maps each ring once, right after creation; the kernel refuses
// every other mapping of the uverbs file cleanly.
TEST_F(CompletionQueue, RingMapsOnlyOnceAndOnlyAsCreated)
{
	const auto before = uverbs_mappings();
	Cq cq(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	const auto added = new_mappings(before);
	ASSERT_EQ(added.size(), 1u);
	const RingMap ring = added[0];
	ASSERT_NE(ring.len, 0u);
	const auto *hdr = reinterpret_cast<const sroce_ring_hdr *>(ring.start);
	EXPECT_EQ(int(hdr->num_slots), cq->cqe);
	EXPECT_EQ(1u << hdr->slot_shift, sizeof(sroce_cqe));
	EXPECT_EQ(hdr->producer, 0u);

	const int fd = ctx_->cmd_fd;
	const int rw = PROT_READ | PROT_WRITE;
	struct Case {
		const char *what;
		size_t len;
		int prot, flags;
		off_t off;
		int err;
	} cases[] = {
		{"second mapping", ring.len, rw, MAP_SHARED, ring.offset, EBUSY},
		{"read-only second mapping", ring.len, PROT_READ, MAP_SHARED,
		 ring.offset, EBUSY},
		{"executable", ring.len, rw | PROT_EXEC, MAP_SHARED,
		 ring.offset, EPERM},
		{"private", ring.len, rw, MAP_PRIVATE, ring.offset, EINVAL},
		{"too long", ring.len + 4096, rw, MAP_SHARED, ring.offset,
		 EINVAL},
		{"too short", ring.len - 4096, rw, MAP_SHARED, ring.offset,
		 EINVAL},
		{"unknown offset", ring.len, rw, MAP_SHARED,
		 ring.offset + 0x1000000, EINVAL},
	};
	for (const auto &c : cases) {
		SCOPED_TRACE(c.what);
		errno = 0;
		void *p = mmap(nullptr, c.len, c.prot, c.flags, fd, c.off);
		EXPECT_EQ(p, MAP_FAILED);
		EXPECT_EQ(errno, c.err);
		if (p != MAP_FAILED)
			munmap(p, c.len);
	}

	// Once the CQ is gone, so is its key.
	ASSERT_EQ(ibv_destroy_cq(cq.release()), 0);
	errno = 0;
	void *p = mmap(nullptr, ring.len, rw, MAP_SHARED, fd, ring.offset);
	EXPECT_EQ(p, MAP_FAILED);
	EXPECT_EQ(errno, EINVAL);
	if (p != MAP_FAILED)
		munmap(p, ring.len);
}

// A process may keep a ring mapped after the CQ is destroyed (here a forked
// child, which inherits the mapping): it keeps only the pages, which stay
// valid until it unmaps them.
TEST_F(CompletionQueue, RingOutlivesTheCqInAnotherMapping)
{
	const long rings = debugfs_count("rings");
	const auto before = uverbs_mappings();
	Cq cq(ibv_create_cq(ctx_.get(), 256, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	const auto after = uverbs_mappings();
	ASSERT_EQ(after.size(), before.size() + 1);
	uintptr_t addr = 0;
	for (const auto &m : after) {
		bool old = false;
		for (const auto &b : before)
			old |= b.start == m.start;
		if (!old)
			addr = m.start;
	}
	ASSERT_NE(addr, 0u);

	int go[2], result[2];
	ASSERT_EQ(pipe(go), 0);
	ASSERT_EQ(pipe(result), 0);
	const pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		auto *hdr = reinterpret_cast<volatile sroce_ring_hdr *>(addr);
		hdr->consumer = 12345;	// still writable, still ours
		uint32_t slots = hdr->num_slots + (hdr->consumer == 12345 ? 0 : 1);
		_exit(write(result[1], &slots, sizeof(slots)) == sizeof(slots) ?
			      0 : 3);
	}
	ASSERT_EQ(ibv_destroy_cq(cq.release()), 0);	// and munmap()
	ASSERT_EQ(write(go[1], "x", 1), 1);
	uint32_t slots = 0;
	EXPECT_EQ(read(result[0], &slots, sizeof(slots)), ssize_t(sizeof(slots)));
	EXPECT_EQ(slots, 256u);
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int fd : {go[0], go[1], result[0], result[1]})
		close(fd);
	EXPECT_EQ(debugfs_count("rings"), rings);
}

} // namespace
} // namespace sroce::test
