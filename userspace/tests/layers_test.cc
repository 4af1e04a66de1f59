// The layering of the kernel tree (Documentation/architecture.md, "Pieces"):
// the objects (kernel/obj/) reach the data path (kernel/dp/) only through
// the hooks dp/exec.h declares, and the protocol core (kernel/core/), which
// is also compiled into these tests, uses nothing outside kernel/core/.
//
// Checked on the sources: every #include of an obj/ file that resolves (as
// Kbuild's -I kernel/ and the compiler's own directory rule resolve it) to
// a dp/ header other than dp/exec.h, every call or mention in obj/ code of a
// function named after a dp/ file other than exec (sroce_net_*, sroce_post_*,
// ...: the sroce_<file>_<verb> naming rule), and every include of a core/
// file that resolves into the kernel tree outside core/.  The checker itself
// is tested on a small tree written to a temporary directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Include {
	int line;
	std::string target;	 // as written
	bool quoted;		 // "..." rather than <...>
	std::optional<fs::path> resolved; // in the tree, if it is there
};

std::string read_all(const fs::path &p)
{
	std::ifstream in(p, std::ios::binary);
	return {std::istreambuf_iterator<char>(in), {}};
}

// The kernel sources of one directory (*.c and *.h), sorted.
std::vector<fs::path> sources(const fs::path &dir)
{
	std::vector<fs::path> out;
	for (const auto &e : fs::directory_iterator(dir)) {
		const auto ext = e.path().extension();
		if (e.is_regular_file() && (ext == ".c" || ext == ".h"))
			out.push_back(e.path());
	}
	std::sort(out.begin(), out.end());
	return out;
}

// Where the compiler finds an include of file: "x" first next to file,
// then (as <x>) in kernel/ (Kbuild's -I); nullopt if outside the tree.
std::optional<fs::path> resolve(const fs::path &kernel, const fs::path &file,
				const std::string &target, bool quoted)
{
	std::error_code ec;
	if (quoted) {
		const fs::path p = (file.parent_path() / target).lexically_normal();
		if (fs::is_regular_file(p, ec))
			return p;
	}
	const fs::path p = (kernel / target).lexically_normal();
	if (fs::is_regular_file(p, ec))
		return p;
	return std::nullopt;
}

// "# include <x>" or "#include "x"": the delimiter and x; nullopt if l
// is no include directive.
std::optional<std::pair<char, std::string>> parse_include(const std::string &l)
{
	size_t i = l.find_first_not_of(" \t");
	if (i == std::string::npos || l[i] != '#')
		return std::nullopt;
	i = l.find_first_not_of(" \t", i + 1);
	if (i == std::string::npos || l.compare(i, 7, "include") != 0)
		return std::nullopt;
	i = l.find_first_not_of(" \t", i + 7);
	if (i == std::string::npos || (l[i] != '<' && l[i] != '"'))
		return std::nullopt;
	const char close = l[i] == '<' ? '>' : '"';
	const size_t end = l.find(close, i + 1);
	if (end == std::string::npos || end == i + 1)
		return std::nullopt;
	return std::pair{l[i], l.substr(i + 1, end - i - 1)};
}

std::vector<Include> includes_of(const fs::path &kernel, const fs::path &file)
{
	std::vector<Include> out;
	std::istringstream in(read_all(file));
	std::string l;
	for (int n = 1; std::getline(in, l); n++) {
		const auto inc = parse_include(l);
		if (!inc)
			continue;
		const bool quoted = inc->first == '"';
		out.push_back({n, inc->second, quoted,
			       resolve(kernel, file, inc->second, quoted)});
	}
	return out;
}

// p relative to kernel/, with '/' separators ("dp/net.h").
std::string rel(const fs::path &kernel, const fs::path &p)
{
	return p.lexically_relative(kernel.lexically_normal()).generic_string();
}

bool under(const fs::path &kernel, const fs::path &p, const std::string &dir)
{
	return rel(kernel, p).rfind(dir + "/", 0) == 0;
}

std::string where(const fs::path &kernel, const fs::path &file, int line)
{
	return rel(kernel, file) + ":" + std::to_string(line);
}

// kernel/obj/ includes of kernel/dp/ headers other than dp/exec.h.
std::vector<std::string> obj_dp_includes(const fs::path &kernel)
{
	std::vector<std::string> bad;
	for (const auto &f : sources(kernel / "obj"))
		for (const auto &inc : includes_of(kernel, f)) {
			if (!inc.resolved || !under(kernel, *inc.resolved, "dp"))
				continue;
			if (rel(kernel, *inc.resolved) == "dp/exec.h")
				continue;
			bad.push_back(where(kernel, f, inc.line) + " includes " +
				      rel(kernel, *inc.resolved));
		}
	return bad;
}

