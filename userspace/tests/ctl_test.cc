// SPDX-License-Identifier: GPL-2.0
//
// sroce-ctl's model (userspace/tools/ctl) on fake sysfs, /proc and /etc
// trees built in a temporary directory: what status reads and prints, and
// the verdict of each check.
#include "ctl.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace sroce::ctl;

namespace {

constexpr const char *kVer = "0.1.0";
constexpr const char *kLinkLocal = "fe80:0000:0000:0000:5054:00ff:fe12:3456";
constexpr const char *kV4 = "0000:0000:0000:0000:0000:ffff:0a00:0001";  // 10.0.0.1
constexpr const char *kZero = "0000:0000:0000:0000:0000:0000:0000:0000";

// A temporary root holding sys/, proc/, etc/ and a provider directory;
// removed with everything in it.
class FakeHost {
public:
	FakeHost()
	{
		std::string tmpl = (fs::temp_directory_path() / "sroce-ctl-XXXXXX").string();
		if (!mkdtemp(tmpl.data()))
			throw std::runtime_error("mkdtemp failed");
		root_ = tmpl;
		env.roots.sysfs = root_ / "sys";
		env.roots.proc = root_ / "proc";
		env.roots.etc = root_ / "etc";
		env.roots.provider_dir = root_ / "usr/lib/libibverbs";
		env.memlock = std::nullopt;
		fs::create_directories(env.roots.sysfs / "class/infiniband");
		fs::create_directories(env.roots.sysfs / "class/net");
	}
	~FakeHost() { fs::remove_all(root_); }
	FakeHost(const FakeHost &) = delete;
	FakeHost &operator=(const FakeHost &) = delete;

	void write(const fs::path &p, const std::string &text)
	{
		fs::create_directories(p.parent_path());
		std::ofstream(p) << text;
	}
	void sys(const std::string &rel, const std::string &text)
	{
		write(env.roots.sysfs / rel, text + "\n");
	}

	void load_module() { sys("module/sroce/version", kVer); }

	void netdev(const std::string &name, unsigned mtu, bool up = true, bool carrier = true)
	{
		sys("class/net/" + name + "/mtu", std::to_string(mtu));
		sys("class/net/" + name + "/flags", up ? "0x1003" : "0x1002");
		if (up)  // sysfs refuses to read carrier of a down netdev
			sys("class/net/" + name + "/carrier", carrier ? "1" : "0");
	}

	// An sroce device on NETDEV with GIDs (index, sysfs text, type) and
	// counters.
	void device(const std::string &name, const std::string &netdev, const std::string &state,
		    const std::string &phys,
		    const std::vector<std::tuple<unsigned, std::string, std::string>> &gids,
		    const std::vector<std::pair<std::string, uint64_t>> &counters = {})
	{
		const std::string d = "class/infiniband/" + name;
		sys(d + "/node_guid", "5253:0012:3456:789a");
		sys(d + "/fw_ver", kVer);
		sys(d + "/ports/1/state", state);
		sys(d + "/ports/1/phys_state", phys);
		for (unsigned i = 0; i < 4; i++)
			sys(d + "/ports/1/gids/" + std::to_string(i), kZero);
		for (const auto &[i, gid, type] : gids) {
			sys(d + "/ports/1/gids/" + std::to_string(i), gid);
			sys(d + "/ports/1/gid_attrs/types/" + std::to_string(i), type);
			sys(d + "/ports/1/gid_attrs/ndevs/" + std::to_string(i), netdev);
		}
		sys(d + "/ports/1/hw_counters/lifespan", "10");
		for (const auto &[n, v] : counters)
			sys(d + "/ports/1/hw_counters/" + n, std::to_string(v));
	}

	// The usual healthy host: module, sroce0 ACTIVE on eth0 with an IPv4
	// address, the provider installed.
	void healthy()
	{
		load_module();
		netdev("eth0", 1500);
		device("sroce0", "eth0", "4: ACTIVE", "5: LinkUp",
		       {{0, kLinkLocal, "IB/RoCE v1"}, {1, kLinkLocal, "RoCE v2"},
			{2, kV4, "RoCE v2"}});
		provider();
	}
	void provider()
	{
		write(env.roots.etc / "libibverbs.d/sroce.driver", "driver sroce\n");
		write(env.roots.provider_dir / kProviderFile, "");
	}

