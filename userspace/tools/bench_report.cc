// SPDX-License-Identifier: GPL-2.0
//
// bench-report: the host side of `make bench`.  Turns the raw tool outputs
// that scripts/bench-guest.sh left in a bench directory into figures
// (median, min, max over the runs), ratios (sroce/rdma_rxe, sroce/TCP) and
// the PASS/MISS verdicts of the targets of issue 14; the usage text below is
// what --help prints.  scripts/bench-report-test checks it.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <unistd.h>
#include <utility>
#include <vector>

#include "text_strip.h"

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kUsage = R"usage(The host side of `make bench`: turn the raw output that
scripts/bench-guest.sh left in a bench directory into figures, ratios and
verdicts.

  bench-report [--no-chart] [--title TEXT] DIR

DIR holds one directory per guest kernel (DIR/6.1, DIR/6.12, as
scripts/bench writes them; a DIR of an older bench with DIR/wire and
DIR/loopback directly is one kernel) and in it one test-bed log dir per
set-up: wire (two guests; the clients ran in guest b), wire1 (the same
with one vCPU per guest, the latencies only) and/or loopback (one
guest).  Each has <role>/raw/DRIVER.TOOL.SIZE.qQPS.rROUND.ATTEMPT.client
(perftest, iperf3, tcp_pingpong, ucx_perftest (TOOL ucx_tag: a batch of
tag_lat at 8 B and tag_bw at 64 KiB) or fi_pingpong (TOOL fi_rdm) output;
the highest ATTEMPT of a run counts) and <role>/cpu.txt ("NAME
BUSY_JIFFIES" per run and guest).

Writes DIR/results.csv (median, min, max over the runs of every figure),
DIR/ratios.csv (sroce/rdma_rxe and sroce/TCP of the medians),
DIR/report.txt (a table per kernel and set-up, the PASS/MISS lines of the
targets of issue 14 per kernel and set-up, and the row(s) of the history
table of Documentation/benchmarks.md; also printed), DIR/history.txt (the
rows alone) and, unless --no-chart or gnuplot is missing, DIR/chart.png.
A run whose tool failed, printed no result row or could not calibrate its
clock (numbers 0 or inf) gives no value; the table says how many runs
counted.  Built as build/userspace/tools/bench-report
(userspace/tools/bench_report.cc); scripts/bench-report runs it.
)usage";

constexpr double kMiB = 1 << 20;
constexpr double kGiB = 1 << 30;
constexpr double kUserHz = 100; // /proc/stat counts USER_HZ ticks on every arch

using Opt = std::optional<double>;

const std::vector<std::pair<std::string, std::string>> kSetups = {
	{"wire", "two guests on one wire"},
	{"wire1", "two guests on one wire, one vCPU each: the latencies"},
	{"loopback", "one guest, server and client on one device"},
};
const std::vector<std::string> kDrivers = {"sroce", "rdma_rxe", "tcp"};
const std::vector<std::string> kOps3 = {"write", "send", "read"};

std::string op_of(const std::string &tool)
{
	static const std::map<std::string, std::string> ops = {
		{"ib_write_bw", "write"}, {"ib_send_bw", "send"}, {"ib_read_bw", "read"},
		{"ib_write_lat", "write"}, {"ib_send_lat", "send"}, {"ib_read_lat", "read"},
	};
	const auto it = ops.find(tool);
	return it == ops.end() ? std::string() : it->second;
}

// printf-style formatting of one double
std::string fmtd(const char *spec, double x)
{
	char buf[128];
	std::snprintf(buf, sizeof(buf), spec, x);
	return buf;
}

