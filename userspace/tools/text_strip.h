// SPDX-License-Identifier: GPL-2.0
// Whitespace trimming shared by the host tools of make bench (bench-fold,
// bench-report): the blanks Python's str.strip() removes, which their
// output was made byte-identical to.
#ifndef SROCE_TOOLS_TEXT_STRIP_H
#define SROCE_TOOLS_TEXT_STRIP_H

#include <string>
#include <string_view>

namespace sroce::tools {

inline constexpr const char *kBlank = " \t\n\r\f\v";

// s without leading and trailing blanks.
inline std::string strip(std::string_view s)
{
	const auto b = s.find_first_not_of(kBlank);

	if (b == std::string_view::npos)
		return {};
	return std::string(s.substr(b, s.find_last_not_of(kBlank) - b + 1));
}

} // namespace sroce::tools

#endif
