// Shared-ring index arithmetic (kernel/core/ring.h): free-running 32-bit
// counters, full/empty, wrap-around and the treatment of a peer counter
// that userspace may have corrupted.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" {
#include "kernel/core/ring.h"
}

namespace {

// Counter values where wrap-around bugs live.
const uint32_t kBases[] = {0, 1, 7, 0x7fffffff, 0x80000000, 0xfffffff8,
			   0xfffffffe, 0xffffffff};

TEST(CoreRing, SizesArePowersOfTwoUpTo2To31)
{
	EXPECT_FALSE(sroce_ring_size_ok(0));
	EXPECT_TRUE(sroce_ring_size_ok(1));
	EXPECT_TRUE(sroce_ring_size_ok(2));
	EXPECT_FALSE(sroce_ring_size_ok(3));
	EXPECT_TRUE(sroce_ring_size_ok(1u << 16));
	EXPECT_FALSE(sroce_ring_size_ok((1u << 16) + 1));
	EXPECT_TRUE(sroce_ring_size_ok(1u << 31));
	EXPECT_FALSE(sroce_ring_size_ok(0xffffffffu));
}

TEST(CoreRing, EmptyAndFullAtEveryBase)
{
	for (uint32_t n : {1u, 2u, 8u, 1u << 16}) {
		for (uint32_t cons : kBases) {
			SCOPED_TRACE(testing::Message() << n << " slots at "
							<< cons);
			EXPECT_TRUE(sroce_ring_empty(cons, cons));
			EXPECT_EQ(sroce_ring_used(cons, cons, n), 0u);
			EXPECT_EQ(sroce_ring_free(cons, cons, n), n);

			// Every slot is usable: full at exactly n entries.
			const uint32_t full = cons + n;
			EXPECT_FALSE(sroce_ring_empty(full, cons));
			EXPECT_TRUE(sroce_ring_valid(full, cons, n));
			EXPECT_EQ(sroce_ring_used(full, cons, n), n);
			EXPECT_EQ(sroce_ring_free(full, cons, n), 0u);

			EXPECT_EQ(sroce_ring_used(cons + 1, cons, n), 1u);
			EXPECT_EQ(sroce_ring_free(cons + 1, cons, n), n - 1);
		}
	}
}

TEST(CoreRing, SlotsWrapWithTheCounters)
{
	const uint32_t n = 8;

	EXPECT_EQ(sroce_ring_slot(0xffffffff, n), 7u);
	EXPECT_EQ(sroce_ring_slot(0xffffffff + 1u, n), 0u);
	EXPECT_EQ(sroce_ring_slot(13, n), 5u);
	EXPECT_EQ(sroce_ring_slot(12345, 1), 0u);
	// Consecutive counter values visit every slot once per lap.
	bool seen[n] = {};
	for (uint32_t i = 0xfffffffc; i != 4; i++)
		seen[sroce_ring_slot(i, n)] = true;
	for (bool s : seen)
		EXPECT_TRUE(s);
}

TEST(CoreRing, SlotOffsetsStayInsideTheRegion)
{
	const uint32_t n = 16, shift = 6;
	const size_t hdr = 256;
	const size_t bytes = sroce_ring_bytes(n, shift, hdr);

	EXPECT_EQ(bytes, hdr + (n << shift));
	for (uint32_t base : kBases) {
		for (uint32_t i = 0; i < 3 * n; i++) {
			size_t off = sroce_ring_slot_offset(base + i, n, shift,
							    hdr);
			EXPECT_GE(off, hdr);
			EXPECT_LE(off + (1u << shift), bytes);
			EXPECT_EQ((off - hdr) % (1u << shift), 0u);
		}
	}
}

// A consumer counter the user moved past the producer, or so far behind
// that more than num_slots entries would be outstanding, leaves the kernel
// producer no room at all: it can never overwrite an unconsumed CQE.
TEST(CoreRing, BogusConsumerLeavesNoRoom)
{
	const uint32_t n = 8;

	for (uint32_t prod : kBases) {
		SCOPED_TRACE(prod);
		for (uint32_t bogus : {prod + 1, prod + 100, prod - n - 1,
				       prod + 0x80000000u, prod - 0x7fffffffu}) {
			EXPECT_FALSE(sroce_ring_valid(prod, bogus, n));
			EXPECT_EQ(sroce_ring_free(prod, bogus, n), 0u);
		}
	}
}

// A producer counter claiming more than num_slots entries yields nothing to
// consume: the kernel never reads slots that were not written for it.
TEST(CoreRing, BogusProducerYieldsNothing)
{
	const uint32_t n = 8;

	for (uint32_t cons : kBases) {
		SCOPED_TRACE(cons);
		for (uint32_t bogus : {cons + n + 1, cons - 1, cons + 0x80000000u,
				       cons - n}) {
			EXPECT_FALSE(sroce_ring_valid(bogus, cons, n));
			EXPECT_EQ(sroce_ring_used(bogus, cons, n), 0u);
		}
	}
}

// The largest ring: 2^31 slots still tell full from empty.
TEST(CoreRing, LargestRing)
{
	const uint32_t n = SROCE_RING_MAX_SLOTS;

	EXPECT_EQ(sroce_ring_used(n, 0, n), n);
	EXPECT_EQ(sroce_ring_free(n, 0, n), 0u);
	EXPECT_EQ(sroce_ring_free(0, 0, n), n);
	EXPECT_EQ(sroce_ring_used(n + 1, 0, n), 0u);
}

// sroce_ring_discard(): entries of 24 bytes, keyed at offset 8 (as a CQE's
// QP number), in 32-byte slots of an 8-slot ring.
struct Entry {
	uint64_t id;
	uint32_t key;
	uint32_t pad[3];
};
constexpr uint32_t kSlots = 8, kShift = 5, kGone = 0x123, kOther = 0x456;

struct Slots {
	alignas(8) char mem[kSlots << kShift] = {};