std::string lpad(const std::string &s, std::size_t w)
{
	return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

std::string rpad(const std::string &s, std::size_t w)
{
	return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

using sroce::tools::kBlank;
using sroce::tools::strip;

std::vector<std::string> split_ws(const std::string &s)
{
	std::vector<std::string> out;
	std::size_t i = 0;
	while ((i = s.find_first_not_of(kBlank, i)) != std::string::npos) {
		const auto e = s.find_first_of(kBlank, i);
		out.push_back(s.substr(i, e == std::string::npos ? std::string::npos : e - i));
		i = e;
	}
	return out;
}

std::vector<std::string> lines_of(const std::string &text)
{
	std::vector<std::string> out;
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		out.push_back(line);
	}
	return out;
}

bool all_digits(const std::string &s)
{
	return !s.empty() && std::all_of(s.begin(), s.end(),
					 [](unsigned char c) { return c >= '0' && c <= '9'; });
}

// A whole string as a double (decimal, inf or nan), or nothing.
Opt to_double(const std::string &s)
{
	if (s.empty() || s.find_first_of("xXpP") != std::string::npos)
		return std::nullopt;
	char *end = nullptr;
	const double v = std::strtod(s.c_str(), &end);
	if (end != s.c_str() + s.size())
		return std::nullopt;
	return v;
}

bool finite_pos(std::initializer_list<double> xs)
{
	return std::all_of(xs.begin(), xs.end(),
			   [](double x) { return std::isfinite(x) && x > 0; });
}

std::string read_text(const fs::path &p, bool *ok = nullptr)
{
	std::ifstream f(p, std::ios::binary);
	if (ok)
		*ok = bool(f);
	std::ostringstream s;
	s << f.rdbuf();
	return s.str();
}

std::string size_text(long n)
{
	if (n >= (1L << 20) && n % (1L << 20) == 0)
		return std::to_string(n / (1L << 20)) + " MiB";
	if (n >= 1024 && n % 1024 == 0)
		return std::to_string(n / 1024) + " KiB";
	return std::to_string(n) + " B";
}

// One measured quantity; higher: whether higher is better.
struct Figure {
	std::string fid, label, unit;
	bool higher;
};

std::vector<Figure> figure_list(const std::set<long> &sizes)
{
	std::vector<Figure> f;
	for (const auto &op : kOps3)
		for (long s : sizes)
			f.push_back({op + "_bw_" + std::to_string(s), op + " bw " + size_text(s),
				     "MiB/s", true});
	for (const auto &op : kOps3)
		if (sizes.count(64))
			f.push_back({op + "_rate_64", op + " msg rate 64 B", "Kpps", true});
	f.push_back({"write_bw_65536_q4", "write bw 64 KiB -q 4", "MiB/s", true});
	f.push_back({"write_q4_scaling", "write -q 4 / -q 1 (64 KiB)", "x", true});
	for (const auto &op : kOps3) {
		f.push_back({op + "_lat_typ", op + " lat 2 B typical", "usec", false});
		f.push_back({op + "_lat_p99", op + " lat 2 B p99", "usec", false});
	}
	f.push_back({"tcp_bw", "TCP bw 64 KiB (iperf3)", "MiB/s", true});
	f.push_back({"tcp_lat_typ", "TCP lat 2 B typical (RTT/2)", "usec", false});
	f.push_back({"tcp_lat_p99", "TCP lat 2 B p99 (RTT/2)", "usec", false});
	f.push_back({"ucx_lat_8", "UCX tag lat 8 B median", "usec", false});
	f.push_back({"ucx_bw_65536", "UCX tag bw 64 KiB", "MiB/s", true});
	f.push_back({"fi_lat_64", "fi_pingpong rdm 64 B usec/xfer", "usec", false});
	f.push_back({"fi_bw_1048576", "fi_pingpong rdm bw 1 MiB", "MB/s", true});
	f.push_back({"cpu_per_gib", "guest CPU per GiB (bw >= 64 KiB)", "CPU s/GiB", false});
	f.push_back({"cpu_startup", "guest CPU of a 20 x 2 B ib_write_bw", "CPU s", false});
	return f;
}

// The TCP figure each RDMA figure is compared with (sroce/TCP column).
// perftest's write and send latencies are half round trips (its read
// latency is a whole one): the TCP latencies are tcp_pingpong's round trips
// halved, to compare like with like.
std::string tcp_peer(const std::string &fid)
{
	static const std::map<std::string, std::string> peer = {
		{"write_bw_65536", "tcp_bw"}, {"send_bw_65536", "tcp_bw"},
		{"read_bw_65536", "tcp_bw"}, {"write_lat_typ", "tcp_lat_typ"},
		{"send_lat_typ", "tcp_lat_typ"}, {"write_lat_p99", "tcp_lat_p99"},
		{"send_lat_p99", "tcp_lat_p99"}, {"cpu_per_gib", "cpu_per_gib"},
	};
	const auto it = peer.find(fid);
	if (it != peer.end())
		return it->second;
	return fid.rfind("tcp_", 0) == 0 ? fid : std::string();
}

struct BwRow {
	long bytes, iters;
	double bw, rate;
};
struct LatRow {
	double typ, p99;
};

// The numbers of the first result row of a perftest client output, if it
// is one.
std::optional<std::vector<double>> perftest_row(const std::string &text)
{
	if (text.find("Correlation coefficient r^2") != std::string::npos)
		return std::nullopt; // clock calibration failed
	static const std::regex head_re(R"(^\s*#bytes)");
	bool in_table = false;
	for (const auto &line : lines_of(text)) {
		if (std::regex_search(line, head_re)) {
			in_table = true;
			continue;
		}
		if (!in_table)
			continue;
		const auto f = split_ws(line);
		if (f.empty() || !all_digits(f[0]))
			continue;
		std::vector<double> v;
		for (const auto &x : f) {
			const Opt d = to_double(x);
			if (!d)
				return std::nullopt;
			v.push_back(*d);
		}
		return v;
	}
	return std::nullopt;
}

// Its numbers must be finite and positive, unless any_value (a run that
// moves almost nothing may print 0.00 MB/sec).
std::optional<BwRow> parse_bw(const std::string &text, bool any_value = false)
{
	const auto v = perftest_row(text);
	if (v && v->size() >= 5 && (any_value || finite_pos({(*v)[3], (*v)[4]})))
		return BwRow{long((*v)[0]), long((*v)[1]), (*v)[3], (*v)[4] * 1000};
	return std::nullopt;
}

std::optional<LatRow> parse_lat(const std::string &text)
{
	const auto v = perftest_row(text);
	if (v && v->size() >= 8 && finite_pos({(*v)[2], (*v)[4], (*v)[7]}))
		return LatRow{(*v)[4], (*v)[7]};
	return std::nullopt;
}

struct Iperf {
	double bw, moved;
};

double unit_factor(const std::string &u, bool binary)
{
	if (u == "K")
		return binary ? 1024 : 1e3;
	if (u == "M")
		return binary ? kMiB : 1e6;
	if (u == "G")
		return binary ? kGiB : 1e9;
	return 1;
}

std::optional<Iperf> parse_iperf3(const std::string &text)
{
	static const std::regex re(
		R"(([0-9.]+)\s+([KMG]?)Bytes\s+([0-9.]+)\s+([KMG]?)bits/sec.*receiver)");
	for (const auto &line : lines_of(text)) {
		std::smatch m;
		if (!std::regex_search(line, m, re))
			continue;
		const Opt a = to_double(m[1].str()), b = to_double(m[3].str());
		if (!a || !b)
			continue;
		const double moved = *a * unit_factor(m[2].str(), true);
		const double bps = *b * unit_factor(m[4].str(), false) / 8;
		if (finite_pos({moved, bps}))
			return Iperf{bps / kMiB, moved};
	}
	return std::nullopt;
}

std::optional<LatRow> parse_pingpong(const std::string &text)
{
	static const std::regex re(R"(typical_us ([0-9.]+) .*p99_us ([0-9.]+))");
	for (const auto &line : lines_of(text)) {
		std::smatch m;
		if (!std::regex_search(line, m, re))
			continue;
		const Opt t = to_double(m[1].str()), p = to_double(m[2].str());
		if (t && p && finite_pos({*t, *p}))
			return LatRow{*t / 2, *p / 2};
		return std::nullopt;
	}
	return std::nullopt;
}

// ucx_perftest's batch of bench-guest.sh (tag_lat at 8 B, then tag_bw at
// 64 KiB): its "Final:" rows (iterations, latency typical, average, overall
// in usec, bandwidth average, overall in MB/s of 2^20 bytes, message rate
// average, overall).  The typical latency of the first row and the overall
// bandwidth of the second; nothing if the guest found UCX's tag lanes not
// on the device ("bench: FAILED" appended to the output).
struct UcxBatch {
	Opt lat, bw;
};

UcxBatch parse_ucx(const std::string &text)
{
	UcxBatch r;
	if (text.find("bench: FAILED") != std::string::npos)
		return r;
	std::vector<std::vector<double>> rows;
	for (const auto &line : lines_of(text)) {
		const auto f = split_ws(line);
		if (f.size() != 9 || f[0] != "Final:" || !all_digits(f[1]))
			continue;
		std::vector<double> v;
		for (std::size_t i = 1; i < f.size(); i++) {
			const Opt d = to_double(f[i]);
			v.push_back(d ? *d : NAN);
		}
		rows.push_back(std::move(v));
	}
	if (rows.size() >= 1 && finite_pos({rows[0][1]}))
		r.lat = rows[0][1];
	if (rows.size() >= 2 && finite_pos({rows[1][5]}))
		r.bw = rows[1][5];
	return r;
}

// fi_pingpong's row (bytes, #sent, =#ack, total, time, MB/sec, usec/xfer,
// Mxfers/sec) of a run of one size: MB/sec (10^6 bytes, both directions)
// and usec/xfer (a one-way transfer), if every message was acknowledged;
// each if positive and finite (MB/sec prints as 0.00 at 64 B under TCG).
struct FiRow {
	Opt mbps, usec;
};

std::optional<FiRow> parse_fi(const std::string &text)
{
	for (const auto &line : lines_of(text)) {
		const auto f = split_ws(line);
		if (f.size() != 8 || !all_digits(f[1]) || f[2].empty() || f[2][0] != '=')
			continue;
		if (f[2].substr(1) != f[1])
			return std::nullopt;
		FiRow r;
		const Opt mbps = to_double(f[5]), usec = to_double(f[6]);
		if (mbps && finite_pos({*mbps}))
			r.mbps = mbps;
		if (usec && finite_pos({*usec}))
			r.usec = usec;
		return r;
	}
	return std::nullopt;
}

using Key = std::pair<std::string, std::string>; // figure, driver
using Runs = std::map<long, double>;		   // run -> value

struct SetupData {
	std::map<Key, Runs> vals;
	std::map<Key, int> failed;
	std::set<long> sizes;
};

std::vector<fs::path> sorted_entries(const fs::path &dir)
{
	std::vector<fs::path> out;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(dir, ec))
		out.push_back(e.path());
	std::sort(out.begin(), out.end(),
		  [](const fs::path &a, const fs::path &b) { return a.filename() < b.filename(); });
	return out;
}

