// Port MTU and state derivation (kernel/core/port.c).
#include <gtest/gtest.h>

#include <cstdint>

extern "C" {
#include "kernel/core/port.h"
}

namespace {

struct MtuCase {
	uint32_t netdev_mtu;
	sroce_mtu expected;
	bool usable;
};

// Worst-case RoCE v2 overhead restated from the IBTA/RFC header sizes, so a
// wrong constant in the core is caught here rather than trusted.
constexpr uint32_t kIpv6 = 40, kUdp = 8, kBth = 12, kAtomicEth = 28, kIcrc = 4;
constexpr uint32_t kOverhead = kIpv6 + kUdp + kBth + kAtomicEth + kIcrc;

TEST(CorePort, OverheadMatchesHeaderSizes)
{
	EXPECT_EQ(SROCE_ROCE_OVERHEAD, kOverhead);
	EXPECT_EQ(SROCE_MIN_NETDEV_MTU, 256 + kOverhead);
}

TEST(CorePort, MtuBytes)
{
	EXPECT_EQ(sroce_mtu_bytes(SROCE_MTU_256), 256u);
	EXPECT_EQ(sroce_mtu_bytes(SROCE_MTU_512), 512u);
	EXPECT_EQ(sroce_mtu_bytes(SROCE_MTU_1024), 1024u);
	EXPECT_EQ(sroce_mtu_bytes(SROCE_MTU_2048), 2048u);
	EXPECT_EQ(sroce_mtu_bytes(SROCE_MTU_4096), 4096u);
}

TEST(CorePort, MtuFromNetdevTable)
{
	const MtuCase cases[] = {
		{0, SROCE_MTU_256, false},
		{68, SROCE_MTU_256, false},
		{256 + kOverhead - 1, SROCE_MTU_256, false},
		{256 + kOverhead, SROCE_MTU_256, true},
		{512 + kOverhead, SROCE_MTU_512, true},
		{1500, SROCE_MTU_1024, true},
		{2048 + kOverhead - 1, SROCE_MTU_1024, true},
		{2048 + kOverhead, SROCE_MTU_2048, true},
		{4096 + kOverhead - 1, SROCE_MTU_2048, true},
		{4096 + kOverhead, SROCE_MTU_4096, true},
		{9000, SROCE_MTU_4096, true},
		{65535, SROCE_MTU_4096, true},
		{UINT32_MAX, SROCE_MTU_4096, true},
	};

	for (const MtuCase &c : cases) {
		bool usable = !c.usable;

		EXPECT_EQ(sroce_mtu_from_netdev(c.netdev_mtu, &usable), c.expected)
			<< "netdev mtu " << c.netdev_mtu;
		EXPECT_EQ(usable, c.usable) << "netdev mtu " << c.netdev_mtu;
	}
}

// For every netdev MTU: the chosen IB MTU fits, and the next larger does not.
TEST(CorePort, MtuIsTheLargestThatFits)
{
	for (uint32_t m = SROCE_MIN_NETDEV_MTU; m <= 70000; m++) {
		bool usable;
		const sroce_mtu mtu = sroce_mtu_from_netdev(m, &usable);

		ASSERT_TRUE(usable);
		ASSERT_LE(sroce_mtu_bytes(mtu) + kOverhead, m) << m;
		if (mtu != SROCE_MTU_4096) {
			const auto next = static_cast<sroce_mtu>(mtu + 1);

			ASSERT_GT(sroce_mtu_bytes(next) + kOverhead, m) << m;
		}
	}
}

TEST(CorePort, AdminDownIsDisabled)
{
	const sroce_port_status st = sroce_port_evaluate(false, true, 1500);

	EXPECT_EQ(st.state, SROCE_PORT_DOWN);
	EXPECT_EQ(st.phys_state, SROCE_PHYS_DISABLED);
}

TEST(CorePort, NoCarrierIsPolling)
{
	const sroce_port_status st = sroce_port_evaluate(true, false, 1500);

	EXPECT_EQ(st.state, SROCE_PORT_DOWN);
	EXPECT_EQ(st.phys_state, SROCE_PHYS_POLLING);
}

TEST(CorePort, UpWithCarrierIsActive)
{
	const sroce_port_status st = sroce_port_evaluate(true, true, 1500);

	EXPECT_EQ(st.state, SROCE_PORT_ACTIVE);
	EXPECT_EQ(st.phys_state, SROCE_PHYS_LINK_UP);
}

TEST(CorePort, MtuTooSmallForRoceIsDown)
{
	const sroce_port_status st =
		sroce_port_evaluate(true, true, SROCE_MIN_NETDEV_MTU - 1);

	EXPECT_EQ(st.state, SROCE_PORT_DOWN);
	EXPECT_EQ(st.phys_state, SROCE_PHYS_LINK_UP);
}

} // namespace
