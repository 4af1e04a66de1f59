// Packets for core_bench (see bench_packets.h).
#include "bench_packets.h"

#include <stdexcept>

extern "C" {
#include "kernel/core/hdr.h"
#include "kernel/core/icrc.h"
}

namespace sroce_bench {

RocePacket::RocePacket(int ip_version, const PacketSpec &spec)
{
	const Bytes payload = sroce_test::build_udp_payload(spec);

	if (ip_version == 4)
		bytes_ = sroce_test::wrap_ipv4(payload);
	else if (ip_version == 6)
		bytes_ = sroce_test::wrap_ipv6(payload);
	else
		throw std::invalid_argument("IP version");
	ip_len_ = sroce_test::ip_header_len(bytes_);
	seal();
}

void RocePacket::seal()
{
	sroce_icrc_store(bytes_.data() + bytes_.size() - SROCE_ICRC_LEN,
			 sroce_test::reference_icrc(bytes_));
}

void RocePacket::corrupt()
{
	// the last byte before the ICRC: payload, pad or a header byte
	bytes_[bytes_.size() - SROCE_ICRC_LEN - 1] ^= 0x01;
}

RocePacket send_only_of_size(int ip_version, size_t total_len)
{
	const size_t ip_len = ip_version == 4 ? 20 : 40;
	const size_t overhead = ip_len + 8 + SROCE_BTH_LEN + SROCE_ICRC_LEN;
	PacketSpec s;

	if (total_len < overhead || total_len % 4)
		throw std::invalid_argument("packet size");
	s.opcode = 0x04;	// RC SEND ONLY
	s.payload = total_len - overhead;
	return RocePacket(ip_version, s);
}

} // namespace sroce_bench
