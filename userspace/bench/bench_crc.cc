// CRC-32 primitives and the RoCE v2 ICRC (kernel/core/icrc.c).
//
//   crc32/<variant>/<n>             the primitive over n contiguous bytes
//   icrc_begin/<ip>/<variant>       the fixed per-packet part: mask and fold
//                                   the IP, UDP and BTH headers
//   icrc_compute/<ip>/<variant>/<n> sroce_icrc_compute() of a SEND ONLY
//                                   packet of n bytes (IP header to ICRC)
//   icrc_verify/<ip>/slice8/<n>     sroce_icrc_verify() of the same
//   payload_copy/<way>/<n>          a payload of n bytes into a packet with
//                                   its CRC: "one_pass" (sroce_crc32_copy(),
//                                   what the transmit path does),
//                                   "memcpy_then_crc" (libc's memcpy, then
//                                   slice-by-8) and, on x86-64,
//                                   "movsb_then_crc" (rep movsb, the
//                                   kernel's memcpy() on CPUs with ERMS)
//   crc32_shift/<n>                 sroce_crc32_shift() over n bytes, which
//                                   joins a payload's CRC to its headers'
//
// Bytes/s are of the n bytes named; for the ICRC that is the whole IP
// packet, of which n - 4 go through the primitive (the LRH stand-in is a
// precomputed seed, the ICRC field itself is not covered).
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "bench_packets.h"
#include "core_bench.h"
#include "crc32_variants.h"

extern "C" {
#include "kernel/core/crc32.h"
#include "kernel/core/icrc.h"
}

#include <cstring>