bool is_dir(const fs::path &p)
{
	std::error_code ec;
	return fs::is_directory(p, ec);
}

SetupData load_setup(const fs::path &sdir)
{
	static const std::regex name_re(
		R"(^([a-z_]+)\.([a-z0-9_]+)\.([0-9]+)\.q([0-9]+)\.r([0-9]+)\.([0-9]+)\.client$)");
	using RunKey = std::tuple<std::string, std::string, long, long, long>;
	SetupData d;
	std::map<RunKey, std::pair<long, fs::path>> files; // highest attempt
	std::map<std::string, long> cpu;		    // run name -> busy jiffies
	for (const auto &rdir : sorted_entries(sdir)) {
		if (!is_dir(rdir))
			continue;
		const fs::path raw = rdir / "raw";
		if (is_dir(raw)) {
			for (const auto &p : sorted_entries(raw)) {
				const std::string name = p.filename().string();
				std::smatch m;
				if (!std::regex_match(name, m, name_re))
					continue;
				const RunKey key{m[1].str(), m[2].str(), std::stol(m[3].str()),
						 std::stol(m[4].str()), std::stol(m[5].str())};
				const long att = std::stol(m[6].str());
				const auto it = files.find(key);
				if (it == files.end() || it->second.first < att)
					files[key] = {att, p};
			}
		}
		bool ok = false;
		const std::string ctext = read_text(rdir / "cpu.txt", &ok);
		if (!ok)
			continue;
		for (const auto &line : lines_of(ctext)) {
			const auto p = split_ws(line);
			if (p.size() != 2)
				continue;
			const std::string n = p[1].substr(p[1].find_first_not_of('-') == std::string::npos
								  ? p[1].size()
								  : p[1].find_first_not_of('-'));
			if (all_digits(n))
				cpu[p[0]] += std::stol(p[1]);
		}
	}
	struct Acc {
		double jif = 0, moved = 0;
	};
	std::map<std::pair<std::string, long>, Acc> cpu_acc;
	std::map<std::pair<std::string, long>, long> base;
	auto put = [&d](const std::string &fid, const std::string &drv, long run, Opt v) {
		if (v)
			d.vals[{fid, drv}][run] = *v;
		else
			d.failed[{fid, drv}]++;
	};
	for (const auto &[key, av] : files) {
		const auto &[drv, tool, size, q, run] = key;
		const std::string text = read_text(av.second);
		const std::string rname = drv + "." + tool + "." + std::to_string(size) + ".q" +
					  std::to_string(q) + ".r" + std::to_string(run);
		const auto cit = cpu.find(rname);
		const bool has_cpu = cit != cpu.end();
		const auto ends = [&tool](std::string_view sfx) {
			return tool.size() >= sfx.size() &&
			       tool.compare(tool.size() - sfx.size(), sfx.size(), sfx) == 0;
		};
		if (tool == "baseline") {
			if (parse_bw(text, true) && has_cpu)
				base[{drv, run}] = cit->second;
		} else if (ends("_bw") && !op_of(tool).empty()) {
			const std::string op = op_of(tool);
			const auto r = parse_bw(text);
			const std::string fid = op + "_bw_" + std::to_string(size) +
						(q != 1 ? "_q" + std::to_string(q) : "");
			if (q == 1)
				d.sizes.insert(size);
			put(fid, drv, run, r ? Opt(r->bw) : std::nullopt);
			if (size == 64 && q == 1)
				put(op + "_rate_64", drv, run, r ? Opt(r->rate) : std::nullopt);
			if (r && q == 1 && size >= 65536 && has_cpu) {
				auto &a = cpu_acc[{drv, run}];
				a.jif += cit->second;
				a.moved += double(r->bytes) * double(r->iters);
			}
		} else if (ends("_lat") && !op_of(tool).empty()) {
			const std::string op = op_of(tool);
			const auto r = parse_lat(text);
			put(op + "_lat_typ", drv, run, r ? Opt(r->typ) : std::nullopt);
			put(op + "_lat_p99", drv, run, r ? Opt(r->p99) : std::nullopt);
		} else if (tool == "iperf3") {
			const auto r = parse_iperf3(text);
			put("tcp_bw", "tcp", run, r ? Opt(r->bw) : std::nullopt);
			if (r && has_cpu) {
				auto &a = cpu_acc[{"tcp", run}];
				a.jif += cit->second;
				a.moved += r->moved;
			}
		} else if (tool == "ucx_tag") {
			const auto r = parse_ucx(text);
			put("ucx_lat_8", drv, run, r.lat);
			put("ucx_bw_65536", drv, run, r.bw);
		} else if (tool == "fi_rdm" && (size == 64 || size == 1048576)) {
			const auto r = parse_fi(text);
			if (size == 64)
				put("fi_lat_64", drv, run, r ? r->usec : std::nullopt);
			else
				put("fi_bw_1048576", drv, run, r ? r->mbps : std::nullopt);
		} else if (tool == "pingpong") {
			const auto r = parse_pingpong(text);
			put("tcp_lat_typ", "tcp", run, r ? Opt(r->typ) : std::nullopt);
			put("tcp_lat_p99", "tcp", run, r ? Opt(r->p99) : std::nullopt);
		}
	}
	// CPU per GiB: the busy time of the bulk runs over the bytes they
	// moved, tool start-up included (subtracting the baseline run's busy
	// time proved too noisy: it varies as much as a bulk run costs); the
	// baseline is reported as a figure of its own
	for (const auto &[k, a] : cpu_acc)
		if (a.moved > 0)
			d.vals[{"cpu_per_gib", k.first}][k.second] = a.jif / kUserHz / (a.moved / kGiB);
	for (const auto &[k, jif] : base)
		d.vals[{"cpu_startup", k.first}][k.second] = double(jif) / kUserHz;
	// -q 4 scaling per round (both runs of the round must have worked)
	for (const std::string drv : {"sroce", "rdma_rxe"}) {
		const auto i1 = d.vals.find({"write_bw_65536", drv});
		const auto i4 = d.vals.find({"write_bw_65536_q4", drv});
		if (i1 == d.vals.end() || i4 == d.vals.end())
			continue;
		Runs sc;
		for (const auto &[run, v1] : i1->second) {
			const auto it = i4->second.find(run);
			if (it != i4->second.end())
				sc[run] = it->second / v1;
		}
		if (!sc.empty())
			d.vals[{"write_q4_scaling", drv}] = std::move(sc);
	}
	return d;
}

