// SPDX-License-Identifier: GPL-2.0
//
// sroce-ctl's model: reading sroce devices from sysfs and diagnosing the
// setup problems Documentation/admin-guide.md describes.
#include "ctl.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

extern "C" {
#include "kernel/core/port.h"
}

#ifndef SROCE_PROVIDER_FILE
#error "SROCE_PROVIDER_FILE (the provider's file name) comes from CMake"
#endif
#ifndef SROCE_MULTIARCH
#define SROCE_MULTIARCH ""
#endif

namespace fs = std::filesystem;

namespace sroce::ctl {

const char *const kProviderFile = SROCE_PROVIDER_FILE;

fs::path Roots::default_provider_dir()
{
	// libibverbs' compiled-in provider directory on Debian (multiarch)
	const std::string arch = SROCE_MULTIARCH;
	return arch.empty() ? fs::path("/usr/lib/libibverbs")
			    : fs::path("/usr/lib") / arch / "libibverbs";
}

namespace {

// The first line of a (sysfs) file without trailing blanks; none when it
// cannot be read (sysfs refuses reads of e.g. an unused GID's type).
std::optional<std::string> read_line(const fs::path &p)
{
	std::ifstream in(p);
	std::string s;
	if (!in || !std::getline(in, s))
		return std::nullopt;
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

template <typename T>
std::optional<T> parse_num(std::string_view s, int base = 10)
{
	T v{};
	if (s.size() > 2 && base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s.remove_prefix(2);
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
	if (ec != std::errc() || end != s.data() + s.size())
		return std::nullopt;
	return v;
}

template <typename T>
std::optional<T> read_num(const fs::path &p, int base = 10)
{
	auto s = read_line(p);
	return s ? parse_num<T>(*s, base) : std::nullopt;
}

bool path_exists(const fs::path &p)
{
	std::error_code ec;
	return fs::exists(p, ec);
}

// Numerically named entries of a directory (gids/, ndevs/), ascending.
std::vector<unsigned> numbered(const fs::path &dir)
{
	std::vector<unsigned> v;
	std::error_code ec;
	for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
		if (auto n = parse_num<unsigned>(it->path().filename().string()))
			v.push_back(*n);
	std::sort(v.begin(), v.end());
	return v;
}

// "4: ACTIVE" -> "ACTIVE"
std::string state_word(const std::optional<std::string> &s)
{
	if (!s)
		return "?";
	auto colon = s->find(": ");
	return colon == std::string::npos ? *s : s->substr(colon + 2);
}

// sysfs GID "fe80:0000:...:3456" -> inet_ntop form; none if zero or malformed
std::optional<std::string> gid_addr(const std::string &s)
{
	std::array<unsigned char, 16> b{};
	std::istringstream in(s);
	std::string group;
	unsigned i = 0;
	bool nonzero = false;
	while (std::getline(in, group, ':')) {
		auto v = parse_num<unsigned>(group, 16);
		if (i == 8 || group.size() != 4 || !v)
			return std::nullopt;
		b[2 * i] = *v >> 8;
		b[2 * i + 1] = *v & 0xff;
		nonzero |= *v != 0;
		i++;
	}
	if (i != 8 || !nonzero)
		return std::nullopt;
	char buf[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, b.data(), buf, sizeof(buf)))
		return std::nullopt;
	return std::string(buf);
}

fs::path dev_dir(const Roots &r, const std::string &name)
{
	return r.sysfs / "class/infiniband" / name;
}

fs::path net_dir(const Roots &r, const std::string &netdev)
{
	return r.sysfs / "class/net" / netdev;
}

std::string json_str(std::string_view s)
{
	std::string o = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\') {
			o += '\\';
			o += c;
		} else if (static_cast<unsigned char>(c) < 0x20) {
			char buf[8];
			std::snprintf(buf, sizeof(buf), "\\u%04x", c);
			o += buf;
		} else {
			o += c;
		}
	}
	return o + '"';
}

// Sum of the counters PREFIX*, and the largest non-zero ones (up to 3) as
// "reason N, ..." with the prefix cut off.
std::pair<uint64_t, std::string> by_reason(const Device &d, const std::string &prefix)
{
	std::vector<std::pair<std::string, uint64_t>> r;
	uint64_t sum = 0;
	for (const auto &[name, v] : d.counters)
		if (name.rfind(prefix, 0) == 0 && v) {
			sum += v;
			r.emplace_back(name.substr(prefix.size()), v);
		}
	std::stable_sort(r.begin(), r.end(),
			 [](const auto &a, const auto &b) { return a.second > b.second; });
	std::string top;
	for (size_t i = 0; i < r.size() && i < 3; i++)
		top += (i ? ", " : "") + r[i].first + ' ' + std::to_string(r[i].second);
	if (r.size() > 3)
		top += ", ...";
	return {sum, top};
}

}  // namespace