	std::string status()
	{
		std::vector<Device> devs;
		for (const auto &n : list_devices(env.roots))
			devs.push_back(read_device(env.roots, n));
		std::ostringstream o;
		print_status(o, devs);
		return o.str();
	}

	std::vector<Verdict> checks() { return run_checks(env); }

	// The verdict whose text contains KEY (exactly one must).
	Verdict verdict(const std::string &key)
	{
		std::optional<Verdict> found;
		for (const auto &v : checks())
			if (v.what.find(key) != std::string::npos) {
				EXPECT_FALSE(found.has_value()) << "two verdicts match " << key;
				found = v;
			}
		if (!found) {
			ADD_FAILURE() << "no verdict matches " << key;
			return {true, "", ""};
		}
		return *found;
	}
	bool any_problem()
	{
		for (const auto &v : checks())
			if (!v.ok)
				return true;
		return false;
	}

	CheckEnv env;

private:
	fs::path root_;
};

bool has(const std::string &text, const std::string &part)
{
	return text.find(part) != std::string::npos;
}

TEST(Ctl, ProviderFileName)
{
	// libibverbs loads "driver sroce" as libsroce-rdmav<private ABI 34>.so
	EXPECT_STREQ(kProviderFile, "libsroce-rdmav34.so");
}

TEST(Ctl, FindsOnlySroceDevices)
{
	FakeHost h;
	h.healthy();
	// rdma_rxe's GUID (EUI-64) and no fw_ver of sroce's
	h.sys("class/infiniband/rxe0/node_guid", "5054:00ff:fe12:3456");
	h.sys("class/infiniband/rxe0/fw_ver", "");
	// sroce's GUID prefix but another firmware version
	h.sys("class/infiniband/mlx0/node_guid", "5253:0000:0000:0001");
	h.sys("class/infiniband/mlx0/fw_ver", "16.35.2000");
	EXPECT_EQ(list_devices(h.env.roots), std::vector<std::string>{"sroce0"});
	EXPECT_TRUE(is_sroce_device(h.env.roots, "sroce0"));
	EXPECT_FALSE(is_sroce_device(h.env.roots, "rxe0"));
	EXPECT_FALSE(is_sroce_device(h.env.roots, "mlx0"));
	EXPECT_FALSE(is_sroce_device(h.env.roots, "nosuch"));
}

TEST(Ctl, ReadsDevice)
{
	FakeHost h;
	h.load_module();
	h.netdev("eth1", 9000);
	h.device("roce1", "eth1", "4: ACTIVE", "5: LinkUp",
		 {{0, kLinkLocal, "IB/RoCE v1"}, {1, kLinkLocal, "RoCE v2"}, {3, kV4, "RoCE v2"}},
		 {{"sent_pkts", 10}, {"rcvd_bytes", 4096}, {"rx_drop_no_qp", 2}});
	const Device d = read_device(h.env.roots, "roce1");
	EXPECT_EQ(d.name, "roce1");
	EXPECT_EQ(d.netdev, "eth1");
	EXPECT_EQ(d.state, "ACTIVE");
	EXPECT_EQ(d.phys_state, "LinkUp");
	EXPECT_EQ(d.netdev_mtu, 9000u);
	EXPECT_EQ(d.active_mtu, 4096u);
	ASSERT_EQ(d.gids.size(), 3u);  // the zero GID 2 is left out
	EXPECT_EQ(d.gids[0].addr, "fe80::5054:ff:fe12:3456");
	EXPECT_EQ(d.gids[0].type, "IB/RoCE v1");
	EXPECT_TRUE(d.gids[0].link_local());
	EXPECT_EQ(d.gids[2].index, 3u);
	EXPECT_EQ(d.gids[2].addr, "::ffff:10.0.0.1");
	EXPECT_FALSE(d.gids[2].link_local());
	EXPECT_EQ(d.counter("sent_pkts"), 10u);
	EXPECT_EQ(d.counter("rcvd_bytes"), 4096u);
	EXPECT_FALSE(d.counter("lifespan"));  // not a counter
	EXPECT_FALSE(d.counter("rdma_sends"));
}

TEST(Ctl, NetdevFromFirstNamedGid)
{
	FakeHost h;
	h.load_module();
	h.netdev("eth2", 1500);
	h.device("sroce2", "eth2", "4: ACTIVE", "5: LinkUp", {{1, kV4, "RoCE v2"}});
	EXPECT_EQ(read_device(h.env.roots, "sroce2").netdev, "eth2");
}

TEST(Ctl, ActiveMtuFollowsNetdevMtu)
{
	FakeHost h;
	h.healthy();
	EXPECT_EQ(read_device(h.env.roots, "sroce0").active_mtu, 1024u);
	h.netdev("eth0", 603);
	EXPECT_EQ(read_device(h.env.roots, "sroce0").active_mtu, 256u);
	h.netdev("eth0", 347);
	EXPECT_FALSE(read_device(h.env.roots, "sroce0").active_mtu);
}

TEST(Ctl, StatusText)
{
	FakeHost h;
	h.healthy();
	h.device("sroce0", "eth0", "4: ACTIVE", "5: LinkUp",
		 {{0, kLinkLocal, "IB/RoCE v1"}, {2, kV4, "RoCE v2"}},
		 {{"sent_pkts", 11}, {"sent_bytes", 1100}, {"rcvd_pkts", 12}, {"rcvd_bytes", 1200},
		  {"rdma_sends", 3}, {"rdma_recvs", 4}, {"completer_retry_err", 5},
		  {"rcvd_rnr_err", 6}, {"retry_exceeded_err", 7}, {"retry_rnr_exceeded_err", 8},
		  {"rx_drop_no_qp", 20}, {"rx_drop_bad_icrc", 1}, {"rx_drop_runt", 0},
		  {"rx_drop_qp_state", 4}, {"rx_drop_stale", 2}, {"tx_err_no_route", 9}});
	const std::string s = h.status();
	EXPECT_TRUE(has(s, "sroce0: netdev eth0, port ACTIVE (LinkUp), active_mtu 1024, netdev mtu 1500\n"))
		<< s;
	EXPECT_TRUE(has(s, "  gid 0 fe80::5054:ff:fe12:3456 (IB/RoCE v1)\n")) << s;
	EXPECT_TRUE(has(s, "  gid 2 ::ffff:10.0.0.1 (RoCE v2)\n")) << s;
	EXPECT_FALSE(has(s, "gid 1")) << s;
	EXPECT_TRUE(has(s, "sent 11 packets 1100 bytes, received 12 packets 1200 bytes")) << s;
	EXPECT_TRUE(has(s, "rdma_sends 3, rdma_recvs 4, retries 5, RNR NAKs received 6, "
			   "retries exceeded 7/8 (RNR)")) << s;
	// the sum, the three largest reasons, zero ones never
	EXPECT_TRUE(has(s, "rx drops 27 (no_qp 20, qp_state 4, stale 2, ...), "
			   "send errors 9 (no_route 9)")) << s;
}

TEST(Ctl, StatusWithoutDevices)
{
	FakeHost h;
	EXPECT_EQ(h.status(), "no sroce device\n");
}

TEST(Ctl, StatusJson)
{
	FakeHost h;
	h.healthy();
	h.device("sroce0", "eth0", "1: DOWN", "3: Disabled", {{2, kV4, "RoCE v2"}},
		 {{"sent_pkts", 1}, {"rx_drop_no_qp", 2}});
	std::vector<Device> devs{read_device(h.env.roots, "sroce0")};
	std::ostringstream o;
	print_status_json(o, devs);
	EXPECT_EQ(o.str(),
		  "{\"devices\":[{\"name\":\"sroce0\",\"netdev\":\"eth0\",\"state\":\"DOWN\","
		  "\"phys_state\":\"Disabled\",\"active_mtu\":1024,\"netdev_mtu\":1500,"
		  "\"gids\":[{\"index\":2,\"gid\":\"::ffff:10.0.0.1\",\"type\":\"RoCE v2\"}],"
		  "\"counters\":{\"rx_drop_no_qp\":2,\"sent_pkts\":1}}]}\n");
}

TEST(Ctl, HealthyHostHasNoProblem)
{
	FakeHost h;
	h.healthy();
	for (const auto &v : h.checks())
		EXPECT_TRUE(v.ok) << v.what << " / " << v.fix;
	EXPECT_TRUE(h.verdict("sroce module loaded (version 0.1.0)").ok);
	EXPECT_TRUE(h.verdict("sroce devices: sroce0").ok);
	EXPECT_TRUE(h.verdict("sroce0: port ACTIVE on eth0 (active_mtu 1024)").ok);
	EXPECT_TRUE(h.verdict("sroce0: GIDs of the addresses ::ffff:10.0.0.1").ok);
	EXPECT_TRUE(h.verdict("rdma_rxe not loaded").ok);
	EXPECT_TRUE(h.verdict("module signatures are not enforced").ok);
	EXPECT_TRUE(h.verdict("memlock limit: unlimited").ok);
	EXPECT_TRUE(h.verdict("provider " + (h.env.roots.provider_dir / kProviderFile).string()).ok);
}

TEST(Ctl, ModuleNotLoaded)
{
	FakeHost h;
	h.provider();
	auto v = h.verdict("sroce module not loaded");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.fix, "modprobe sroce"));
	// and without the module there is no sroce device
	EXPECT_FALSE(h.verdict("no sroce device").ok);
}

