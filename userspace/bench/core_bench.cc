// core_bench: main().  Runs the self-checks, then Google Benchmark with the
// usual --benchmark_* options (--benchmark_filter, --benchmark_min_time,
// --benchmark_out=FILE --benchmark_out_format=json, ...).
#include <benchmark/benchmark.h>

#include <cstdio>

#include "core_bench.h"
#include "crc32_variants.h"

#ifdef SROCE_BENCH_HAVE_ZLIB
#include <zlib.h>
#endif

int main(int argc, char **argv)
{
	using namespace sroce_bench;

	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;

	Checker c;
	check_crc(c);
	check_hdr(c);
	check_rx(c);
	check_psn(c);
	if (!c.failures().empty()) {
		for (const auto &f : c.failures())
			std::fprintf(stderr, "core_bench: self-check failed: %s\n",
				     f.c_str());
		return 1;
	}

	std::string variants;
	for (const auto &v : crc32_variants())
		variants += std::string(variants.empty() ? "" : " ") + v.name;
	benchmark::AddCustomContext("sroce_crc32_variants", variants);
#ifdef SROCE_BENCH_HAVE_ZLIB
	benchmark::AddCustomContext("sroce_zlib_version", zlibVersion());
#endif
	benchmark::AddCustomContext("sroce_icrc_default_primitive", "slice8");

	register_crc_benchmarks();
	register_hdr_benchmarks();
	register_rx_benchmarks();
	register_psn_benchmarks();
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
