// The process's mappings of the uverbs device (the rings sroce's provider
// maps), read from /proc/self/maps: the tests that look at or write a ring
// behind the provider's back find a new object's ring as the mapping that
// was not there before it.
#ifndef SROCE_TEST_UVERBS_MAPS_H
#define SROCE_TEST_UVERBS_MAPS_H

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sroce::test {

// A mapping of the uverbs device.
struct RingMap {
	uintptr_t start = 0;
	size_t len = 0;
	off_t offset = 0;
};

inline std::vector<RingMap> uverbs_mappings()
{
	std::ifstream f("/proc/self/maps");
	std::vector<RingMap> maps;
	std::string line;

	while (std::getline(f, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		std::istringstream in(line);
		std::string range, perms, offset;
		in >> range >> perms >> offset;
		RingMap m;
		const auto dash = range.find('-');
		m.start = std::stoull(range.substr(0, dash), nullptr, 16);
		m.len = std::stoull(range.substr(dash + 1), nullptr, 16) -
			m.start;
		m.offset = static_cast<off_t>(std::stoull(offset, nullptr, 16));
		maps.push_back(m);
	}
	return maps;
}

// The mappings in now that are not in before (the rings of an object just
// made).
inline std::vector<RingMap> new_mappings(const std::vector<RingMap> &before)
{
	std::vector<RingMap> added;

	for (const auto &m : uverbs_mappings()) {
		bool old = false;
		for (const auto &b : before)
			old |= b.start == m.start;
		if (!old)
			added.push_back(m);
	}
	return added;
}

// The last of them (the ring of a CQ just made), or an empty one.
inline RingMap new_mapping(const std::vector<RingMap> &before)
{
	const std::vector<RingMap> added = new_mappings(before);

	return added.empty() ? RingMap{} : added.back();
}

} // namespace sroce::test

#endif