bool Gid::link_local() const
{
	// fe80::/10
	auto v = parse_num<unsigned>(addr.substr(0, addr.find(':')), 16);
	return v && (*v & 0xffc0) == 0xfe80;
}

std::optional<uint64_t> Device::counter(const std::string &name) const
{
	for (const auto &[n, v] : counters)
		if (n == name)
			return v;
	return std::nullopt;
}

bool is_sroce_device(const Roots &r, const std::string &name)
{
	auto guid = read_line(dev_dir(r, name) / "node_guid");
	auto fw = read_line(dev_dir(r, name) / "fw_ver");
	auto ver = read_line(r.sysfs / "module/sroce/version");
	return guid && guid->rfind("5253:", 0) == 0 && fw && ver && *fw == *ver;
}

std::vector<std::string> list_devices(const Roots &r)
{
	std::vector<std::string> v;
	std::error_code ec;
	for (fs::directory_iterator it(r.sysfs / "class/infiniband", ec), end;
	     !ec && it != end; it.increment(ec)) {
		auto name = it->path().filename().string();
		if (is_sroce_device(r, name))
			v.push_back(name);
	}
	std::sort(v.begin(), v.end());
	return v;
}

Device read_device(const Roots &r, const std::string &name)
{
	Device d;
	d.name = name;
	const fs::path port = dev_dir(r, name) / "ports/1";
	d.state = state_word(read_line(port / "state"));
	d.phys_state = state_word(read_line(port / "phys_state"));

	// the netdev of GID 0, or of the first GID that has one
	for (unsigned i : numbered(port / "gid_attrs/ndevs")) {
		auto nd = read_line(port / "gid_attrs/ndevs" / std::to_string(i));
		if (nd && !nd->empty()) {
			d.netdev = *nd;
			break;
		}
	}
	if (!d.netdev.empty())
		d.netdev_mtu = read_num<unsigned>(net_dir(r, d.netdev) / "mtu");
	if (d.netdev_mtu) {
		bool usable;
		auto mtu = sroce_mtu_from_netdev(*d.netdev_mtu, &usable);
		if (usable)
			d.active_mtu = sroce_mtu_bytes(mtu);
	}

	for (unsigned i : numbered(port / "gids")) {
		auto s = read_line(port / "gids" / std::to_string(i));
		auto addr = s ? gid_addr(*s) : std::nullopt;
		if (!addr)
			continue;
		auto type = read_line(port / "gid_attrs/types" / std::to_string(i));
		d.gids.push_back({i, *addr, type.value_or("?")});
	}

	std::vector<std::string> names;
	std::error_code ec;
	for (fs::directory_iterator it(port / "hw_counters", ec), end; !ec && it != end;
	     it.increment(ec))
		names.push_back(it->path().filename().string());
	std::sort(names.begin(), names.end());
	for (const auto &n : names) {
		if (n == "lifespan")  // ib_core's cache setting, not a counter
			continue;
		if (auto v = read_num<uint64_t>(port / "hw_counters" / n))
			d.counters.emplace_back(n, *v);
	}
	return d;
}