	Entry *at(uint32_t idx)
	{
		return reinterpret_cast<Entry *>(
			mem + sroce_ring_slot_offset(idx, kSlots, kShift, 0));
	}

	// entries id 100, 101, ... from consumer on, with these keys
	void fill(uint32_t consumer, const std::vector<uint32_t> &keys)
	{
		for (uint32_t i = 0; i < keys.size(); i++)
			*at(consumer + i) = Entry{100 + i, keys[i], {}};
	}

	std::vector<uint64_t> ids(uint32_t consumer, uint32_t n)
	{
		std::vector<uint64_t> v;

		for (uint32_t i = 0; i < n; i++)
			v.push_back(at(consumer + i)->id);
		return v;
	}

	uint32_t discard(uint32_t consumer, uint32_t used, uint32_t key)
	{
		return sroce_ring_discard(mem, kSlots, kShift, consumer, used,
					  sizeof(Entry), offsetof(Entry, key),
					  key);
	}
};

TEST(CoreRing, DiscardDropsTheKeysEntriesAndKeepsTheOthersInOrder)
{
	for (const uint32_t c : kBases) {
		SCOPED_TRACE(c);
		Slots s;
		s.fill(c, {kGone, kOther, kGone, kGone, kOther, kGone, kOther});

		const uint32_t n = s.discard(c, 7, kGone);
		ASSERT_EQ(n, 4u);
		EXPECT_EQ(s.ids(c + n, 3), (std::vector<uint64_t>{101, 104, 106}));
	}
}

TEST(CoreRing, DiscardLeavesEntriesWithoutTheKeyAlone)
{
	Slots s;
	s.fill(3, {kOther, kOther});

	EXPECT_EQ(s.discard(3, 2, kGone), 0u);
	EXPECT_EQ(s.ids(3, 2), (std::vector<uint64_t>{100, 101}));
	EXPECT_EQ(s.discard(3, 0, kOther), 0u);
}

TEST(CoreRing, DiscardEmptiesAFullRingOfTheKey)
{
	Slots s;
	s.fill(6, std::vector<uint32_t>(kSlots, kGone));

	EXPECT_EQ(s.discard(6, kSlots, kGone), kSlots);
}

} // namespace
