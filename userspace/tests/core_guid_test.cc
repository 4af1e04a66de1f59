// Node GUID derivation (kernel/core/guid.c).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>

extern "C" {
#include "kernel/core/guid.h"
}

namespace {

using Mac = std::array<uint8_t, SROCE_MAC_LEN>;
using Guid = std::array<uint8_t, SROCE_GUID_LEN>;

Guid sroce_guid(const Mac &mac)
{
	Guid g{};
	sroce_guid_from_mac(g.data(), mac.data());
	return g;
}

// The modified EUI-64 that rdma_rxe (and IPv6 SLAAC) derive from a MAC,
// computed independently here to prove sroce does not produce it.
Guid eui64(const Mac &m)
{
	return {static_cast<uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe,
		m[3], m[4], m[5]};
}

const Mac kMacs[] = {
	{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}, // QEMU default range
	{0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	{0x02, 0x42, 0xac, 0x11, 0x00, 0x02}, // docker range
	{0x50, 0x53, 0x52, 0xff, 0xfe, 0x01},
};

TEST(CoreGuid, CarriesTheWholeMacAfterAPrefix)
{
	const Mac mac{0x52, 0x54, 0x00, 0xab, 0xcd, 0xef};
	const Guid g = sroce_guid(mac);

	EXPECT_EQ(g[0], 0x52);
	EXPECT_EQ(g[1], 0x53);
	for (size_t i = 0; i < mac.size(); i++)
		EXPECT_EQ(g[2 + i], mac[i]) << "byte " << i;
}

TEST(CoreGuid, IsLocallyAdministeredAndIndividual)
{
	for (const Mac &mac : kMacs) {
		const Guid g = sroce_guid(mac);

		EXPECT_EQ(g[0] & 0x02, 0x02);
		EXPECT_EQ(g[0] & 0x01, 0x00);
	}
}

TEST(CoreGuid, DiffersFromTheGuidRxeDerives)
{
	for (const Mac &mac : kMacs)
		EXPECT_NE(sroce_guid(mac), eui64(mac));
}

TEST(CoreGuid, DistinctMacsGiveDistinctGuids)
{
	std::set<Guid> seen;

	for (unsigned i = 0; i < 4096; i++) {
		const Mac mac{0x52, 0x54, 0x00, static_cast<uint8_t>(i >> 8),
			      static_cast<uint8_t>(i), static_cast<uint8_t>(i * 7)};
		EXPECT_TRUE(seen.insert(sroce_guid(mac)).second) << i;
	}
}

} // namespace