struct Stats {
	double med, min, max;
	std::size_t n;
};

std::optional<Stats> stats(const Runs &runs)
{
	std::vector<double> xs;
	for (const auto &[run, v] : runs)
		xs.push_back(v);
	if (xs.empty())
		return std::nullopt;
	std::sort(xs.begin(), xs.end());
	const std::size_t n = xs.size();
	const double med = n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
	return Stats{med, xs.front(), xs.back(), n};
}

std::string fmt(Opt x)
{
	if (!x)
		return "-";
	const double v = *x;
	if (v == 0 || std::fabs(v) >= 100)
		return fmtd("%.0f", v);
	if (std::fabs(v) >= 10)
		return fmtd("%.1f", v);
	if (std::fabs(v) >= 1)
		return fmtd("%.2f", v);
	return fmtd("%.3g", v);
}

Opt ratio(Opt a, Opt b)
{
	if (!a || !b || *b == 0)
		return std::nullopt;
	return *a / *b;
}

std::vector<std::string> split_any(const std::string &s, std::string_view seps)
{
	std::vector<std::string> out;
	std::size_t i = 0;
	for (;;) {
		const auto e = s.find_first_of(seps, i);
		out.push_back(s.substr(i, e == std::string::npos ? std::string::npos : e - i));
		if (e == std::string::npos)
			return out;
		i = e + 1;
	}
}

// Sort key: 6.1 before 6.12, numbers before words.
bool version_less(const std::string &a, const std::string &b)
{
	using Part = std::tuple<int, double, std::string>;
	auto key = [](const std::string &s) {
		std::vector<Part> k;
		for (const auto &x : split_any(s, ".-"))
			k.push_back(all_digits(x) ? Part{0, std::stod(x), ""} : Part{1, 0, x});
		return k;
	};
	return key(a) < key(b);
}

std::optional<std::string> setup_txt_text(const fs::path &top)
{
	bool ok = false;
	std::string t = read_text(top / "setup.txt", &ok);
	if (!ok)
		return std::nullopt;
	return t;
}

