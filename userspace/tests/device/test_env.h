// What every device test needs from its environment: the device the test
// bed set up (SROCE_RDMA_DEV) and the module's debugfs counters.
#ifndef SROCE_TESTS_TEST_ENV_H
#define SROCE_TESTS_TEST_ENV_H

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "rdma/sroce-abi.h"
#include "verbs_raii.h"

namespace sroce::test {

inline constexpr const char *kObjects = "/sys/kernel/debug/sroce/objects";

// The RDMA device under test, or "" when SROCE_RDMA_DEV is not set.
inline std::string test_device_name()
{
	const char *v = std::getenv("SROCE_RDMA_DEV");
	return v ? v : "";
}

// Opens the device called name; an empty Context if there is none.
inline Context open_device(const std::string &name)
{
	int n = 0;
	DeviceList list(ibv_get_device_list(&n));
	Context ctx;

	for (int i = 0; list && i < n; i++)
		if (name == ibv_get_device_name(list.get()[i]))
			ctx.reset(ibv_open_device(list.get()[i]));
	return ctx;
}

// Opens the device under test into ctx, its name into *name; a fatal
// failure if that cannot be done, so call it under ASSERT_NO_FATAL_FAILURE.
inline void open_test_device(Context &ctx, std::string *name = nullptr)
{
	const std::string n = test_device_name();

	if (name)
		*name = n;
	ASSERT_FALSE(n.empty()) << "SROCE_RDMA_DEV not set";
	ctx = open_device(n);
	ASSERT_TRUE(ctx) << "cannot open " << n;
}

// Whether the device under test is sroce: by its vendor ID and part ID
// (rdma_rxe has the same vendor ID, 0xFFFFFF, and part ID 0).  On sroce
// every capability it advertises and every debugfs count is asserted; a
// case may skip for want of one only on another driver (rdma_rxe), and
// says so.
inline bool testing_sroce()
{
	static const bool is = [] {
		Context ctx = open_device(test_device_name());
		ibv_device_attr a{};

		return ctx && !ibv_query_device(ctx.get(), &a) &&
		       a.vendor_id == SROCE_VENDOR_ID &&
		       a.vendor_part_id == SROCE_VENDOR_PART_ID;
	}();
	return is;
}

// The reason a case skips on a device that is not sroce.
inline std::string not_sroce(const std::string &what)
{
	return test_device_name() + " is not sroce and has no " + what;
}

// SROCE_TEST_SLOW (default 1): the factor every time limit and every
// "nothing arrives" window of the tests is multiplied by, for slow hosts
// (Documentation/testing.md).
inline int slow_factor()
{
	static const int f = [] {
		const char *v = std::getenv("SROCE_TEST_SLOW");
		const int n = v ? std::atoi(v) : 1;

		return n > 0 ? n : 1;
	}();
	return f;
}

// d scaled by SROCE_TEST_SLOW.
template <class Rep, class Period>
auto slow(std::chrono::duration<Rep, Period> d)
{
	return d * slow_factor();
}

// The value of key in a debugfs file of "key value" lines, or -1 if it
// cannot be read (not root, no debugfs, or not sroce).  On sroce a
// missing value is a test failure: the module always has it, and a leak
// check that silently drops out checks nothing.
inline long debugfs_value(const std::string &path, const std::string &key)
{
	std::ifstream f(path);
	std::string line;

	while (std::getline(f, line)) {
		std::istringstream in(line);
		std::string k;
		long n;

		if (in >> k >> n && k == key)
			return n;
	}
	if (testing_sroce())
		ADD_FAILURE() << "no \"" << key << "\" in " << path
			      << " on sroce (not root? no debugfs?)";
	return -1;
}

// One live-object count of /sys/kernel/debug/sroce/objects ("mrs", "cqs",
// ...), or -1 if it cannot be read.
inline long debugfs_count(const std::string &kind)
{
	return debugfs_value(kObjects, kind);
}

// Every live-object count of /sys/kernel/debug/sroce/objects, by kind;
// empty if it cannot be read (a failure on sroce, as for debugfs_value()).
inline std::map<std::string, long> debugfs_counts()
{
	std::map<std::string, long> counts;
	std::ifstream f(kObjects);
	std::string k;
	long n;

	while (f >> k >> n)
		counts[k] = n;
	if (counts.empty() && testing_sroce())
		ADD_FAILURE() << "cannot read " << kObjects
			      << " on sroce (not root? no debugfs?)";
	return counts;
}

// One QP of /sys/kernel/debug/sroce/qps, which has a line for every QP of
// every device: "DEV qpn N state S FIELD VALUE ...".
struct DebugfsQp {
	std::string dev;
	std::map<std::string, long> fields;	// qpn, state and the rest
};

// Every QP of /sys/kernel/debug/sroce/qps; empty if it cannot be read.
inline std::vector<DebugfsQp> debugfs_qps()
{
	std::ifstream f("/sys/kernel/debug/sroce/qps");
	std::vector<DebugfsQp> qps;
	std::string line;

	while (std::getline(f, line)) {
		std::istringstream in(line);
		DebugfsQp q;
		std::string k;
		long v;

		in >> q.dev;
		while (in >> k >> v)
			q.fields[k] = v;
		qps.push_back(std::move(q));
	}
	return qps;
}

// One count of /sys/kernel/debug/sroce/rx_drops ("bad_qkey", ...), or -1
// if it cannot be read (rdma_rxe has none).
inline long rx_drops(const std::string &reason)
{
	return debugfs_value("/sys/kernel/debug/sroce/rx_drops", reason);
}

// Runs cmd (ip, rdma, ...) through the shell with its output discarded;
// returns its exit status as std::system() does (0: success).
inline int quiet_sh(const std::string &cmd)
{
	return std::system((cmd + " >/dev/null 2>&1").c_str());
}

// The address ip (IPv4 or IPv6) with its last part replaced by last:
// another host of the /24 or /64 the test bed gives each guest alone.
inline std::string on_link(const std::string &ip, int last)
{
	const char sep = ip.find(':') == std::string::npos ? '.' : ':';

	return ip.substr(0, ip.rfind(sep) + 1) + std::to_string(last);
}

// A permanent neighbour entry for a made-up host of the guest's subnet,
// so that packets to it leave without anybody answering ARP or neighbour
// discovery; deleted with the object.
class PermanentNeighbour {
public:
	PermanentNeighbour(const std::string &ip, const std::string &netdev,
			   const std::string &mac)
		: ip_(ip), netdev_(netdev)
	{
		ok_ = !quiet_sh("ip neigh replace " + ip + " lladdr " + mac +
				" nud permanent dev " + netdev);
	}
	~PermanentNeighbour()
	{
		if (ok_)
			quiet_sh("ip neigh del " + ip_ + " dev " + netdev_);
	}
	PermanentNeighbour(const PermanentNeighbour &) = delete;
	PermanentNeighbour &operator=(const PermanentNeighbour &) = delete;

	bool ok() const { return ok_; }

private:
	std::string ip_, netdev_;
	bool ok_ = false;
};

// A counter of port 1's hw_counters of the device under test
// ("rx_drop_malformed", "rdma_sends", ...), or -1 if it cannot be read.
inline long hw_counter(const std::string &name)
{
	std::ifstream f("/sys/class/infiniband/" + test_device_name() +
			"/ports/1/hw_counters/" + name);
	long n = -1;

	if (!(f >> n))
		return -1;
	return n;
}

} // namespace sroce::test

#endif
