// Packet addresses against a connected QP's (kernel/core/addr.c).  The IP
// headers are the tests' own (core_test_util.cc) and rdma_rxe's captured
// ones; GIDs are written out here as RFC 4291 spells IPv4-mapped addresses.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "core_test_util.h"

extern "C" {
#include "kernel/core/addr.h"
}

namespace {

using sroce_test::Bytes;
using Gid = std::array<uint8_t, SROCE_GID_LEN>;

// The GID of an IPv4 ("a.b.c.d": ::ffff:a.b.c.d) or IPv6 address.
Gid gid(const std::string &addr)
{
	Gid g{};

	if (inet_pton(AF_INET6, addr.c_str(), g.data()) == 1)
		return g;
	g[10] = g[11] = 0xff;
	EXPECT_EQ(inet_pton(AF_INET, addr.c_str(), g.data() + 12), 1) << addr;
	return g;
}

sroce_addr_pair pair(const std::string &src, const std::string &dst)
{
	sroce_addr_pair p;
	const Gid s = gid(src), d = gid(dst);

	std::memcpy(p.src, s.data(), s.size());
	std::memcpy(p.dst, d.data(), d.size());
	return p;
}

Gid src_of(const sroce_addr_pair &p)
{
	Gid g;
	std::memcpy(g.data(), p.src, g.size());
	return g;
}

Gid dst_of(const sroce_addr_pair &p)
{
	Gid g;
	std::memcpy(g.data(), p.dst, g.size());
	return g;
}

const Bytes kUdp = Bytes(12 + 4, 0);	// what follows the IP header: any

// The tests' own headers: IPv4 192.0.2.1 -> .2, IPv6 fd53:726f:6365::1 -> ::2.
TEST(CoreAddr, ParsesIpHeadersIntoGids)
{
	const struct {
		Bytes ip;
		const char *src, *dst;
		bool v4;
	} cases[] = {
		{sroce_test::wrap_ipv4(kUdp), "192.0.2.1", "192.0.2.2", true},
		{sroce_test::wrap_ipv6(kUdp), "fd53:726f:6365::1",
		 "fd53:726f:6365::2", false},
	};

	for (const auto &c : cases) {
		sroce_addr_pair p;

		ASSERT_TRUE(sroce_addr_parse(c.ip.data(), c.v4 ? 20 : 40, &p));
		EXPECT_EQ(src_of(p), gid(c.src));
		EXPECT_EQ(dst_of(p), gid(c.dst));
		EXPECT_EQ(sroce_addr_is_v4(p.src), c.v4);
	}
}

TEST(CoreAddr, ParsesEveryCapturedRxePacket)
{
	for (const auto &v : sroce_test::rxe_vectors()) {
		SCOPED_TRACE(v.what);
		const Bytes ip = sroce_test::from_hex(v.hex);
		const size_t off = v.ip_version == 4 ? 12 : 8;
		const size_t alen = v.ip_version == 4 ? 4 : 16;
		sroce_addr_pair p;

		ASSERT_TRUE(sroce_addr_parse(ip.data(), uint32_t(ip.size()), &p));
		EXPECT_EQ(sroce_addr_is_v4(p.src), v.ip_version == 4);
		EXPECT_EQ(std::memcmp(p.src + 16 - alen, &ip[off], alen), 0);
		EXPECT_EQ(std::memcmp(p.dst + 16 - alen, &ip[off + alen], alen), 0);
	}
}

TEST(CoreAddr, RefusesWhatIsNotAPlainIpHeader)
{
	const Bytes v4 = sroce_test::wrap_ipv4(kUdp);
	const Bytes v6 = sroce_test::wrap_ipv6(kUdp);
	sroce_addr_pair p, before;

	std::memset(&p, 0x5e, sizeof(p));
	before = p;
	EXPECT_FALSE(sroce_addr_parse(v4.data(), 0, &p));
	EXPECT_FALSE(sroce_addr_parse(v4.data(), 19, &p));
	EXPECT_FALSE(sroce_addr_parse(v6.data(), 39, &p));
	for (uint8_t version : {0, 1, 5, 7, 15}) {
		Bytes b = v6;
		b[0] = uint8_t(version << 4 | (b[0] & 0x0f));
		EXPECT_FALSE(sroce_addr_parse(b.data(), uint32_t(b.size()), &p))
			<< "version " << int(version);
	}
	// An IPv6 header must not pass for an IPv4 peer.
	for (size_t at : {8u, 24u}) {
		Bytes b = v6;
		const Gid m = gid("192.0.2.1");
		std::copy(m.begin(), m.end(), b.begin() + long(at));
		EXPECT_FALSE(sroce_addr_parse(b.data(), uint32_t(b.size()), &p))
			<< "IPv4-mapped address at " << at;
	}
	EXPECT_EQ(std::memcmp(&p, &before, sizeof(p)), 0) << "*out written";
}

TEST(CoreAddr, ClassifiesMulticastAndBroadcast)
{
	for (const char *a : {"224.0.0.1", "239.255.255.255", "230.1.2.3",
			      "ff02::1", "ff0e::1:2", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"})
		EXPECT_TRUE(sroce_addr_is_mcast(gid(a).data())) << a;
	for (const char *a : {"223.255.255.255", "240.0.0.1", "255.255.255.255",
			      "192.0.2.1", "fe80::1", "2001:db8::ff", "::"})
		EXPECT_FALSE(sroce_addr_is_mcast(gid(a).data())) << a;

	EXPECT_TRUE(sroce_addr_is_lbcast(gid("255.255.255.255").data()));
	for (const char *a : {"192.0.2.255", "255.255.255.254", "0.0.0.0",
			      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
			      "::ffff"})
		EXPECT_FALSE(sroce_addr_is_lbcast(gid(a).data())) << a;
}

struct ConnCase {
	const char *src, *dst;
	sroce_addr_verdict want;
};

// A QP at 192.0.2.1 talking to 192.0.2.2, or the IPv6 equivalents.
TEST(CoreAddr, ConnectedQpTakesOnlyItsPeersPacketsToItself)
{
	const struct {
		const char *sgid, *dgid;
		ConnCase cases[9];
	} qps[] = {
		{"192.0.2.1", "192.0.2.2",
		 {{"192.0.2.2", "192.0.2.1", SROCE_ADDR_OK},
		  {"192.0.2.1", "192.0.2.1", SROCE_ADDR_BAD_SRC},
		  {"192.0.2.77", "192.0.2.1", SROCE_ADDR_BAD_SRC},
		  {"192.0.2.2", "192.0.2.78", SROCE_ADDR_BAD_DST},
		  {"192.0.2.3", "192.0.2.78", SROCE_ADDR_BAD_SRC},
		  {"192.0.2.2", "239.1.2.3", SROCE_ADDR_MCAST},
		  {"192.0.2.2", "255.255.255.255", SROCE_ADDR_BCAST},
		  {"::ffff:c000:202", "192.0.2.1", SROCE_ADDR_OK},
		  {"2001:db8::c000:202", "192.0.2.1", SROCE_ADDR_BAD_SRC}}},
		{"2001:db8::1", "fe80::2",
		 {{"fe80::2", "2001:db8::1", SROCE_ADDR_OK},
		  {"2001:db8::1", "2001:db8::1", SROCE_ADDR_BAD_SRC},
		  {"fe80::3", "2001:db8::1", SROCE_ADDR_BAD_SRC},
		  {"fe80::2", "2001:db8::2", SROCE_ADDR_BAD_DST},
		  {"fe80::2", "fe80::1", SROCE_ADDR_BAD_DST},
		  {"fe80::2", "ff02::1", SROCE_ADDR_MCAST},
		  {"fe80::2", "::", SROCE_ADDR_BAD_DST},
		  {"::ffff:fe80:2", "2001:db8::1", SROCE_ADDR_BAD_SRC},
		  {"fe80::2", "255.255.255.255", SROCE_ADDR_BCAST}}},
	};

	for (const auto &qp : qps) {
		const Gid sgid = gid(qp.sgid), dgid = gid(qp.dgid);
		for (const ConnCase &c : qp.cases) {
			const sroce_addr_pair p = pair(c.src, c.dst);
			EXPECT_EQ(sroce_addr_check_conn(&p, sgid.data(), dgid.data()),
				  c.want)
				<< "QP " << qp.sgid << " <-> " << qp.dgid
				<< ", packet " << c.src << " -> " << c.dst;
		}
	}
}

// Every bit of either address matters: any one flipped is refused, as the
// right reason.
TEST(CoreAddr, EveryAddressBitCounts)
{
	for (const auto &[s, d] : {std::pair{"192.0.2.2", "192.0.2.1"},
				   std::pair{"fe80::2", "2001:db8::1"}}) {
		const sroce_addr_pair good = pair(s, d);
		const Gid sgid = gid(d), dgid = gid(s);

		ASSERT_EQ(sroce_addr_check_conn(&good, sgid.data(), dgid.data()),
			  SROCE_ADDR_OK);
		for (size_t bit = 0; bit < 8 * SROCE_GID_LEN; bit++) {
			sroce_addr_pair p = good;
			p.src[bit / 8] ^= uint8_t(0x80 >> bit % 8);
			EXPECT_EQ(sroce_addr_check_conn(&p, sgid.data(), dgid.data()),
				  SROCE_ADDR_BAD_SRC)
				<< s << ": source bit " << bit;
			p = good;
			p.dst[bit / 8] ^= uint8_t(0x80 >> bit % 8);
			const sroce_addr_verdict want =
				sroce_addr_is_mcast(p.dst) ? SROCE_ADDR_MCAST :
							     SROCE_ADDR_BAD_DST;
			EXPECT_EQ(sroce_addr_check_conn(&p, sgid.data(), dgid.data()),
				  want)
				<< d << ": destination bit " << bit;
		}
	}
}

} // namespace