void print_status(std::ostream &o, const std::vector<Device> &devs)
{
	if (devs.empty())
		o << "no sroce device\n";
	for (const auto &d : devs) {
		auto c = [&d](const char *n) {
			auto v = d.counter(n);
			return v ? std::to_string(*v) : std::string("?");
		};
		o << d.name << ": netdev " << (d.netdev.empty() ? "-" : d.netdev) << ", port "
		  << d.state << " (" << d.phys_state << "), active_mtu "
		  << (d.active_mtu ? std::to_string(*d.active_mtu) : "-") << ", netdev mtu "
		  << (d.netdev_mtu ? std::to_string(*d.netdev_mtu) : "-") << '\n';
		for (const auto &g : d.gids)
			o << "  gid " << g.index << ' ' << g.addr << " (" << g.type << ")\n";
		o << "  sent " << c("sent_pkts") << " packets " << c("sent_bytes")
		  << " bytes, received " << c("rcvd_pkts") << " packets " << c("rcvd_bytes")
		  << " bytes\n";
		o << "  rdma_sends " << c("rdma_sends") << ", rdma_recvs " << c("rdma_recvs")
		  << ", retries " << c("completer_retry_err") << ", RNR NAKs received "
		  << c("rcvd_rnr_err") << ", retries exceeded " << c("retry_exceeded_err")
		  << '/' << c("retry_rnr_exceeded_err") << " (RNR)\n";
		auto [drops, top] = by_reason(d, "rx_drop_");
		auto [errs, etop] = by_reason(d, "tx_err_");
		o << "  rx drops " << drops;
		if (!top.empty())
			o << " (" << top << ')';
		o << ", send errors " << errs;
		if (!etop.empty())
			o << " (" << etop << ')';
		o << '\n';
	}
}

void print_status_json(std::ostream &o, const std::vector<Device> &devs)
{
	auto opt = [](const std::optional<unsigned> &v) {
		return v ? std::to_string(*v) : std::string("null");
	};
	o << "{\"devices\":[";
	for (size_t i = 0; i < devs.size(); i++) {
		const auto &d = devs[i];
		o << (i ? "," : "") << "{\"name\":" << json_str(d.name)
		  << ",\"netdev\":" << (d.netdev.empty() ? "null" : json_str(d.netdev))
		  << ",\"state\":" << json_str(d.state)
		  << ",\"phys_state\":" << json_str(d.phys_state)
		  << ",\"active_mtu\":" << opt(d.active_mtu)
		  << ",\"netdev_mtu\":" << opt(d.netdev_mtu) << ",\"gids\":[";
		for (size_t j = 0; j < d.gids.size(); j++)
			o << (j ? "," : "") << "{\"index\":" << d.gids[j].index
			  << ",\"gid\":" << json_str(d.gids[j].addr)
			  << ",\"type\":" << json_str(d.gids[j].type) << '}';
		o << "],\"counters\":{";
		for (size_t j = 0; j < d.counters.size(); j++)
			o << (j ? "," : "") << json_str(d.counters[j].first) << ':'
			  << d.counters[j].second;
		o << "}}";
	}
	o << "]}\n";
}