TEST(Ctl, NoDevice)
{
	FakeHost h;
	h.load_module();
	h.provider();
	auto v = h.verdict("no sroce device");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.fix, "rdma link add sroce0 type sroce netdev"));
	EXPECT_TRUE(h.verdict("sroce module loaded").ok);
}

TEST(Ctl, RxeLoaded)
{
	FakeHost h;
	h.healthy();
	h.sys("module/rdma_rxe/refcnt", "0");
	auto v = h.verdict("rdma_rxe is loaded");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "4791"));
	EXPECT_TRUE(has(v.fix, "rmmod rdma_rxe"));
}

TEST(Ctl, OtherSocketOnPort4791)
{
	FakeHost h;
	h.load_module();
	h.provider();
	const std::string hdr = "  sl  local_address rem_address   st tx_queue rx_queue\n";
	h.write(h.env.roots.proc / "net/udp",
		hdr + "  12: 00000000:0044 00000000:0000 07 00000000:00000000\n");
	h.write(h.env.roots.proc / "net/udp6",
		hdr + "   3: 00000000000000000000000000000000:12B7 "
		      "00000000000000000000000000000000:0000 07 00000000:00000000\n");
	auto v = h.verdict("UDP port 4791");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.fix, "ss -uapn"));
	// port 68 (0x44) alone is no problem
	h.write(h.env.roots.proc / "net/udp6", hdr);
	for (const auto &x : h.checks())
		EXPECT_FALSE(has(x.what, "UDP port 4791")) << x.what;
}

