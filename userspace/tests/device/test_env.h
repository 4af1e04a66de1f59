// What every device test needs from its environment: the device the test
// bed set up (SROCE_RDMA_DEV) and the module's debugfs object counts.
#ifndef SROCE_TESTS_TEST_ENV_H
#define SROCE_TESTS_TEST_ENV_H

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

// One live-object count of /sys/kernel/debug/sroce/objects ("mrs", "cqs",
// ...), or -1 if it cannot be read.
inline long debugfs_count(const std::string &kind)
{
	std::ifstream f(kObjects);
	std::string line;

	while (std::getline(f, line)) {
		std::istringstream in(line);
		std::string k;
		long n;

		if (in >> k >> n && k == kind)
			return n;
	}
	return -1;
}

} // namespace sroce::test

#endif
