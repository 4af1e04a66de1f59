// SPDX-License-Identifier: GPL-2.0
//
// The parser of /etc/sroce/links.conf (userspace/tools/links).
#include "links_conf.h"

#include <gtest/gtest.h>

using sroce::links::parse;

TEST(LinksConf, EmptyAndCommentsOnly)
{
	EXPECT_TRUE(parse("").ok());
	EXPECT_TRUE(parse("").links.empty());
	auto r = parse("# nothing\n\n   \t\n  # indented comment\n");
	EXPECT_TRUE(r.ok());
	EXPECT_TRUE(r.links.empty());
}

TEST(LinksConf, EntriesWithAndWithoutMtu)
{
	auto r = parse("# devices\nsroce0 eth0\n\tsroce1\t eth1   mtu=4200  # jumbo\r\nroce_vlan eth0.100\n");
	ASSERT_TRUE(r.ok()) << r.errors.front();
	ASSERT_EQ(r.links.size(), 3u);
	EXPECT_EQ(r.links[0].name, "sroce0");
	EXPECT_EQ(r.links[0].netdev, "eth0");
	EXPECT_FALSE(r.links[0].mtu.has_value());
	EXPECT_EQ(r.links[0].line, 2u);
	EXPECT_EQ(r.links[1].name, "sroce1");
	EXPECT_EQ(r.links[1].netdev, "eth1");
	ASSERT_TRUE(r.links[1].mtu.has_value());
	EXPECT_EQ(*r.links[1].mtu, 4200u);
	EXPECT_EQ(r.links[2].netdev, "eth0.100");
	EXPECT_EQ(r.links[2].line, 4u);
}

TEST(LinksConf, LastLineWithoutNewline)
{
	auto r = parse("a eth0\nb eth1");
	ASSERT_TRUE(r.ok());
	ASSERT_EQ(r.links.size(), 2u);
	EXPECT_EQ(r.links[1].netdev, "eth1");
}

TEST(LinksConf, WrongFieldCounts)
{
	auto r = parse("sroce0\nsroce1 eth1 mtu=1500 extra\n");
	ASSERT_EQ(r.errors.size(), 2u);
	EXPECT_TRUE(r.errors[0].starts_with("1: ")) << r.errors[0];
	EXPECT_TRUE(r.errors[1].starts_with("2: ")) << r.errors[1];
	EXPECT_TRUE(r.links.empty());
}

TEST(LinksConf, BadMtus)
{
	for (const char *opt : {"mtu=", "mtu=abc", "mtu=1500x", "mtu=-1", "mtu=67",
				"mtu=65536", "mtu=99999999999", "MTU=1500", "speed=10"}) {
		auto r = parse(std::string("d eth0 ") + opt + "\n");
		EXPECT_FALSE(r.ok()) << opt;
		EXPECT_TRUE(r.links.empty()) << opt;
	}
	auto lo = parse("d eth0 mtu=68\ne eth1 mtu=65535\n");
	ASSERT_TRUE(lo.ok());
	EXPECT_EQ(*lo.links[0].mtu, 68u);
	EXPECT_EQ(*lo.links[1].mtu, 65535u);
}

TEST(LinksConf, BadNames)
{
	EXPECT_FALSE(parse("sroce%d eth0\n").ok());
	EXPECT_FALSE(parse("a/b eth0\n").ok());
	EXPECT_FALSE(parse(std::string(64, 'x') + " eth0\n").ok());
	EXPECT_TRUE(parse(std::string(63, 'x') + " eth0\n").ok());
	EXPECT_FALSE(parse("d eth:0\n").ok());
	EXPECT_FALSE(parse("d a/b\n").ok());
	EXPECT_FALSE(parse("d ..\n").ok());
	EXPECT_FALSE(parse("d 0123456789abcdef\n").ok());   // 16 > IFNAMSIZ - 1
	EXPECT_TRUE(parse("d 0123456789abcde\n").ok());
	EXPECT_FALSE(parse("d\xc3\xa9 eth0\n").ok());
}

TEST(LinksConf, DuplicatesRefused)
{
	auto r = parse("a eth0\na eth1\nb eth0\nc eth2\n");
	ASSERT_EQ(r.errors.size(), 2u);
	EXPECT_TRUE(r.errors[0].starts_with("2: ")) << r.errors[0];
	EXPECT_TRUE(r.errors[1].starts_with("3: ")) << r.errors[1];
	EXPECT_NE(r.errors[1].find("one per netdev"), std::string::npos);
	EXPECT_FALSE(r.ok());
}

TEST(LinksConf, EveryBadLineReported)
{
	auto r = parse("ok0 eth0\nbad\nok1 eth1 mtu=9000\nx eth2 mtu=1\n");
	ASSERT_EQ(r.errors.size(), 2u);
	EXPECT_TRUE(r.errors[0].starts_with("2: "));
	EXPECT_TRUE(r.errors[1].starts_with("4: "));
	EXPECT_FALSE(r.ok());
}
