// Dropping a destroyed QP's completions from a CQ ring
// (kernel/core/cq_ring.h), which the kernel and the provider share: the
// QP's go, the others keep their order and end next to the producer, across
// the counters' wrap.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

extern "C" {
#include "kernel/core/cq_ring.h"
}

namespace {

constexpr uint32_t kSlots = 8;
constexpr uint32_t kShift = 7;		// 128-byte slots, as the kernel's
constexpr uint32_t kGone = 0x123, kOther = 0x456;

// A ring region whose entries from consumer on carry these QP numbers,
// wr_id 100, 101, ...
struct Ring {
	std::unique_ptr<char[]> mem{new char[sroce_ring_bytes(
		kSlots, kShift, SROCE_RING_SLOTS_OFFSET)]()};

	sroce_cqe *slot(uint32_t idx)
	{
		return sroce_cq_ring_slot(mem.get(), idx, kSlots, kShift);
	}

	void fill(uint32_t consumer, const std::vector<uint32_t> &qpns)
	{
		for (uint32_t i = 0; i < qpns.size(); i++) {
			*slot(consumer + i) = {};
			slot(consumer + i)->wr_id = 100 + i;
			slot(consumer + i)->qp_num = qpns[i];
		}
	}

	// wr_ids of the n entries from consumer on
	std::vector<uint64_t> ids(uint32_t consumer, uint32_t n)
	{
		std::vector<uint64_t> v;

		for (uint32_t i = 0; i < n; i++)
			v.push_back(slot(consumer + i)->wr_id);
		return v;
	}
};

TEST(CoreCqRing, DropsTheQpsEntriesAndKeepsTheOthersInOrder)
{
	static_assert(sizeof(sroce_cqe) <= 1u << kShift);
	for (const uint32_t c : {0u, 5u, 0xfffffffdu}) {
		SCOPED_TRACE(c);
		Ring r;
		r.fill(c, {kGone, kOther, kGone, kGone, kOther, kGone, kOther});

		const uint32_t n = sroce_cq_ring_discard(r.mem.get(), kSlots,
							 kShift, c, 7, kGone);
		ASSERT_EQ(n, 4u);
		EXPECT_EQ(r.ids(c + n, 3), (std::vector<uint64_t>{101, 104, 106}));
	}
}

TEST(CoreCqRing, LeavesARingWithoutTheQpAlone)
{
	Ring r;
	r.fill(3, {kOther, kOther});

	EXPECT_EQ(sroce_cq_ring_discard(r.mem.get(), kSlots, kShift, 3, 2,
					kGone), 0u);
	EXPECT_EQ(r.ids(3, 2), (std::vector<uint64_t>{100, 101}));
	EXPECT_EQ(sroce_cq_ring_discard(r.mem.get(), kSlots, kShift, 3, 0,
					kOther), 0u);
}

TEST(CoreCqRing, DropsAFullRingOfTheQp)
{
	Ring r;
	r.fill(6, std::vector<uint32_t>(kSlots, kGone));

	EXPECT_EQ(sroce_cq_ring_discard(r.mem.get(), kSlots, kShift, 6, kSlots,
					kGone), kSlots);
}

} // namespace