namespace {

using Verdicts = std::vector<Verdict>;

void ok(Verdicts &v, std::string what)
{
	v.push_back({true, std::move(what), ""});
}

void problem(Verdicts &v, std::string what, std::string fix)
{
	v.push_back({false, std::move(what), std::move(fix)});
}

// The active lockdown mode: "[integrity]" of "none [integrity] confidentiality".
std::string lockdown_mode(const Roots &r)
{
	auto s = read_line(r.sysfs / "kernel/security/lockdown");
	if (!s)
		return "";
	auto b = s->find('['), e = s->find(']');
	return b == std::string::npos || e < b ? "" : s->substr(b + 1, e - b - 1);
}

// EFI's SecureBoot variable: 4 attribute bytes, then 1 when enabled.
bool efi_secure_boot(const Roots &r)
{
	std::ifstream in(r.sysfs /
			 "firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a2f2e8c7b1",
			 std::ios::binary);
	char b[5];
	return in.read(b, sizeof(b)) && b[4] == 1;
}

void check_signatures(const CheckEnv &env, bool loaded, Verdicts &v)
{
	const Roots &r = env.roots;
	std::string why;
	auto mode = lockdown_mode(r);
	if (!mode.empty() && mode != "none")
		why = "kernel lockdown (" + mode + ")";
	else if (read_line(r.sysfs / "module/module/parameters/sig_enforce").value_or("") == "Y")
		why = "module.sig_enforce";
	else if (efi_secure_boot(r))
		why = "secure boot";
	if (why.empty()) {
		ok(v, "module signatures are not enforced");
	} else if (loaded) {
		ok(v, why + " enforces module signatures, and sroce was accepted");
	} else {
		problem(v, why + " makes the kernel refuse unsigned modules, and sroce's is not signed "
			   "(modprobe sroce: \"Key was rejected by service\")",
			"sign sroce.ko with a key the kernel trusts: enroll DKMS's key as a MOK "
			"(mokutil --import /var/lib/dkms/mok.pub, reboot, confirm in MokManager), "
			"then dkms signs the module it builds; or sign it yourself with "
			"the kernel headers' scripts/sign-file and an enrolled key; or turn secure boot off");
	}
}

// Something has UDP port 4791 (0x12B7) open in /proc/net/udp or udp6.
bool udp_4791_bound(const Roots &r)
{
	for (const char *f : {"net/udp", "net/udp6"}) {
		std::ifstream in(r.proc / f);
		std::string line;
		std::getline(in, line);  // header
		while (std::getline(in, line)) {
			std::istringstream ls(line);
			std::string sl, local;
			ls >> sl >> local;
			auto colon = local.rfind(':');
			if (colon != std::string::npos && local.substr(colon + 1) == "12B7")
				return true;
		}
	}
	return false;
}

void check_port(const CheckEnv &env, const Device &d, Verdicts &v)
{
	const Roots &r = env.roots;
	if (d.state == "ACTIVE") {
		ok(v, d.name + ": port ACTIVE on " + d.netdev + " (active_mtu " +
			      (d.active_mtu ? std::to_string(*d.active_mtu) : "-") + ")");
		return;
	}
	const std::string what = d.name + ": port " + d.state + " (" + d.phys_state + ")";
	if (d.netdev.empty() || !path_exists(net_dir(r, d.netdev))) {
		problem(v, what + ": its netdev is gone",
			"rdma link delete " + d.name + ", then add it again on an existing netdev");
		return;
	}
	auto flags = read_num<unsigned>(net_dir(r, d.netdev) / "flags", 16).value_or(0);
	auto carrier = read_line(net_dir(r, d.netdev) / "carrier").value_or("0");
	unsigned mtu = d.netdev_mtu.value_or(0);
	if (!(flags & 1))  // IFF_UP
		problem(v, what + ": netdev " + d.netdev + " is down",
			"ip link set " + d.netdev + " up");
	else if (carrier != "1")
		problem(v, what + ": netdev " + d.netdev + " has no carrier",
			"connect the cable or the peer (ip link show " + d.netdev +
				" says NO-CARRIER until there is a link)");
	else if (mtu < SROCE_MIN_NETDEV_MTU)
		problem(v, what + ": netdev " + d.netdev + " MTU " + std::to_string(mtu) +
			      " is below " + std::to_string(SROCE_MIN_NETDEV_MTU) +
			      ", the least that carries a 256-byte RoCE packet",
			"ip link set " + d.netdev + " mtu 1500 (4188 or more for a 4096-byte active_mtu)");
	else
		problem(v, what + ": netdev " + d.netdev + " is up with carrier and MTU " +
			      std::to_string(mtu),
			"look at dmesg | grep sroce");
}

void check_addresses(const Device &d, Verdicts &v)
{
	std::string addrs;
	for (const auto &g : d.gids)
		if (!g.link_local() && addrs.find(g.addr) == std::string::npos)
			addrs += (addrs.empty() ? "" : ", ") + g.addr;
	if (!addrs.empty())
		ok(v, d.name + ": GIDs of the addresses " + addrs);
	else
		problem(v, d.name + ": netdev " + (d.netdev.empty() ? "-" : d.netdev) +
			      " has no IPv4 or IPv6 address, only the link-local default GID "
			      "(rdma_cm and routed RoCE v2 need an address)",
			"ip addr add ADDRESS/PREFIX dev " + (d.netdev.empty() ? "NETDEV" : d.netdev));
}

void check_provider(const CheckEnv &env, Verdicts &v)
{
	const Roots &r = env.roots;
	const fs::path dir = r.etc / "libibverbs.d";
	std::vector<fs::path> files;
	std::error_code ec;
	for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
		if (it->path().extension() == ".driver")
			files.push_back(it->path());
	std::sort(files.begin(), files.end());
	// libibverbs: "driver NAME" loads <provider dir>/libNAME-rdmavPABI.so,
	// "driver /PATH" loads /PATH-rdmavPABI.so
	const std::string suffix = std::string(kProviderFile).substr(std::string("libsroce").size());
	for (const auto &f : files) {
		std::ifstream in(f);
		std::string line;
		while (std::getline(in, line)) {
			std::istringstream ls(line);
			std::string kw, name;
			ls >> kw >> name;
			if (kw != "driver")
				continue;
			fs::path so;
			if (name == "sroce")
				so = r.provider_dir / kProviderFile;
			else if (!name.empty() && name.front() == '/' && fs::path(name).filename() == "libsroce")
				so = name + suffix;
			else
				continue;
			if (path_exists(so))
				ok(v, "provider " + so.string() + " (" + f.string() + ")");
			else
				problem(v, f.string() + " names the sroce provider, but " + so.string() +
					      " is missing: libibverbs lists no sroce device",
					"reinstall sroce-provider (or make install-provider with PREFIX=/usr)");
			return;
		}
	}
	problem(v, "no " + (dir / "sroce.driver").string() +
		      ": libibverbs does not load the sroce provider and lists no sroce device",
		"install sroce-provider (or make install-provider); uninstalled, use "
		"RDMAV_DRIVERS=/path/to/build/userspace/provider/libsroce");
}

std::string mib(uint64_t bytes)
{
	if (bytes % (1 << 20) == 0)
		return std::to_string(bytes >> 20) + " MiB";
	return std::to_string(bytes >> 10) + " KiB";
}

void check_memlock(const CheckEnv &env, Verdicts &v)
{
	if (!env.memlock) {
		ok(v, "memlock limit: unlimited");
	} else if (*env.memlock >= kMemlockMin) {
		ok(v, "memlock limit: " + mib(*env.memlock));
	} else {
		problem(v, "memlock limit is " + mib(*env.memlock) +
			      ": ibv_reg_mr fails with ENOMEM once a process without "
			      "CAP_IPC_LOCK has registered that much",
			"raise it to " + mib(kMemlockMin) + " or unlimited: ulimit -l unlimited "
			"(shell), \"* - memlock unlimited\" in /etc/security/limits.conf "
			"(logins), LimitMEMLOCK=infinity (systemd services)");
	}
}

}  // namespace

