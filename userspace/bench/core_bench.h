// core_bench: micro-benchmarks of the protocol core (kernel/core/), see
// Documentation/benchmarks.md.  Each bench_*.cc registers its benchmarks and
// checks, before anything is timed, that the code it times gives the right
// answers on the inputs it times.
#pragma once

#include <string>
#include <vector>

namespace sroce_bench {

// The packet sizes of the ICRC benchmarks: IP header through ICRC.
inline constexpr int kPacketSizes[] = {64, 256, 1024, 4096};

// Collects self-check failures; main() refuses to time anything if any.
class Checker {
public:
	void expect(bool ok, const std::string &what)
	{
		if (!ok)
			failures_.push_back(what);
	}
	const std::vector<std::string> &failures() const { return failures_; }

private:
	std::vector<std::string> failures_;
};

void register_crc_benchmarks();
void register_hdr_benchmarks();
void register_rx_benchmarks();
void register_psn_benchmarks();

void check_crc(Checker &c);
void check_hdr(Checker &c);
void check_rx(Checker &c);
void check_psn(Checker &c);

} // namespace sroce_bench
