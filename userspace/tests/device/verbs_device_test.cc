// Verbs-level tests of a live sroce device, run inside a test-bed guest:
//   SROCE_RDMA_DEV=sroce0 SROCE_NETDEV=eth0 verbs_device_tests
// They go through libibverbs and the sroce provider to the kernel module,
// so they check what applications really see.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <net/if.h>

#include "rdma/sroce-abi.h"
#include "test_env.h"
#include "verbs_raii.h"

namespace sroce::test {
namespace {

std::string env(const char *name)
{
	const char *v = std::getenv(name);
	return v ? v : "";
}

std::string read_line(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	std::getline(f, s);
	return s;
}

class Device : public ::testing::Test {
protected:
	void SetUp() override
	{
		name_ = env("SROCE_RDMA_DEV");
		netdev_ = env("SROCE_NETDEV");
		ASSERT_FALSE(name_.empty()) << "SROCE_RDMA_DEV not set";
		ASSERT_FALSE(netdev_.empty()) << "SROCE_NETDEV not set";

		ctx_ = open_device(name_);
		ASSERT_TRUE(ctx_) << "cannot open " << name_;
	}

	std::string name_, netdev_;
	Context ctx_;
};

TEST_F(Device, ReportsSroceIdentity)
{
	ibv_device_attr attr{};

	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	EXPECT_EQ(attr.vendor_id, uint32_t{SROCE_VENDOR_ID});
	EXPECT_EQ(attr.vendor_part_id, uint32_t{SROCE_VENDOR_PART_ID});
	EXPECT_EQ(attr.phys_port_cnt, 1);
	EXPECT_EQ(attr.node_guid, ibv_get_device_guid(ctx_->device));
	EXPECT_EQ(attr.sys_image_guid, attr.node_guid);
	EXPECT_EQ(attr.max_pd, 1 << 16);
	EXPECT_EQ(attr.max_pkeys, 1);
	EXPECT_NE(std::string(attr.fw_ver), "");
	EXPECT_EQ(ctx_->device->transport_type, IBV_TRANSPORT_IB);
	EXPECT_EQ(ctx_->device->node_type, IBV_NODE_CA);
}

TEST_F(Device, ExtendedQueryMatchesBasicQuery)
{
	ibv_device_attr basic{};
	ibv_device_attr_ex ex{};

	ASSERT_EQ(ibv_query_device(ctx_.get(), &basic), 0);
	ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &ex), 0);
	EXPECT_EQ(ex.orig_attr.node_guid, basic.node_guid);
	EXPECT_EQ(ex.orig_attr.max_pd, basic.max_pd);
	EXPECT_EQ(ex.orig_attr.vendor_part_id, basic.vendor_part_id);
}

TEST_F(Device, PortFollowsNetdev)
{
	ibv_port_attr port{};
	const int mtu = std::stoi(read_line("/sys/class/net/" + netdev_ + "/mtu"));
	ibv_mtu expected = IBV_MTU_256;

	for (int m = IBV_MTU_4096; m >= IBV_MTU_256; m--)
		if (mtu >= (128 << m) + 92) {
			expected = static_cast<ibv_mtu>(m);
			break;
		}
	ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port), 0);
	EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
	EXPECT_EQ(port.phys_state, 5); // LinkUp
	EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	EXPECT_EQ(port.max_mtu, IBV_MTU_4096);
	EXPECT_EQ(port.active_mtu, expected) << "netdev MTU " << mtu;
	EXPECT_EQ(port.gid_tbl_len, 128);
	EXPECT_EQ(port.pkey_tbl_len, 1);
	EXPECT_EQ(ibv_query_port(ctx_.get(), 2, &port), EINVAL);
}

TEST_F(Device, DefaultPkey)
{
	uint16_t pkey = 0;

	ASSERT_EQ(ibv_query_pkey(ctx_.get(), 1, 0, &pkey), 0);
	EXPECT_EQ(ntohs(pkey), 0xffff);
}

TEST_F(Device, GidTableHoldsRoceV2AddressGids)
{
	const unsigned ifindex = if_nametoindex(netdev_.c_str());
	int v4 = 0, v6 = 0;

	ASSERT_NE(ifindex, 0u);
	for (int i = 0; i < 128; i++) {
		ibv_gid_entry e{};

		if (ibv_query_gid_ex(ctx_.get(), 1, i, &e, 0))
			continue; // empty entry
		EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2) << "index " << i;
		EXPECT_EQ(e.ndev_ifindex, ifindex) << "index " << i;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (!std::memcmp(e.gid.raw, mapped, sizeof(mapped)))
			v4++;
		else
			v6++;
	}
	EXPECT_GE(v4, 1) << "no IPv4 GID";
	EXPECT_GE(v6, 1) << "no IPv6 GID";
}

TEST_F(Device, AllocatesAndFreesProtectionDomains)
{
	std::vector<Pd> pds;

	for (int i = 0; i < 1000; i++) {
		pds.emplace_back(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pds.back()) << "PD " << i << ": " << std::strerror(errno);
	}
	pds.clear();
	Pd again(ibv_alloc_pd(ctx_.get()));
	EXPECT_TRUE(again);
}

// max_pd is a real limit: exactly that many PDs fit, the next one fails
// with ENOMEM, and freeing one makes room again.
TEST_F(Device, EnforcesMaxPd)
{
	ibv_device_attr attr{};
	std::vector<Pd> pds;

	ASSERT_EQ(ibv_query_device(ctx_.get(), &attr), 0);
	// max_pd is per device: ib_core's MAD layer holds one PD already
	const long used = debugfs_count("pds");
	ASSERT_GE(used, 1) << "no PD of the MAD layer in " << kObjects;
	const int room = attr.max_pd - int(used);
	pds.reserve(room);
	for (int i = 0; i < room; i++) {
		pds.emplace_back(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pds.back()) << "PD " << i << ": " << std::strerror(errno);
	}
	errno = 0;
	Pd extra(ibv_alloc_pd(ctx_.get()));
	EXPECT_FALSE(extra);
	EXPECT_EQ(errno, ENOMEM);
	pds.pop_back();
	Pd retry(ibv_alloc_pd(ctx_.get()));
	EXPECT_TRUE(retry);
}

// Objects sroce does not implement: creating them must fail cleanly with
// EOPNOTSUPP, never succeed half-way.
TEST_F(Device, UnimplementedObjectsFailCleanly)
{
	Pd pd(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(pd) << std::strerror(errno);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	ibv_qp_init_attr attr{};
	attr.send_cq = cq.get();
	attr.recv_cq = cq.get();
	attr.qp_type = IBV_QPT_RAW_PACKET;	/* no raw Ethernet QPs */
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;

	errno = 0;
	ibv_qp *qp = ibv_create_qp(pd.get(), &attr);
	EXPECT_EQ(qp, nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	if (qp)
		ibv_destroy_qp(qp);
}

} // namespace
} // namespace sroce::test