namespace sroce_bench {

namespace {

constexpr int kCrcSizes[] = {40, 60, 64, 256, 1024, 4096};

const Bytes &random_bytes()
{
	static const Bytes b = [] {
		Bytes v(4096 + 8);
		std::mt19937 rng(4791);

		for (auto &x : v)
			x = static_cast<uint8_t>(rng());
		return v;
	}();
	return b;
}

void bm_crc32(benchmark::State &state, Crc32Fn fn)
{
	const Bytes &buf = random_bytes();
	const auto n = static_cast<size_t>(state.range(0));

	for (auto _ : state) {
		uint32_t crc = fn(~0u, buf.data(), n);

		benchmark::DoNotOptimize(crc);
	}
	state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

void bm_icrc_begin(benchmark::State &state, int ipv, Crc32Fn fn)
{
	const RocePacket p = send_only_of_size(ipv, 1024);

	for (auto _ : state) {
		uint32_t st = 0;
		bool ok = sroce_icrc_begin(fn, p.ip(), p.udp(), p.bth(), &st);

		benchmark::DoNotOptimize(ok);
		benchmark::DoNotOptimize(st);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_icrc_compute(benchmark::State &state, int ipv, Crc32Fn fn)
{
	const RocePacket p = send_only_of_size(ipv, state.range(0));

	for (auto _ : state) {
		uint32_t icrc = 0;
		auto st = sroce_icrc_compute(fn, p.ip(), p.udp(), p.bth(),
					     p.udp_payload_len(), &icrc);

		benchmark::DoNotOptimize(st);
		benchmark::DoNotOptimize(icrc);
	}
	state.SetBytesProcessed(state.iterations() *
				static_cast<int64_t>(p.size()));
	state.SetItemsProcessed(state.iterations());
}

void bm_icrc_verify(benchmark::State &state, int ipv, Crc32Fn fn)
{
	const RocePacket p = send_only_of_size(ipv, state.range(0));

	if (sroce_icrc_verify(fn, p.ip(), p.udp(), p.bth(),
			      p.udp_payload_len()) != SROCE_ICRC_OK) {
		state.SkipWithError("packet does not verify");
		return;
	}
	for (auto _ : state) {
		auto st = sroce_icrc_verify(fn, p.ip(), p.udp(), p.bth(),
					    p.udp_payload_len());

		benchmark::DoNotOptimize(st);
	}
	state.SetBytesProcessed(state.iterations() *
				static_cast<int64_t>(p.size()));
	state.SetItemsProcessed(state.iterations());
}

enum class CopyWay { one_pass, memcpy_then_crc, movsb_then_crc };

void copy_movsb(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
	std::memcpy(dst, src, n);
#endif
}

uint32_t copy_with_crc(CopyWay way, uint8_t *dst, const uint8_t *src, size_t n)
{
	switch (way) {
	case CopyWay::one_pass:
		return sroce_crc32_copy(0, dst, src, n);
	case CopyWay::memcpy_then_crc:
		std::memcpy(dst, src, n);
		break;
	case CopyWay::movsb_then_crc:
		copy_movsb(dst, src, n);
		break;
	}
	return crc32_slice8(0, dst, n);
}

void bm_payload_copy(benchmark::State &state, CopyWay way)
{
	const Bytes &src = random_bytes();
	const auto n = static_cast<size_t>(state.range(0));
	Bytes dst(n);

	for (auto _ : state) {
		uint32_t crc = copy_with_crc(way, dst.data(), src.data(), n);

		benchmark::DoNotOptimize(crc);
		benchmark::ClobberMemory();
	}
	state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

void bm_crc32_shift(benchmark::State &state)
{
	const auto n = static_cast<uint64_t>(state.range(0));
	uint32_t crc = 0x12345678u;

	for (auto _ : state) {
		crc = sroce_crc32_shift(crc, n);
		benchmark::DoNotOptimize(crc);
	}
	state.SetItemsProcessed(state.iterations());
}

const char *ip_name(int ipv)
{
	return ipv == 4 ? "ipv4" : "ipv6";
}

} // namespace

void register_crc_benchmarks()
{
	for (const auto &v : crc32_variants()) {
		auto *b = benchmark::RegisterBenchmark(
			("crc32/" + std::string(v.name)).c_str(), bm_crc32,
			v.fn);
		for (int n : kCrcSizes)
			b->Arg(n);
	}
	for (int ipv : {4, 6}) {
		for (const auto &v : crc32_variants())
			benchmark::RegisterBenchmark(
				(std::string("icrc_begin/") + ip_name(ipv) +
				 "/" + v.name).c_str(),
				bm_icrc_begin, ipv, v.fn);
	}
	for (int ipv : {4, 6}) {
		for (const auto &v : crc32_variants()) {
			auto *b = benchmark::RegisterBenchmark(
				(std::string("icrc_compute/") + ip_name(ipv) +
				 "/" + v.name).c_str(),
				bm_icrc_compute, ipv, v.fn);
			for (int n : kPacketSizes)
				b->Arg(n);
		}
	}
	const std::pair<const char *, CopyWay> ways[] = {
		{"one_pass", CopyWay::one_pass},
		{"memcpy_then_crc", CopyWay::memcpy_then_crc},
#if defined(__x86_64__)
		{"movsb_then_crc", CopyWay::movsb_then_crc},
#endif
	};
	for (const auto &[name, way] : ways) {
		auto *b = benchmark::RegisterBenchmark(
			(std::string("payload_copy/") + name).c_str(),
			bm_payload_copy, way);
		for (int n : {256, 1024, 4096})
			b->Arg(n);
	}
	auto *shift = benchmark::RegisterBenchmark("crc32_shift", bm_crc32_shift);
	for (int n : {64, 1020, 1024, 4096})
		shift->Arg(n);
	for (int ipv : {4, 6}) {
		auto *b = benchmark::RegisterBenchmark(
			(std::string("icrc_verify/") + ip_name(ipv) +
			 "/slice8").c_str(),
			bm_icrc_verify, ipv, crc32_slice8);
		for (int n : kPacketSizes)
			b->Arg(n);
	}
}

void check_crc(Checker &c)
{
	const char *check = "123456789";
	const auto *cp = reinterpret_cast<const uint8_t *>(check);
	const Bytes &buf = random_bytes();
	const Bytes ones(8, 0xff);	// the LRH stand-in

	for (const auto &v : crc32_variants()) {
		const std::string name = v.name;

		// the standard CRC-32 check value
		c.expect(~v.fn(~0u, cp, 9) == 0xcbf43926u,
			 name + ": CRC-32(\"123456789\")");
		c.expect(v.fn(~0u, ones.data(), ones.size()) == SROCE_ICRC_SEED,
			 name + ": SROCE_ICRC_SEED");
		// every length and misalignment around the 8-byte blocks,
		// also in two pieces (a crc32_le state carries over)
		for (size_t off = 0; off < 8; off++) {
			for (size_t n = 0; n <= 80; n++) {
				const uint8_t *p = buf.data() + off;
				const uint32_t want = crc32_bitwise(0x12345678u, p, n);

				c.expect(v.fn(0x12345678u, p, n) == want,
					 name + ": length " + std::to_string(n) +
					 " at offset " + std::to_string(off));
				c.expect(v.fn(v.fn(0x12345678u, p, n / 3),
					      p + n / 3, n - n / 3) == want,
					 name + ": two pieces of " +
					 std::to_string(n));
			}
		}
		c.expect(v.fn(~0u, buf.data(), 4096) ==
				 crc32_bitwise(~0u, buf.data(), 4096),
			 name + ": 4096 bytes");
	}

	// The one-pass copy: the bytes and the CRC of the other ways.
	for (size_t n : {0, 7, 256, 1021, 4096}) {
		Bytes a(n), b(n);

		const uint32_t one = copy_with_crc(CopyWay::one_pass, a.data(),
						   buf.data(), n);
		c.expect(one == copy_with_crc(CopyWay::movsb_then_crc, b.data(),
					      buf.data(), n) &&
			 a == b && std::equal(a.begin(), a.end(), buf.begin()),
			 "one_pass copy of " + std::to_string(n));
	}
	c.expect(sroce_crc32_shift(0x12345678u, 1024) ==
			 crc32_bitwise(0x12345678u, Bytes(1024, 0).data(), 1024),
		 "crc32_shift of 1024");

	// The ICRC with every primitive, on exactly the packets timed.
	for (int ipv : {4, 6}) {
		for (int n : kPacketSizes) {
			RocePacket p = send_only_of_size(ipv, n);
			const uint32_t want = sroce_test::reference_icrc(p.bytes());
			const std::string what = std::string(ip_name(ipv)) +
						 " packet of " + std::to_string(n);

			c.expect(p.size() == static_cast<size_t>(n), what + ": size");
			for (const auto &v : crc32_variants()) {
				uint32_t icrc = 0;

				c.expect(sroce_icrc_compute(v.fn, p.ip(), p.udp(),
							    p.bth(),
							    p.udp_payload_len(),
							    &icrc) == SROCE_ICRC_OK &&
						 icrc == want,
					 what + ": ICRC with " + v.name);
				c.expect(sroce_icrc_verify(v.fn, p.ip(), p.udp(),
							   p.bth(),
							   p.udp_payload_len()) ==
						 SROCE_ICRC_OK,
					 what + ": verify with " + v.name);
			}
			p.corrupt();
			c.expect(sroce_icrc_verify(crc32_slice8, p.ip(), p.udp(),
						   p.bth(), p.udp_payload_len()) ==
					 SROCE_ICRC_MISMATCH,
				 what + ": corrupted packet fails");
		}
	}
}

} // namespace sroce_bench