std::vector<Verdict> run_checks(const CheckEnv &env)
{
	const Roots &r = env.roots;
	Verdicts v;
	const bool loaded = path_exists(r.sysfs / "module/sroce");
	if (loaded)
		ok(v, "sroce module loaded (version " +
			      read_line(r.sysfs / "module/sroce/version").value_or("?") + ")");
	else
		problem(v, "sroce module not loaded",
			"modprobe sroce (rdma link add ... type sroce loads it too); "
			"dkms status sroce shows whether it is built for this kernel");
	check_signatures(env, loaded, v);

	const auto names = list_devices(r);
	const bool rxe = path_exists(r.sysfs / "module/rdma_rxe");
	if (rxe)
		problem(v, "rdma_rxe is loaded: it holds UDP port 4791, so rdma link add ... "
			   "type sroce fails with \"Address already in use\"",
			"rdma link delete its devices, rmmod rdma_rxe; keep it from loading with "
			"\"blacklist rdma_rxe\" in /etc/modprobe.d/");
	else
		ok(v, "rdma_rxe not loaded");
	if (!rxe && names.empty() && udp_4791_bound(r))
		problem(v, "UDP port 4791 (RoCE v2) is in use by another socket, so an sroce "
			   "device cannot be added",
			"find it with ss -uapn 'sport = :4791' and stop it");

	if (names.empty()) {
		problem(v, "no sroce device",
			"rdma link add sroce0 type sroce netdev NETDEV, or list it in "
			"/etc/sroce/links.conf (sroce-links)");
	} else {
		std::string list;
		for (const auto &n : names)
			list += (list.empty() ? "" : " ") + n;
		ok(v, "sroce devices: " + list);
	}
	for (const auto &n : names) {
		const Device d = read_device(r, n);
		check_port(env, d, v);
		check_addresses(d, v);
	}
	check_provider(env, v);
	check_memlock(env, v);
	return v;
}

void print_verdicts(std::ostream &o, const std::vector<Verdict> &v)
{
	for (const auto &x : v) {
		o << (x.ok ? "ok: " : "problem: ") << x.what << '\n';
		if (!x.ok)
			o << "  fix: " << x.fix << '\n';
	}
}

}  // namespace sroce::ctl
