// SPDX-License-Identifier: GPL-2.0
//
// bench-fold: fold the call stacks of `perf script` into one line per
// distinct stack, the input format of flame-graph viewers (speedscope,
// inferno).  Written for make bench --profile; the usage text below is what
// --help prints.

#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text_strip.h"

namespace {

constexpr std::string_view kUsage =
	R"usage(Fold the call stacks of `perf script` into one line per distinct stack,
the input format of flame-graph viewers (e.g. speedscope, or inferno):

  COMM;OUTERMOST_FRAME;...;INNERMOST_FRAME COUNT

  perf script -F comm,ip,sym,dso | bench-fold [--keep-offsets] > out.folded

perf script prints one block per sample: a header line (the command name
first; with -F comm only that) and, indented, the stack innermost frame
first, "ADDRESS SYMBOL[+OFFSET] (DSO)"; blocks are separated by blank
lines.  A frame without a symbol is shown as [DSO basename].  Symbol
offsets are dropped (--keep-offsets keeps them).  Lines are sorted, the
most frequent stack first.  Written for make bench --profile
(Documentation/benchmarks.md, "Profiling"); built as
build/userspace/tools/bench-fold, scripts/bench-fold runs it.
)usage";

using sroce::tools::strip;

std::string no_semicolons(std::string s)
{
	std::replace(s.begin(), s.end(), ';', ':');
	return s;
}

// One frame line "  ADDRESS SYMBOL[+OFFSET] (DSO)" to its name.
std::string frame_name(const std::string &line, bool keep_offsets)
{
	static const std::regex frame_re(
		R"(^\s+(?:[0-9a-fA-F]+\s+)?(.*?)(?:\s+\(([^()]*)\))?\s*$)");
	static const std::regex off_re(R"(\+0x[0-9a-fA-F]+$)");
	std::smatch m;
	std::string sym, dso;
	if (std::regex_match(line, m, frame_re)) {
		sym = m[1].str();
		dso = m[2].matched ? m[2].str() : std::string();
	} else {
		sym = strip(line);
	}
	if (!keep_offsets)
		sym = std::regex_replace(sym, off_re, "");
	if (sym.empty() || sym == "[unknown]") {
		const auto slash = dso.rfind('/');
		const std::string base =
			slash == std::string::npos ? dso : dso.substr(slash + 1);
		if (dso.empty() || dso == "[unknown]")
			sym = "[unknown]";
		else if (base.size() >= 2 && base.front() == '[' && base.back() == ']')
			sym = base; // [vdso], [kernel.kallsyms]
		else
			sym = "[" + base + "]";
	}
	return no_semicolons(std::move(sym));
}

// The command name of a sample's header line: perf pads it and follows it
// by the other header fields, if any were asked for; it may hold blanks.
std::string comm_name(const std::string &line)
{
	static const std::regex sep_re(R"(\s{2,}|\s+\d+[/ ]|\s+\[\d+\])");
	const std::string s = strip(line);
	std::smatch m;
	std::string comm = std::regex_search(s, m, sep_re) ? s.substr(0, m.position(0)) : s;
	comm = strip(comm);
	if (comm.empty())
		comm = "?";
	return no_semicolons(std::move(comm));
}

std::map<std::string, long> fold(std::istream &in, bool keep_offsets)
{
	std::map<std::string, long> stacks;
	bool have_comm = false;
	std::string comm;
	std::vector<std::string> frames;
	auto flush = [&] {
		if (!have_comm)
			return;
		std::string stack = comm;
		for (auto it = frames.rbegin(); it != frames.rend(); ++it)
			stack += ";" + *it;
		++stacks[stack];
	};
	std::string line;
	while (std::getline(in, line)) {
		if (strip(line).empty()) {
			flush();
			have_comm = false;
			frames.clear();
		} else if (line[0] == ' ' || line[0] == '\t') {
			if (have_comm)
				frames.push_back(frame_name(line, keep_offsets));
		} else {
			flush();
			comm = comm_name(line);
			have_comm = true;
			frames.clear();
		}
	}
	flush();
	return stacks;
}

} // namespace

int main(int argc, char **argv)
{
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		const std::string_view a = argv[i];
		if (a == "--keep-offsets") {
			keep = true;
		} else if (a == "-h" || a == "--help") {
			std::cout << kUsage;
			return 0;
		} else {
			std::cerr << "bench-fold: unknown argument " << a << "\n";
			return 2;
		}
	}
	std::ios::sync_with_stdio(false);
	const auto stacks = fold(std::cin, keep);
	std::vector<std::pair<std::string, long>> rows(stacks.begin(), stacks.end());
	std::stable_sort(rows.begin(), rows.end(),
			 [](const auto &x, const auto &y) { return x.second > y.second; });
	for (const auto &[stack, n] : rows)
		std::cout << stack << ' ' << n << '\n';
	return std::cout.flush() ? 0 : 1;
}