TEST(Ctl, PortDownBecauseNetdevDown)
{
	FakeHost h;
	h.healthy();
	h.netdev("eth0", 1500, false);
	h.device("sroce0", "eth0", "1: DOWN", "3: Disabled", {{2, kV4, "RoCE v2"}});
	auto v = h.verdict("sroce0: port DOWN (Disabled)");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "netdev eth0 is down"));
	EXPECT_EQ(v.fix, "ip link set eth0 up");
}

TEST(Ctl, PortDownWithoutCarrier)
{
	FakeHost h;
	h.healthy();
	h.netdev("eth0", 1500, true, false);
	h.device("sroce0", "eth0", "1: DOWN", "2: Polling", {{2, kV4, "RoCE v2"}});
	auto v = h.verdict("sroce0: port DOWN (Polling)");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "has no carrier"));
}

TEST(Ctl, PortDownForSmallMtu)
{
	FakeHost h;
	h.healthy();
	h.netdev("eth0", 300);
	h.device("sroce0", "eth0", "1: DOWN", "5: LinkUp", {{2, kV4, "RoCE v2"}});
	auto v = h.verdict("sroce0: port DOWN (LinkUp)");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "MTU 300 is below 348")) << v.what;
	EXPECT_TRUE(has(v.fix, "ip link set eth0 mtu 1500"));
}

TEST(Ctl, PortDownNetdevGone)
{
	FakeHost h;
	h.healthy();
	fs::remove_all(h.env.roots.sysfs / "class/net/eth0");
	h.device("sroce0", "eth0", "1: DOWN", "3: Disabled", {{2, kV4, "RoCE v2"}});
	EXPECT_TRUE(has(h.verdict("sroce0: port DOWN").what, "its netdev is gone"));
}