// The per-kernel directories of a bench directory, in version order; an
// old bench directory (DIR/wire, DIR/loopback) is one kernel, labelled with
// the kernel its setup.txt names.
std::vector<std::pair<std::string, fs::path>> find_kernels(const fs::path &top)
{
	auto has_setup = [](const fs::path &d) {
		return std::any_of(kSetups.begin(), kSetups.end(),
				   [&d](const auto &s) { return is_dir(d / s.first); });
	};
	if (has_setup(top)) {
		std::string label = "?";
		if (const auto t = setup_txt_text(top)) {
			static const std::regex re(R"((?:^|\n)guests: kernel ([^,\s]+))");
			std::smatch m;
			if (std::regex_search(*t, m, re))
				label = m[1].str();
		}
		return {{label, top}};
	}
	std::vector<std::pair<std::string, fs::path>> found;
	for (const auto &d : sorted_entries(top))
		if (is_dir(d) && has_setup(d))
			found.emplace_back(d.filename().string(), d);
	std::stable_sort(found.begin(), found.end(), [](const auto &x, const auto &y) {
		return version_less(x.first, y.first);
	});
	return found;
}

// The guest's uname -r, from the first script.log that names it.
std::optional<std::string> guest_kver(const fs::path &kdir)
{
	static const std::regex re(R"(bench: mode \w+, kernel (\S+?),)");
	for (const auto &s : kSetups) {
		for (const char *role : {"a", "b"}) {
			bool ok = false;
			const std::string t = read_text(kdir / s.first / role / "script.log", &ok);
			if (!ok)
				continue;
			for (const auto &line : lines_of(t)) {
				std::smatch m;
				if (std::regex_search(line, m, re))
					return m[1].str();
			}
		}
	}
	return std::nullopt;
}

std::map<std::string, std::string> read_setup_txt(const fs::path &top)
{
	std::map<std::string, std::string> info;
	const auto t = setup_txt_text(top);
	if (!t)
		return info;
	std::size_t i = 0;
	while (i < t->size()) {
		auto e = t->find('\n', i);
		e = e == std::string::npos ? t->size() : e + 1;
		const std::string line = t->substr(i, e - i);
		i = e;
		const auto sep = line.find(": ");
		if (sep == std::string::npos)
			continue;
		info.emplace(line.substr(0, sep), strip(line.substr(sep + 2)));
	}
	return info;
}

using Row = std::vector<std::string>;

struct ChartRow {
	std::string setup, label;
	Opt adv_rxe, adv_tcp;
};

struct Verdict {
	std::string kernel, setup, text;
	std::optional<bool> ok;
};

using Medians = std::map<Key, double>;

// The targets of issue 14 for one set-up of one kernel, from the medians
// of one run.
std::vector<std::pair<std::string, std::optional<bool>>> targets(const std::string &setup,
								   const Medians &med)
{
	std::vector<std::pair<std::string, std::optional<bool>>> res;
	// wire1 (scripts/bench) measures only the latencies: it has the
	// wire's latency targets and no others
	const bool lat_only = setup == "wire1";
	const bool wire = setup == "wire" || lat_only;
	auto m = [&med](const std::string &fid, const std::string &drv) -> Opt {
		const auto it = med.find({fid, drv});
		return it == med.end() ? Opt() : Opt(it->second);
	};
	auto check = [&res](const std::string &text, Opt a, Opt b,
			    const std::function<bool(double, double)> &cmp) {
		if (!a || !b)
			res.emplace_back(text + " (no data)", std::nullopt);
		else
			res.emplace_back(text + ": " + fmt(a) + " vs " + fmt(b), cmp(*a, *b));
	};
	for (const std::string op : {"write", "send"}) {
		check(op + " lat 2 B typical: sroce <= 0.5x rdma_rxe", m(op + "_lat_typ", "sroce"),
		      m(op + "_lat_typ", "rdma_rxe"), [](double a, double b) { return a <= 0.5 * b; });
		if (wire)
			check(op + " lat 2 B typical: sroce <= 1.0x TCP RTT/2",
			      m(op + "_lat_typ", "sroce"), m("tcp_lat_typ", "tcp"),
			      [](double a, double b) { return a <= b; });
		check(op + " lat 2 B: sroce p99 <= rdma_rxe typical", m(op + "_lat_p99", "sroce"),
		      m(op + "_lat_typ", "rdma_rxe"), [](double a, double b) { return a <= b; });
	}
	if (lat_only)
		return res;
	for (const auto &op : kOps3)
		check(op + " msg rate 64 B: sroce >= 2x rdma_rxe", m(op + "_rate_64", "sroce"),
		      m(op + "_rate_64", "rdma_rxe"), [](double a, double b) { return a >= 2 * b; });
	const double bw_factor = wire ? 2 : 1.5;
	for (const auto &op : kOps3)
		check(op + " bw 64 KiB: sroce >= " + fmtd("%g", bw_factor) + "x rdma_rxe",
		      m(op + "_bw_65536", "sroce"), m(op + "_bw_65536", "rdma_rxe"),
		      [bw_factor](double a, double b) { return a >= bw_factor * b; });
	check("guest CPU per GiB: sroce <= 0.5x rdma_rxe", m("cpu_per_gib", "sroce"),
	      m("cpu_per_gib", "rdma_rxe"), [](double a, double b) { return a <= 0.5 * b; });
	const Opt sc = m("write_q4_scaling", "sroce");
	const Opt rx = m("write_q4_scaling", "rdma_rxe");
	if (!sc)
		res.emplace_back("write 64 KiB -q 4 / -q 1: sroce >= 1.7 (no data)", std::nullopt);
	else
		res.emplace_back("write 64 KiB -q 4 / -q 1: sroce >= 1.7: " + fmt(sc) +
					 " (rdma_rxe " + fmt(rx) + ")",
				 *sc >= 1.7);
	return res;
}

struct KernelReport {
	std::vector<std::string> out;
	std::vector<Row> results, ratios;
	std::vector<ChartRow> chart;
	std::vector<Verdict> verdicts;
	std::map<std::string, Medians> meds; // per set-up
};