// kernel/core/ includes that resolve into kernel/ outside kernel/core/, or
// quoted ones that resolve nowhere (the core's own headers all exist).
std::vector<std::string> core_outside_includes(const fs::path &kernel)
{
	std::vector<std::string> bad;
	for (const auto &f : sources(kernel / "core"))
		for (const auto &inc : includes_of(kernel, f)) {
			if (inc.resolved && under(kernel, *inc.resolved, "core"))
				continue;
			if (!inc.resolved && !inc.quoted)
				continue; // a system header
			bad.push_back(where(kernel, f, inc.line) + " includes " +
				      (inc.resolved ? rel(kernel, *inc.resolved)
						    : inc.target + " (not in core/)"));
		}
	return bad;
}

// The source without comments and string or character literals, each
// replaced by spaces (newlines kept, so line numbers stay right).
std::string code_only(const std::string &s)
{
	std::string out = s;
	enum { CODE, BLOCK, LINE, STR, CHR } st = CODE;
	for (size_t i = 0; i < s.size(); i++) {
		const char c = s[i], next = i + 1 < s.size() ? s[i + 1] : '\0';
		auto blank = [&](size_t j) {
			if (out[j] != '\n')
				out[j] = ' ';
		};
		switch (st) {
		case CODE:
			if (c == '/' && next == '*')
				st = BLOCK;
			else if (c == '/' && next == '/')
				st = LINE;
			else if (c == '"')
				st = STR;
			else if (c == '\'')
				st = CHR;
			else
				continue;
			blank(i);
			break;
		case BLOCK:
			blank(i);
			if (c == '*' && next == '/') {
				blank(++i);
				st = CODE;
			}
			break;
		case LINE:
			if (c == '\n')
				st = CODE;
			else
				blank(i);
			break;
		case STR:
		case CHR:
			blank(i);
			if (c == '\\' && next) {
				blank(++i);
			} else if (c == (st == STR ? '"' : '\'')) {
				st = CODE;
			}
			break;
		}
	}
	return out;
}

