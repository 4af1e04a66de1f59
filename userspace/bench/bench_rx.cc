// Receive-path validation (kernel/core/pkt.c, icrc.c).
//
//   pkt_parse/<packet>        sroce_pkt_parse() of the UDP payload: every
//                             check before a QP is looked up
//   rx_validate/<case>        what the core costs a received packet: parse,
//                             then (if it survived) sroce_icrc_verify() with
//                             the slice-by-8 primitive; valid packets of 64 B,
//                             1 KiB and 4 KiB (IPv4, IP header to ICRC), and
//                             invalid ones
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_packets.h"
#include "core_bench.h"
#include "crc32_variants.h"

extern "C" {
#include "kernel/core/icrc.h"
#include "kernel/core/opcode.h"
#include "kernel/core/pkt.h"
}

namespace sroce_bench {

namespace {

struct RxCase {
	std::string name;
	RocePacket pkt;
	enum sroce_drop parse_result;
	enum sroce_icrc_status icrc_result;	// of a packet parse keeps
};

PacketSpec spec(uint8_t opcode, size_t payload)
{
	PacketSpec s;

	s.opcode = opcode;
	s.payload = payload;
	s.pad = static_cast<uint8_t>((4 - payload % 4) % 4);
	return s;
}

// Rewrites the opcode and reseals, so only the opcode is wrong.
RocePacket with_opcode(RocePacket p, uint8_t opcode)
{
	p.bth()[0] = opcode;
	p.seal();
	return p;
}

std::vector<RxCase> parse_cases()
{
	std::vector<RxCase> v;
	auto add = [&v](const char *name, PacketSpec s, enum sroce_drop want) {
		v.push_back({name, RocePacket(4, s), want, SROCE_ICRC_OK});
	};
	PacketSpec wf = spec(SROCE_OP_RC_WRITE_FIRST, 1024);
	PacketSpec bad_pkey = spec(SROCE_OP_RC_SEND_ONLY, 64);
	PacketSpec bad_len = spec(SROCE_OP_RC_SEND_FIRST, 1000);

	wf.dma_len = 65536;
	bad_pkey.pkey = 0x1234;

	add("send_first", spec(SROCE_OP_RC_SEND_FIRST, 1024), SROCE_DROP_NONE);
	add("send_middle", spec(SROCE_OP_RC_SEND_MIDDLE, 1024), SROCE_DROP_NONE);
	add("send_last_pad", spec(SROCE_OP_RC_SEND_LAST, 99), SROCE_DROP_NONE);
	add("write_first_reth", wf, SROCE_DROP_NONE);
	add("ack_aeth", spec(SROCE_OP_RC_ACK, 0), SROCE_DROP_NONE);
	add("read_resp_first_aeth",
	    spec(SROCE_OP_RC_READ_RESPONSE_FIRST, 1024), SROCE_DROP_NONE);
	add("read_resp_middle",
	    spec(SROCE_OP_RC_READ_RESPONSE_MIDDLE, 1024), SROCE_DROP_NONE);
	add("invalid/bad_pkey", bad_pkey, SROCE_DROP_BAD_PKEY);
	add("invalid/bad_payload_len", bad_len, SROCE_DROP_BAD_PAYLOAD_LEN);
	v.push_back({"invalid/unknown_opcode",
		     with_opcode(RocePacket(4, spec(SROCE_OP_RC_SEND_ONLY, 64)), 0x1f),
		     SROCE_DROP_UNKNOWN_OPCODE, SROCE_ICRC_OK});
	// a SEND ONLY of 4 bytes relabelled RDMA WRITE FIRST, which needs a RETH
	v.push_back({"invalid/truncated",
		     with_opcode(RocePacket(4, spec(SROCE_OP_RC_SEND_ONLY, 4)),
				 SROCE_OP_RC_WRITE_FIRST),
		     SROCE_DROP_TRUNCATED, SROCE_ICRC_OK});
	return v;
}

std::vector<RxCase> validate_cases()
{
	std::vector<RxCase> v;

	for (int n : {64, 1024, 4096})
		v.push_back({"valid/" + std::to_string(n),
			     send_only_of_size(4, n), SROCE_DROP_NONE,
			     SROCE_ICRC_OK});
	RocePacket bad = send_only_of_size(4, 1024);
	bad.corrupt();
	v.push_back({"invalid/bad_icrc/1024", bad, SROCE_DROP_NONE,
		     SROCE_ICRC_MISMATCH});
	v.push_back({"invalid/unknown_opcode/1024",
		     with_opcode(send_only_of_size(4, 1024), 0x1f),
		     SROCE_DROP_UNKNOWN_OPCODE, SROCE_ICRC_OK});
	v.push_back({"invalid/truncated",
		     with_opcode(RocePacket(4, spec(SROCE_OP_RC_SEND_ONLY, 4)),
				 SROCE_OP_RC_WRITE_FIRST),
		     SROCE_DROP_TRUNCATED, SROCE_ICRC_OK});
	return v;
}

// The core's part of receiving a packet: parse first (cheap, and drops
// most garbage), verify the ICRC of what survived.  True if accepted.
bool rx_validate(const RocePacket &p, struct sroce_pkt &pkt)
{
	const enum sroce_drop d =
		sroce_pkt_parse(p.bth(), p.udp_payload_len(), &pkt);

	if (d != SROCE_DROP_NONE && !sroce_pkt_drop_is_request_error(d))
		return false;
	return sroce_icrc_verify(crc32_slice8, p.ip(), p.udp(), p.bth(),
				 p.udp_payload_len()) == SROCE_ICRC_OK;
}

void bm_parse(benchmark::State &state, const RocePacket &p)
{
	struct sroce_pkt pkt = {};

	for (auto _ : state) {
		auto d = sroce_pkt_parse(p.bth(), p.udp_payload_len(), &pkt);

		benchmark::DoNotOptimize(d);
		benchmark::DoNotOptimize(pkt);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_validate(benchmark::State &state, const RocePacket &p)
{
	struct sroce_pkt pkt = {};

	for (auto _ : state) {
		bool ok = rx_validate(p, pkt);

		benchmark::DoNotOptimize(ok);
		benchmark::DoNotOptimize(pkt);
	}
	state.SetItemsProcessed(state.iterations());
	state.SetBytesProcessed(state.iterations() *
				static_cast<int64_t>(p.size()));
}

} // namespace

void register_rx_benchmarks()
{
	// RegisterBenchmark() keeps a copy of each packet.
	const std::vector<RxCase> parse = parse_cases();
	const std::vector<RxCase> validate = validate_cases();

	for (const auto &c : parse)
		benchmark::RegisterBenchmark(("pkt_parse/" + c.name).c_str(),
					     bm_parse, c.pkt);
	for (const auto &c : validate)
		benchmark::RegisterBenchmark(("rx_validate/" + c.name).c_str(),
					     bm_validate, c.pkt);
}

void check_rx(Checker &c)
{
	for (const auto &v : {parse_cases(), validate_cases()}) {
		for (const auto &rc : v) {
			struct sroce_pkt pkt = {};
			const auto d = sroce_pkt_parse(rc.pkt.bth(),
						       rc.pkt.udp_payload_len(),
						       &pkt);
			const bool keep = d == SROCE_DROP_NONE ||
					  sroce_pkt_drop_is_request_error(d);

			c.expect(d == rc.parse_result,
				 rc.name + ": parse gives " +
				 sroce_pkt_drop_name(d));
			c.expect(sroce_icrc_verify(crc32_slice8, rc.pkt.ip(),
						   rc.pkt.udp(), rc.pkt.bth(),
						   rc.pkt.udp_payload_len()) ==
					 rc.icrc_result,
				 rc.name + ": ICRC");
			c.expect(rx_validate(rc.pkt, pkt) ==
					 (keep && rc.icrc_result == SROCE_ICRC_OK),
				 rc.name + ": rx_validate");
		}
	}
}

} // namespace sroce_bench