// The table lines, results.csv and ratios.csv rows, chart rows, medians
// and verdicts of one kernel's directory.
KernelReport kernel_report(const std::string &kernel, const fs::path &kdir)
{
	KernelReport k;
	for (const auto &[setup, desc] : kSetups) {
		const fs::path sdir = kdir / setup;
		if (!is_dir(sdir))
			continue;
		const SetupData d = load_setup(sdir);
		const auto figs = figure_list(d.sizes);
		Medians med;
		std::map<std::string, std::map<std::string, std::string>> cells;
		for (const auto &fig : figs) {
			for (const auto &drv : kDrivers) {
				const Key key{fig.fid, drv};
				const auto vit = d.vals.find(key);
				const auto st = vit == d.vals.end() ? std::nullopt : stats(vit->second);
				const auto fit = d.failed.find(key);
				const int nf = fit == d.failed.end() ? 0 : fit->second;
				if (!st && nf == 0)
					continue;
				std::string c;
				if (st) {
					med[key] = st->med;
					k.results.push_back({kernel, setup, fig.fid, drv, fig.unit,
							     std::to_string(st->n), std::to_string(nf),
							     fmtd("%.6g", st->med), fmtd("%.6g", st->min),
							     fmtd("%.6g", st->max)});
					c = fmt(st->med) + " [" + fmt(st->min) + "-" + fmt(st->max) + "]";
				} else {
					k.results.push_back({kernel, setup, fig.fid, drv, fig.unit, "0",
							     std::to_string(nf), "", "", ""});
					c = "-";
				}
				cells[fig.fid][drv] = c + (nf ? " " + std::to_string(nf) + "F" : "");
			}
		}
		k.out.push_back(kernel + " " + setup + ": " + desc);
		const std::string hdr = "  " + rpad("figure", 34) + " " + rpad("unit", 9) + " " +
					lpad("sroce", 24) + " " + lpad("rdma_rxe", 24) + " " +
					lpad("TCP", 20) + " " + lpad("sroce/rxe", 9) + " " +
					lpad("sroce/TCP", 9);
		k.out.push_back(hdr);
		k.out.push_back("  " + std::string(hdr.size() - 2, '-'));
		auto medof = [&med](const std::string &fid, const std::string &drv) -> Opt {
			const auto it = med.find({fid, drv});
			return it == med.end() ? Opt() : Opt(it->second);
		};
		for (const auto &fig : figs) {
			const auto cit = cells.find(fig.fid);
			if (cit == cells.end() || cit->second.empty())
				continue;
			const auto &c = cit->second;
			auto cell = [&c](const std::string &drv) {
				const auto it = c.find(drv);
				return it == c.end() ? std::string() : it->second;
			};
			const Opt s_med = medof(fig.fid, "sroce");
			const Opt x_med = medof(fig.fid, "rdma_rxe");
			const std::string tpeer = tcp_peer(fig.fid);
			const Opt t_med = medof(tpeer, "tcp"); // no figure "" exists
			const Opt r_rxe = ratio(s_med, x_med);
			const Opt r_tcp = ratio(s_med, t_med);
			std::string tcell = cell("tcp");
			if (tcell.empty() && t_med && tpeer != fig.fid)
				tcell = "(" + fmt(t_med) + ")";
			k.out.push_back("  " + rpad(fig.label, 34) + " " + rpad(fig.unit, 9) + " " +
					lpad(cell("sroce"), 24) + " " + lpad(cell("rdma_rxe"), 24) +
					" " + lpad(tcell, 20) + " " + lpad(fmt(r_rxe), 9) + " " +
					lpad(fmt(r_tcp), 9));
			auto g = [](Opt x) { return x ? fmtd("%.4g", *x) : std::string(); };
			k.ratios.push_back({kernel, setup, fig.fid, fig.unit,
					    fig.higher ? "higher" : "lower", g(s_med), g(x_med),
					    g(t_med), g(r_rxe), g(r_tcp)});
			// advantage: > 1 means sroce is better, whatever the direction
			auto adv = [&fig](Opt r) -> Opt {
				if (!r || *r == 0)
					return std::nullopt;
				return fig.higher ? *r : 1 / *r;
			};
			if (r_rxe || r_tcp)
				k.chart.push_back({kernel + " " + setup, fig.label, adv(r_rxe),
						   adv(r_tcp)});
		}
		k.out.push_back("  (median [min-max] over the runs; nF: n runs failed or gave no "
				"number; (x): the TCP figure compared with)");
		k.out.push_back("");
		for (auto &[text, ok] : targets(setup, med))
			k.verdicts.push_back({kernel, setup, text, ok});
		k.meds[setup] = std::move(med);
	}
	return k;
}

// The history table of Documentation/benchmarks.md: sroce/rdma_rxe of the
// medians of these figures (lower is better for latency and CPU).
struct HistoryCol {
	const char *setup, *fid, *title;
};
constexpr HistoryCol kHistory[] = {
	{"loopback", "write_lat_typ", "lb 2 B write lat"},
	{"loopback", "write_rate_64", "lb 64 B write rate"},
	{"wire", "write_lat_typ", "wire 2 B write lat"},
	{"wire", "write_bw_65536", "wire 64 KiB write bw"},
	{"wire", "cpu_per_gib", "wire CPU/GiB"},
	{"wire1", "write_lat_typ", "wire1 2 B write lat"},
};

std::string join(const std::vector<std::string> &v, const std::string &sep)
{
	std::string s;
	for (std::size_t i = 0; i < v.size(); i++)
		s += (i ? sep : "") + v[i];
	return s;
}

std::vector<std::string> history_header()
{
	std::vector<std::string> cols = {"date", "commit", "kernel", "runs"};
	for (const auto &h : kHistory)
		cols.push_back(h.title);
	std::string rule = "|";
	for (std::size_t i = 0; i < cols.size(); i++)
		rule += " --- |";
	return {"| " + join(cols, " | ") + " |", rule};
}

