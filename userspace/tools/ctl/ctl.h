// SPDX-License-Identifier: GPL-2.0
//
// sroce-ctl's model: the sroce devices as sysfs shows them, and the
// diagnosis of a host's setup (Documentation/admin-guide.md, "sroce-ctl").
// Everything is read below configurable roots so that the unit tests can
// point it at fake trees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace sroce::ctl {

struct Roots {
	std::filesystem::path sysfs = "/sys";
	std::filesystem::path proc = "/proc";
	std::filesystem::path etc = "/etc";
	// where libibverbs looks for "driver NAME" providers
	std::filesystem::path provider_dir = default_provider_dir();

	static std::filesystem::path default_provider_dir();
};

// The provider's file name, lib<driver>-rdmav<private ABI>.so.
extern const char *const kProviderFile;

struct Gid {
	unsigned index = 0;
	std::string addr;  // inet_ntop form, e.g. ::ffff:10.0.0.1
	std::string type;  // gid_attrs/types/N: "RoCE v2", "IB/RoCE v1"
	bool link_local() const;
};

struct Device {
	std::string name;
	std::string netdev;                 // "" when none is recorded
	std::string state, phys_state;      // "ACTIVE", "LinkUp", ...
	std::optional<unsigned> netdev_mtu;
	std::optional<unsigned> active_mtu; // bytes; none when the MTU is too small
	std::vector<Gid> gids;              // the non-zero ones
	std::vector<std::pair<std::string, uint64_t>> counters;  // by name

	std::optional<uint64_t> counter(const std::string &name) const;
};

// An sroce device: node GUID 5253:<MAC> and fw_ver the loaded sroce
// module's version (vendor_part_id is not in sysfs).
bool is_sroce_device(const Roots &r, const std::string &name);
// The sroce devices, sorted by name.
std::vector<std::string> list_devices(const Roots &r);
Device read_device(const Roots &r, const std::string &name);

void print_status(std::ostream &o, const std::vector<Device> &devs);
void print_status_json(std::ostream &o, const std::vector<Device> &devs);

struct Verdict {
	bool ok;
	std::string what;
	std::string fix;  // for problems
};

struct CheckEnv {
	Roots roots;
	std::optional<uint64_t> memlock;  // RLIMIT_MEMLOCK soft limit; none: unlimited
};

// Below this, ibv_reg_mr of a typical application's buffers fails.
inline constexpr uint64_t kMemlockMin = 64ull << 20;

std::vector<Verdict> run_checks(const CheckEnv &env);
void print_verdicts(std::ostream &o, const std::vector<Verdict> &v);

}  // namespace sroce::ctl