// The identifiers of one line of code, in order.
std::vector<std::string> identifiers(const std::string &l)
{
	auto word = [](char c) {
		return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
	};
	std::vector<std::string> out;
	for (size_t i = 0; i < l.size();) {
		if (!word(l[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < l.size() && word(l[j]))
			j++;
		if (!std::isdigit(static_cast<unsigned char>(l[i])))
			out.push_back(l.substr(i, j - i));
		i = j;
	}
	return out;
}

// Names in kernel/obj/ code of functions of a dp/ file other than exec.c:
// sroce_<file>_* for each kernel/dp/<file>.c.
std::vector<std::string> obj_dp_names(const fs::path &kernel)
{
	std::vector<std::string> prefixes;
	for (const auto &f : sources(kernel / "dp"))
		if (f.extension() == ".c" && f.stem() != "exec")
			prefixes.push_back("sroce_" + f.stem().string() + "_");
	std::vector<std::string> bad;
	for (const auto &f : sources(kernel / "obj")) {
		std::istringstream in(code_only(read_all(f)));
		std::string l;
		for (int n = 1; std::getline(in, l); n++)
			for (const auto &id : identifiers(l))
				for (const auto &p : prefixes)
					if (id.rfind(p, 0) == 0)
						bad.push_back(where(kernel, f, n) +
							      " names " + id);
	}
	return bad;
}

std::string listing(const std::vector<std::string> &v)
{
	std::string s;
	for (const auto &x : v)
		s += "\n  " + x;
	return s;
}

const fs::path kKernel = SROCE_KERNEL_DIR;

// The tree is there and the parser finds what it must: qp.c's exec.h
// include and the core's own headers.  Without this the checks below
// would pass on an empty or misparsed tree.
TEST(Layers, TheScanSeesTheTree)
{
	ASSERT_GE(sources(kKernel / "obj").size(), 9u);
	ASSERT_GE(sources(kKernel / "dp").size(), 10u);
	ASSERT_GE(sources(kKernel / "core").size(), 10u);
	std::set<std::string> qp;
	for (const auto &inc : includes_of(kKernel, kKernel / "obj/qp.c"))
		if (inc.resolved)
			qp.insert(rel(kKernel, *inc.resolved));
	EXPECT_TRUE(qp.count("dp/exec.h")) << listing({qp.begin(), qp.end()});
	EXPECT_TRUE(qp.count("obj/qp.h")) << listing({qp.begin(), qp.end()});
	std::set<std::string> rc;
	for (const auto &inc : includes_of(kKernel, kKernel / "core/rc.h"))
		if (inc.resolved)
			rc.insert(rel(kKernel, *inc.resolved));
	EXPECT_TRUE(rc.count("core/pkt.h")) << listing({rc.begin(), rc.end()});
}

TEST(Layers, ObjectsIncludeNoDpHeaderButExecH)
{
	const auto bad = obj_dp_includes(kKernel);
	EXPECT_TRUE(bad.empty())
		<< "kernel/obj/ reaches kernel/dp/ only through the hooks "
		   "of dp/exec.h:" << listing(bad);
}

TEST(Layers, ObjectsNameNoDpFunctionButExecHooks)
{
	const auto bad = obj_dp_names(kKernel);
	EXPECT_TRUE(bad.empty())
		<< "kernel/obj/ calls the data path only through the "
		   "sroce_exec_* hooks of dp/exec.h:" << listing(bad);
}

TEST(Layers, CoreIncludesOnlyCore)
{
	const auto bad = core_outside_includes(kKernel);
	EXPECT_TRUE(bad.empty())
		<< "kernel/core/ is built into the unit tests and includes "
		   "nothing outside kernel/core/:" << listing(bad);
}

// A small kernel tree in a temporary directory, removed at the end.
class FakeTree {
public:
	FakeTree()
	{
		std::string tmpl =
			(fs::temp_directory_path() / "sroce-layers.XXXXXX").string();
		if (!mkdtemp(tmpl.data()))
			throw std::system_error(errno, std::generic_category(),
						"mkdtemp");
		root_ = tmpl;
		for (const char *d : {"obj", "dp", "core"})
			fs::create_directories(root_ / d);
	}
	~FakeTree()
	{
		std::error_code ec;
		fs::remove_all(root_, ec);
	}
	FakeTree(const FakeTree &) = delete;
	FakeTree &operator=(const FakeTree &) = delete;

	void write(const std::string &name, const std::string &text)
	{
		std::ofstream(root_ / name) << text;
	}
	const fs::path &root() const { return root_; }

private:
	fs::path root_;
};

std::vector<std::string> sorted(std::vector<std::string> v)
{
	std::sort(v.begin(), v.end());
	return v;
}

TEST(LayersChecker, FindsEveryWayAnObjectIncludesDp)
{
	FakeTree t;
	for (const char *h : {"dp/exec.h", "dp/net.h", "dp/post.h", "device.h",
			      "obj/qp.h"})
		t.write(h, "\n");
	t.write("obj/qp.c", "#include <linux/skbuff.h>\n"
			    "#include \"device.h\"\n"
			    "#include \"dp/exec.h\"\n"
			    "#include \"dp/net.h\"\n"
			    "#  include \"../dp/post.h\"\n"
			    "#include <dp/net.h>\n"
			    "#include \"obj/qp.h\"\n");
	t.write("obj/ah.c", "#include \"dp/exec.h\"\n");
	EXPECT_EQ(sorted(obj_dp_includes(t.root())),
		  sorted({"obj/qp.c:4 includes dp/net.h",
			  "obj/qp.c:5 includes dp/post.h",
			  "obj/qp.c:6 includes dp/net.h"}));
}

TEST(LayersChecker, FindsDpFunctionsInObjectCodeNotInComments)
{
	FakeTree t;
	t.write("dp/exec.c", "\n");
	t.write("dp/net.c", "\n");
	t.write("dp/mcast_rx.c", "\n");
	t.write("obj/mcast.c",
		"/* sroce_net_mcast() joins, see sroce_mcast_rx_deliver() */\n"
		"static int sroce_mcast_attach(void)\n"
		"{\n"
		"\tsroce_exec_mcast_join(0); // not sroce_net_mcast()\n"
		"\tpr_info(\"sroce_net_x\");\n"
		"\treturn sroce_net_mcast(1) + sroce_mcast_rx_deliver(2);\n"
		"}\n"
		"int sroce_internet_x;\n");
	EXPECT_EQ(obj_dp_names(t.root()),
		  (std::vector<std::string>{
			  "obj/mcast.c:6 names sroce_net_mcast",
			  "obj/mcast.c:6 names sroce_mcast_rx_deliver"}));
}

TEST(LayersChecker, FindsCoreIncludesOutsideCore)
{
	FakeTree t;
	for (const char *h : {"core/hdr.h", "core/core_env.h", "obj/qp.h",
			      "dp/net.h", "device.h"})
		t.write(h, "\n");
	t.write("core/hdr.c", "#include <stdint.h>\n"
			      "#include \"hdr.h\"\n"
			      "#include \"core_env.h\"\n"
			      "#include \"obj/qp.h\"\n"
			      "#include \"../dp/net.h\"\n"
			      "#include <device.h>\n"
			      "#include \"missing.h\"\n");
	EXPECT_EQ(sorted(core_outside_includes(t.root())),
		  sorted({"core/hdr.c:4 includes obj/qp.h",
			  "core/hdr.c:5 includes dp/net.h",
			  "core/hdr.c:6 includes device.h",
			  "core/hdr.c:7 includes missing.h (not in core/)"}));
}

} // namespace