std::string history_row(const std::string &date, const std::string &commit,
			const std::string &kernel, const std::string &runs,
			const std::map<std::string, Medians> &meds)
{
	std::vector<std::string> cells = {date, "`" + commit + "`", kernel, runs};
	for (const auto &h : kHistory) {
		Opt s, x;
		const auto it = meds.find(h.setup);
		if (it != meds.end()) {
			const auto si = it->second.find({h.fid, "sroce"});
			const auto xi = it->second.find({h.fid, "rdma_rxe"});
			if (si != it->second.end())
				s = si->second;
			if (xi != it->second.end())
				x = xi->second;
		}
		cells.push_back(fmt(ratio(s, x)));
	}
	return "| " + join(cells, " | ") + " |";
}

// One CSV line as Python's csv module writes it (minimal quoting).
std::string csv_line(const Row &row)
{
	std::string s;
	for (std::size_t i = 0; i < row.size(); i++) {
		const std::string &f = row[i];
		if (i)
			s += ',';
		if (f.find_first_of(",\"\r\n") != std::string::npos ||
		    (row.size() == 1 && f.empty())) {
			s += '"';
			for (char ch : f)
				s += ch == '"' ? std::string("\"\"") : std::string(1, ch);
			s += '"';
		} else {
			s += f;
		}
	}
	return s + "\n";
}

bool write_file(const fs::path &p, const std::string &text)
{
	std::ofstream f(p, std::ios::binary | std::ios::trunc);
	f << text;
	f.close();
	if (!f) {
		std::cerr << "bench-report: cannot write " << p.string() << "\n";
		return false;
	}
	return true;
}

std::optional<fs::path> which(const std::string &prog)
{
	const char *path = std::getenv("PATH");
	for (const auto &dir : split_any(path ? path : "", ":")) {
		const fs::path p = fs::path(dir.empty() ? "." : dir) / prog;
		std::error_code ec;
		if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0)
			return p;
	}
	return std::nullopt;
}

