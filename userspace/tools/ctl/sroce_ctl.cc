// SPDX-License-Identifier: GPL-2.0
//
// sroce-ctl: one view of each sroce device (status) and a diagnosis of the
// common setup problems with their fixes (check).  Reads sysfs, /proc and
// /etc only; changes nothing (Documentation/admin-guide.md, "sroce-ctl").
#include "ctl.h"

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace ctl = sroce::ctl;

namespace {

void usage(std::ostream &o)
{
	o << "Usage: sroce-ctl [OPTIONS] status [-j] [DEV]\n"
	     "       sroce-ctl [OPTIONS] check\n"
	     "  status [DEV]  each sroce device (or DEV): its netdev, port state,\n"
	     "                active_mtu and netdev MTU, non-zero GIDs with their\n"
	     "                types, packet and byte counts, SENDs/RECVs, retries,\n"
	     "                drops and send errors with their largest reasons;\n"
	     "                -j prints JSON with every counter\n"
	     "  check         diagnose the setup, one \"ok:\" or \"problem:\" line each\n"
	     "                (with a \"fix:\" line): sroce module, module signatures\n"
	     "                (secure boot), rdma_rxe or another socket on UDP 4791,\n"
	     "                devices, port state, addresses, the libibverbs provider,\n"
	     "                the memlock limit\n"
	     "Options (for tests on fake trees):\n"
	     "  --sysfs DIR      instead of /sys\n"
	     "  --proc DIR       instead of /proc\n"
	     "  --etc DIR        instead of /etc\n"
	     "  --provider-dir DIR  libibverbs' provider directory, instead of "
	  << ctl::Roots::default_provider_dir().string()
	  << "\n"
	     "Exit status: 0 done (check: no problem), 1 a problem was found or DEV\n"
	     "is not an sroce device, 2 usage error.\n";
}

std::optional<uint64_t> memlock_limit()
{
	rlimit rl{};
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return std::nullopt;
	return rl.rlim_cur;
}

int status(const ctl::Roots &roots, bool json, const std::string &only)
{
	std::vector<std::string> names;
	if (!only.empty()) {
		if (!ctl::is_sroce_device(roots, only)) {
			std::cerr << "sroce-ctl: " << only << " is not an sroce device\n";
			return 1;
		}
		names.push_back(only);
	} else {
		names = ctl::list_devices(roots);
	}
	std::vector<ctl::Device> devs;
	for (const auto &n : names)
		devs.push_back(ctl::read_device(roots, n));
	if (json)
		ctl::print_status_json(std::cout, devs);
	else
		ctl::print_status(std::cout, devs);
	return 0;
}

}  // namespace

int main(int argc, char **argv)
{
	ctl::Roots roots;
	std::vector<std::string> args(argv + 1, argv + argc);
	size_t i = 0;
	for (; i < args.size() && args[i].rfind("-", 0) == 0; i += 2) {
		const std::string &o = args[i];
		if (o == "-h" || o == "--help") {
			usage(std::cout);
			return 0;
		}
		if (i + 1 >= args.size()) {
			usage(std::cerr);
			return 2;
		}
		if (o == "--sysfs")
			roots.sysfs = args[i + 1];
		else if (o == "--proc")
			roots.proc = args[i + 1];
		else if (o == "--etc")
			roots.etc = args[i + 1];
		else if (o == "--provider-dir")
			roots.provider_dir = args[i + 1];
		else {
			usage(std::cerr);
			return 2;
		}
	}
	args.erase(args.begin(), args.begin() + std::min(i, args.size()));
	if (args.empty()) {
		usage(std::cerr);
		return 2;
	}
	const std::string cmd = args[0];
	args.erase(args.begin());
	if (cmd == "status") {
		bool json = false;
		if (!args.empty() && args[0] == "-j") {
			json = true;
			args.erase(args.begin());
		}
		if (args.size() > 1 || (!args.empty() && args[0].rfind("-", 0) == 0)) {
			usage(std::cerr);
			return 2;
		}
		return status(roots, json, args.empty() ? "" : args[0]);
	}
	if (cmd == "check" && args.empty()) {
		auto v = ctl::run_checks({roots, memlock_limit()});
		ctl::print_verdicts(std::cout, v);
		return std::all_of(v.begin(), v.end(), [](const auto &x) { return x.ok; }) ? 0 : 1;
	}
	usage(std::cerr);
	return 2;
}
