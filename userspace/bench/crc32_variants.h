// CRC-32 primitives compared by core_bench, all with the semantics and the
// prototype of the kernel's crc32_le() (sroce_crc32_fn): reflected Ethernet
// polynomial 0xEDB88320, state in and state out, no pre- or post-inversion.
// Any of them can be handed to sroce_icrc_*() in place of crc32_le.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace sroce_bench {

using Crc32Fn = uint32_t (*)(uint32_t crc, const uint8_t *p, size_t len);

// One bit per step, 8 steps per byte: the definition, and the slowest.
uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len);

// Sarwate's byte-at-a-time algorithm, one 256-entry table.  This is what
// lib/crc32.c keeps as the generic crc32_le() since Linux 6.15, and what it
// builds with CONFIG_CRC32_SARWATE on older kernels.
uint32_t crc32_sarwate(uint32_t crc, const uint8_t *p, size_t len);

// Slice-by-8: 8 bytes per step through 8 tables of 256 entries.  The
// algorithm of crc32_le() in Debian's 6.1 and 6.12 kernels
// (CONFIG_CRC32_SLICEBY8=y, no x86 override before 6.14); written here from
// the math, not copied.
uint32_t crc32_slice8(uint32_t crc, const uint8_t *p, size_t len);

// zlib's crc32(), which inverts on the way in and out; this wrapper undoes
// both so that it is crc32_le-compatible.  Null if zlib was not found.
extern const Crc32Fn crc32_zlib;

struct Crc32Variant {
	const char *name;
	Crc32Fn fn;
};

// The variants available in this build, bitwise first.
std::span<const Crc32Variant> crc32_variants();

} // namespace sroce_bench
