// Packets for core_bench, built with the unit tests' packet builder
// (userspace/tests/core_test_util.h) and sealed with the tests' reference
// ICRC, so the benchmarks feed the core the same bytes the tests do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core_test_util.h"

namespace sroce_bench {

using sroce_test::Bytes;
using sroce_test::PacketSpec;

// A RoCE v2 packet: IP header (IPv4 without options or IPv6), UDP header,
// BTH ... ICRC, contiguous.
class RocePacket {
public:
	RocePacket(int ip_version, const PacketSpec &spec);

	const uint8_t *ip() const { return bytes_.data(); }
	const uint8_t *udp() const { return bytes_.data() + ip_len_; }
	const uint8_t *bth() const { return bytes_.data() + ip_len_ + 8; }
	uint8_t *bth() { return bytes_.data() + ip_len_ + 8; }
	// The UDP payload: BTH through ICRC.
	uint32_t udp_payload_len() const
	{
		return static_cast<uint32_t>(bytes_.size() - ip_len_ - 8);
	}
	// IP header through ICRC.
	size_t size() const { return bytes_.size(); }
	const Bytes &bytes() const { return bytes_; }

	// Stores the reference ICRC (bitwise, materialised mask) in place.
	void seal();
	// Flips one payload bit, leaving the ICRC stale.
	void corrupt();

private:
	Bytes bytes_;
	size_t ip_len_;
};

// An RC SEND ONLY packet whose IP packet (IP header through ICRC) is
// exactly total_len bytes; total_len must leave a non-negative payload and
// be a multiple of 4.
RocePacket send_only_of_size(int ip_version, size_t total_len);

} // namespace sroce_bench