TEST(Ctl, OnlyLinkLocalGid)
{
	FakeHost h;
	h.healthy();
	h.device("sroce0", "eth0", "4: ACTIVE", "5: LinkUp",
		 {{0, kLinkLocal, "IB/RoCE v1"}, {1, kLinkLocal, "RoCE v2"}});
	auto v = h.verdict("has no IPv4 or IPv6 address");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "sroce0: netdev eth0"));
	EXPECT_EQ(v.fix, "ip addr add ADDRESS/PREFIX dev eth0");
}

TEST(Ctl, ProviderDriverFileMissing)
{
	FakeHost h;
	h.healthy();
	fs::remove(h.env.roots.etc / "libibverbs.d/sroce.driver");
	h.write(h.env.roots.etc / "libibverbs.d/rxe.driver", "driver rxe\n");
	auto v = h.verdict("sroce.driver");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "no " + (h.env.roots.etc / "libibverbs.d/sroce.driver").string()));
	EXPECT_TRUE(has(v.fix, "install sroce-provider"));
}

TEST(Ctl, ProviderLibraryMissing)
{
	FakeHost h;
	h.healthy();
	fs::remove(h.env.roots.provider_dir / kProviderFile);
	auto v = h.verdict("names the sroce provider");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, (h.env.roots.provider_dir / kProviderFile).string() + " is missing"));
}

TEST(Ctl, ProviderByAbsolutePath)
{
	FakeHost h;
	h.healthy();
	fs::remove(h.env.roots.provider_dir / kProviderFile);
	const fs::path so = h.env.roots.etc.parent_path() / "build/libsroce";
	h.write(h.env.roots.etc / "libibverbs.d/sroce.driver", "driver " + so.string() + "\n");
	EXPECT_FALSE(h.verdict("names the sroce provider").ok);
	h.write(so.string() + "-rdmav34.so", "");
	EXPECT_TRUE(h.verdict("provider " + so.string() + "-rdmav34.so").ok);
}

TEST(Ctl, MemlockLimit)
{
	FakeHost h;
	h.healthy();
	h.env.memlock = 8ull << 20;  // Debian 12's default
	auto v = h.verdict("memlock limit is 8 MiB");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.fix, "ulimit -l"));
	EXPECT_TRUE(has(v.fix, "limits.conf"));
	EXPECT_TRUE(has(v.fix, "LimitMEMLOCK"));
	h.env.memlock = 64 << 10;
	EXPECT_FALSE(h.verdict("memlock limit is 64 KiB").ok);
	h.env.memlock = kMemlockMin;
	EXPECT_TRUE(h.verdict("memlock limit: 64 MiB").ok);
	EXPECT_FALSE(h.any_problem());
}

TEST(Ctl, SecureBootLockdown)
{
	FakeHost h;
	h.healthy();
	h.sys("kernel/security/lockdown", "none [integrity] confidentiality");
	// loaded: it was accepted
	EXPECT_TRUE(h.verdict("kernel lockdown (integrity) enforces module signatures").ok);
	fs::remove_all(h.env.roots.sysfs / "module/sroce");
	fs::remove_all(h.env.roots.sysfs / "class/infiniband/sroce0");
	auto v = h.verdict("refuse unsigned modules");
	EXPECT_FALSE(v.ok);
	EXPECT_TRUE(has(v.what, "kernel lockdown (integrity)"));
	EXPECT_TRUE(has(v.fix, "mokutil --import"));
	h.sys("kernel/security/lockdown", "[none] integrity confidentiality");
	EXPECT_TRUE(h.verdict("module signatures are not enforced").ok);
}

TEST(Ctl, SecureBootEfiVariableAndSigEnforce)
{
	FakeHost h;
	h.provider();
	const std::string var =
		"firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a2f2e8c7b1";
	h.write(h.env.roots.sysfs / var, std::string("\x06\0\0\0\x01", 5));
	EXPECT_TRUE(has(h.verdict("refuse unsigned modules").what, "secure boot"));
	h.write(h.env.roots.sysfs / var, std::string("\x06\0\0\0\0", 5));
	EXPECT_TRUE(h.verdict("module signatures are not enforced").ok);
	h.sys("module/module/parameters/sig_enforce", "Y");
	EXPECT_TRUE(has(h.verdict("refuse unsigned modules").what, "module.sig_enforce"));
}

}  // namespace