std::string shell_quote(const std::string &s)
{
	std::string q = "'";
	for (char c : s)
		q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

// A pipe to a command's stdin, closed (and waited for) at scope exit.
class PipeTo {
public:
	explicit PipeTo(const std::string &cmd) : f_(::popen(cmd.c_str(), "w")) {}
	PipeTo(const PipeTo &) = delete;
	PipeTo &operator=(const PipeTo &) = delete;
	~PipeTo() { close(); }
	bool write(const std::string &s)
	{
		return f_ && std::fwrite(s.data(), 1, s.size(), f_) == s.size();
	}
	int close()
	{
		if (!f_)
			return -1;
		const int st = ::pclose(f_);
		f_ = nullptr;
		return st;
	}
	explicit operator bool() const { return f_ != nullptr; }

private:
	FILE *f_;
};

void make_chart(const fs::path &top, const std::vector<ChartRow> &rows, const std::string &title)
{
	const auto gp = which("gnuplot");
	if (!gp || rows.empty()) {
		std::cerr << "bench-report: no chart (gnuplot missing or no ratios)\n";
		return;
	}
	const fs::path dat = top / "chart.dat";
	std::vector<std::string> setups, labels; // in the report's order
	std::map<std::pair<std::string, std::string>, const ChartRow *> by;
	for (const auto &r : rows) {
		if (std::find(setups.begin(), setups.end(), r.setup) == setups.end())
			setups.push_back(r.setup);
		if (std::find(labels.begin(), labels.end(), r.label) == labels.end())
			labels.push_back(r.label);
		by[{r.setup, r.label}] = &r;
	}
	struct Col {
		std::string setup;
		bool tcp;
		std::string title;
	};
	auto value = [&by](const std::string &s, bool tcp, const std::string &lab) -> Opt {
		const auto it = by.find({s, lab});
		if (it == by.end())
			return std::nullopt;
		const Opt v = tcp ? it->second->adv_tcp : it->second->adv_rxe;
		return v && *v != 0 ? v : Opt();
	};
	std::vector<Col> all, cols;
	for (const auto &s : setups)
		all.push_back({s, false, "sroce/rdma_rxe (" + s + ")"});
	for (const auto &s : setups)
		all.push_back({s, true, "sroce/TCP (" + s + ")"});
	for (const auto &c : all)
		if (std::any_of(labels.begin(), labels.end(),
				[&](const std::string &lab) { return bool(value(c.setup, c.tcp, lab)); }))
			cols.push_back(c);
	std::string text = "label";
	for (const auto &c : cols)
		text += " \"" + c.title + "\"";
	text += "\n";
	for (const auto &lab : labels) {
		text += "\"" + lab + "\"";
		for (const auto &c : cols) {
			const Opt v = value(c.setup, c.tcp, lab);
			text += " " + (v ? fmtd("%.4g", *v) : std::string("NaN"));
		}
		text += "\n";
	}
	if (!write_file(dat, text))
		return;
	const fs::path png = top / "chart.png";
	// bars of log2(advantage) from 0, so that 1x is the base line and "2x
	// better" and "2x worse" are bars of the same length
	const std::string script =
		"\nset terminal pngcairo size 1400," + std::to_string(560 + 14 * labels.size()) +
		" font \",10\"\n"
		"set output \"" + png.string() + "\"\n"
		"set title \"" + (title.empty() ? std::string("make bench") : title) +
		"\\nadvantage of sroce (> 1x: sroce better; latency and CPU per GiB inverted)\" "
		"noenhanced\n"
		"set style data histograms\n"
		"set style histogram clustered gap 1\n"
		"set style fill solid 0.8 border -1\n"
		"set yrange [-4:4]\n"
		"set ytics (\"1/16x\" -4, \"1/8x\" -3, \"1/4x\" -2, \"1/2x\" -1, \"1x\" 0, \"2x\" 1, "
		"\"4x\" 2, \"8x\" 3, \"16x\" 4)\n"
		"set grid ytics\n"
		"set xtics rotate by 45 right noenhanced\n"
		"set bmargin 14\n"
		"set key top left noenhanced\n"
		"set datafile missing \"NaN\"\n"
		"set xzeroaxis lt -1 lw 2\n"
		"lg(x) = x > 0 ? log(x) / log(2) : NaN\n"
		"plot for [i=2:" + std::to_string(cols.size() + 1) + "] \"" + dat.string() +
		"\" using (lg(column(i))):xtic(1) title columnheader(i)\n";
	// gnuplot's messages go to a temporary file, shown only if it fails
	std::string errname = (fs::temp_directory_path() / "bench-report.XXXXXX").string();
	std::vector<char> tmpl(errname.begin(), errname.end());
	tmpl.push_back('\0');
	const int fd = ::mkstemp(tmpl.data());
	if (fd < 0) {
		std::cerr << "bench-report: gnuplot failed: no temporary file\n";
		return;
	}
	::close(fd);
	errname = tmpl.data();
	int st;
	{
		PipeTo p("exec " + shell_quote(gp->string()) + " >/dev/null 2>" +
			 shell_quote(errname));
		const bool ok = p.write(script);
		st = p.close();
		if (!ok)
			st = -1;
	}
	if (st != 0)
		std::cerr << "bench-report: gnuplot failed: " << strip(read_text(errname)) << "\n";
	std::error_code ec;
	fs::remove(errname, ec);
}

int run(int argc, char **argv)
{
	bool chart = true;
	std::string title;
	std::vector<std::string> args;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "-h" || a == "--help") {
			std::cout << kUsage;
			return 0;
		}
		if (a == "--no-chart") {
			chart = false;
		} else if (a == "--title") {
			if (++i >= argc) {
				std::cerr << "bench-report: --title needs a value\n";
				return 2;
			}
			title = argv[i];
		} else if (!a.empty() && a[0] == '-') {
			std::cerr << "bench-report: unknown option " << a << "\n";
			return 2;
		} else {
			args.push_back(a);
		}
	}
	if (args.size() != 1 || !is_dir(args[0])) {
		std::cerr << "usage: scripts/bench-report [--no-chart] [--title TEXT] DIR\n";
		return 2;
	}
	const fs::path top = args[0];
	const auto kernels = find_kernels(top);
	if (kernels.empty()) {
		std::cerr << "bench-report: no wire/, wire1/ or loopback/ results in " << args[0] << "\n";
		return 1;
	}
	const auto info = read_setup_txt(top);
	auto get = [&info](const std::string &k, const std::string &dflt) {
		const auto it = info.find(k);
		return it == info.end() ? dflt : it->second;
	};
	const std::string date = get("date", "?").substr(0, 10);
	const std::string commit = get("commit", "?");
	const std::string runs_info = get("runs", "");
	std::string runs = "?";
	std::smatch m;
	if (std::regex_search(runs_info, m, std::regex(R"(^(\d+) per figure)")))
		runs = m[1].str();
	if (std::regex_search(runs_info, std::regex(R"(bandwidth sizes: 64 65536$)")) &&
	    runs == "1")
		runs = "1 (quick)";
	std::vector<std::string> out, hist;
	std::vector<Row> results, ratios;
	std::vector<ChartRow> chart_rows;
	std::vector<Verdict> verdicts;
	for (const auto &[kernel, kdir] : kernels) {
		const auto kver = guest_kver(kdir);
		KernelReport k = kernel_report(kernel, kdir);
		if (kver && *kver != kernel)
			out.push_back("guest kernel " + kernel + ": " + *kver);
		out.insert(out.end(), k.out.begin(), k.out.end());
		results.insert(results.end(), k.results.begin(), k.results.end());
		ratios.insert(ratios.end(), k.ratios.begin(), k.ratios.end());
		chart_rows.insert(chart_rows.end(), k.chart.begin(), k.chart.end());
		verdicts.insert(verdicts.end(), k.verdicts.begin(), k.verdicts.end());
		hist.push_back(history_row(date, commit, kernel, runs, k.meds));
	}
	out.push_back("Targets of issue 14 (sroce against rdma_rxe and TCP, medians of the same "
		      "run):");
	for (const auto &v : verdicts) {
		const std::string word = !v.ok ? "n/a " : (*v.ok ? "PASS" : "MISS");
		out.push_back("  " + word + " " + rpad(v.kernel, 5) + " " + rpad(v.setup, 8) + " " +
			      v.text);
	}
	for (const auto &kd : kernels) {
		int pass = 0, miss = 0, na = 0;
		for (const auto &v : verdicts) {
			if (v.kernel != kd.first)
				continue;
			!v.ok ? na++ : (*v.ok ? pass++ : miss++);
		}
		out.push_back("targets " + kd.first + ": " + std::to_string(pass) + " PASS, " +
			      std::to_string(miss) + " MISS, " + std::to_string(na) + " n/a");
	}
	out.push_back("");
	out.push_back("History rows for Documentation/benchmarks.md (sroce/rdma_rxe of the "
		      "medians; lat and CPU: lower is better):");
	for (const auto &line : history_header())
		out.push_back("  " + line);
	for (const auto &line : hist)
		out.push_back("  " + line);
	const std::string report = join(out, "\n") + "\n";
	std::cout << report << std::flush;
	bool ok = write_file(top / "report.txt", (title.empty() ? "" : title + "\n\n") + report);
	ok = write_file(top / "history.txt", join(hist, "\n") + "\n") && ok;
	std::string csv = csv_line({"kernel", "setup", "figure", "driver", "unit", "runs",
				    "failed_runs", "median", "min", "max"});
	for (const auto &r : results)
		csv += csv_line(r);
	ok = write_file(top / "results.csv", csv) && ok;
	csv = csv_line({"kernel", "setup", "figure", "unit", "better", "sroce", "rdma_rxe", "tcp",
			"sroce_over_rxe", "sroce_over_tcp"});
	for (const auto &r : ratios)
		csv += csv_line(r);
	ok = write_file(top / "ratios.csv", csv) && ok;
	if (!ok)
		return 1;
	if (chart)
		make_chart(top, chart_rows, title);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	return run(argc, argv);
}
