// SPDX-License-Identifier: GPL-2.0
//
// Parser of /etc/sroce/links.conf, the sroce devices sroce-links creates
// (Documentation/admin-guide.md, "Persistent links").  One device a line:
//
//     # comment
//     NAME  NETDEV  [mtu=BYTES]   # comment
//
// Kept apart from the tool so that the unit tests can drive it with text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sroce::links {

struct Link {
	std::string name;          // RDMA device name (rdma link add NAME)
	std::string netdev;        // Ethernet netdev it sits on
	std::optional<unsigned> mtu;  // netdev MTU to set first, if given
	unsigned line = 0;         // where it was defined
};

struct ParseResult {
	std::vector<Link> links;
	std::vector<std::string> errors;  // "LINE: message", in file order
	bool ok() const { return errors.empty(); }
};

// Parses the whole text; every bad line is reported, none is half-used:
// callers act only on an error-free result.
ParseResult parse(std::string_view text);

// The device names ib_core and the netdev names the kernel accept.
bool valid_device_name(std::string_view s);
bool valid_netdev_name(std::string_view s);

inline constexpr unsigned kMtuMin = 68;      // IPv4 minimum (ETH_MIN_MTU)
inline constexpr unsigned kMtuMax = 65535;   // IP maximum datagram

}  // namespace sroce::links
