// SPDX-License-Identifier: GPL-2.0
#include "links_conf.h"

#include <charconv>
#include <set>

namespace sroce::links {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::vector<std::string_view> split_words(std::string_view line)
{
	std::vector<std::string_view> words;
	size_t i = 0;
	while (i < line.size()) {
		while (i < line.size() && is_space(line[i]))
			++i;
		size_t start = i;
		while (i < line.size() && !is_space(line[i]))
			++i;
		if (i > start)
			words.push_back(line.substr(start, i - start));
	}
	return words;
}

bool printable_no_space(std::string_view s)
{
	for (unsigned char c : s)
		if (c <= ' ' || c >= 0x7f)
			return false;
	return true;
}

std::string at(unsigned line, const std::string &msg)
{
	return std::to_string(line) + ": " + msg;
}

}  // namespace

// ib_core: IB_DEVICE_NAME_MAX is 64 with the NUL; a '%' would be taken as a
// name pattern, '/' cannot be a sysfs name.
bool valid_device_name(std::string_view s)
{
	return !s.empty() && s.size() < 64 && printable_no_space(s) &&
	       s.find_first_of("%/") == std::string_view::npos && s != "." && s != "..";
}

// dev_valid_name(): IFNAMSIZ is 16 with the NUL, no '/', ':' or white space.
bool valid_netdev_name(std::string_view s)
{
	return !s.empty() && s.size() < 16 && printable_no_space(s) &&
	       s.find_first_of("/:") == std::string_view::npos && s != "." && s != "..";
}

ParseResult parse(std::string_view text)
{
	ParseResult r;
	std::set<std::string, std::less<>> names, netdevs;
	unsigned lineno = 0;

	while (!text.empty()) {
		size_t nl = text.find('\n');
		std::string_view line = text.substr(0, nl);
		text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
		++lineno;

		if (size_t hash = line.find('#'); hash != std::string_view::npos)
			line = line.substr(0, hash);
		auto words = split_words(line);
		if (words.empty())
			continue;
		if (words.size() < 2 || words.size() > 3) {
			r.errors.push_back(at(lineno, "expected \"NAME NETDEV [mtu=BYTES]\", got " +
						   std::to_string(words.size()) + " field(s)"));
			continue;
		}
		Link l{std::string(words[0]), std::string(words[1]), std::nullopt, lineno};
		bool bad = false;
		if (!valid_device_name(l.name)) {
			r.errors.push_back(at(lineno, "invalid device name '" + l.name + "'"));
			bad = true;
		}
		if (!valid_netdev_name(l.netdev)) {
			r.errors.push_back(at(lineno, "invalid netdev name '" + l.netdev + "'"));
			bad = true;
		}
		if (words.size() == 3) {
			std::string_view opt = words[2];
			unsigned mtu = 0;
			const char *end = opt.data() + opt.size();
			if (!opt.starts_with("mtu=")) {
				r.errors.push_back(at(lineno, "unknown option '" + std::string(opt) +
							   "' (only mtu=BYTES)"));
				bad = true;
			} else if (auto [p, ec] = std::from_chars(opt.data() + 4, end, mtu);
				   ec != std::errc() || p != end || opt.size() == 4 ||
				   mtu < kMtuMin || mtu > kMtuMax) {
				r.errors.push_back(at(lineno, "invalid MTU '" + std::string(opt.substr(4)) +
							   "' (" + std::to_string(kMtuMin) + ".." +
							   std::to_string(kMtuMax) + ")"));
				bad = true;
			} else {
				l.mtu = mtu;
			}
		}
		if (bad)
			continue;
		// ib_core refuses a second device of one name, sroce a second
		// device on one netdev: say so here rather than half-way at boot.
		if (!names.insert(l.name).second) {
			r.errors.push_back(at(lineno, "device '" + l.name + "' defined twice"));
			continue;
		}
		if (!netdevs.insert(l.netdev).second) {
			r.errors.push_back(at(lineno, "netdev '" + l.netdev +
						   "' already carries a device (one per netdev)"));
			continue;
		}
		r.links.push_back(std::move(l));
	}
	return r;
}

}  // namespace sroce::links
