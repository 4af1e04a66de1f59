// Transport header build and parse (kernel/core/hdr.c, opcode.c).
//
//   hdr_build/<packet>   what the send path does per packet before the
//                        payload: look the opcode up, encode the BTH from a
//                        struct, encode the opcode's extension headers at
//                        the table's offsets (kernel/dp/tx.c, req.c, resp.c)
//   hdr_parse/<packet>   the reverse: decode the BTH, look the opcode up,
//                        decode each extension header it has (no checks;
//                        pkt_parse/* times the validating parser)
//   hdr_bth_inplace/get  opcode, QPN and PSN read in place
//   hdr_bth_inplace/set  PSN and AckReq patched in place (retransmission)
#include <benchmark/benchmark.h>

#include <array>
#include <string>

#include "core_bench.h"

extern "C" {
#include "kernel/core/hdr.h"
#include "kernel/core/opcode.h"
#include "kernel/core/psn.h"
}

namespace sroce_bench {

namespace {

struct HdrCase {
	const char *name;
	uint8_t opcode;
};

constexpr HdrCase kCases[] = {
	{"send_first", SROCE_OP_RC_SEND_FIRST},
	{"send_middle", SROCE_OP_RC_SEND_MIDDLE},
	{"send_last", SROCE_OP_RC_SEND_LAST},
	{"send_only_imm", SROCE_OP_RC_SEND_ONLY_IMM},
	{"write_first_reth", SROCE_OP_RC_WRITE_FIRST},
	{"read_request_reth", SROCE_OP_RC_READ_REQUEST},
	{"ack_aeth", SROCE_OP_RC_ACK},
	{"read_resp_first_aeth", SROCE_OP_RC_READ_RESPONSE_FIRST},
	{"read_resp_middle", SROCE_OP_RC_READ_RESPONSE_MIDDLE},
};

using HdrBuf = std::array<uint8_t, 64>;

// Every header a packet of this opcode carries, from host values.
// Returns the header length (where the payload goes), 0 for an unknown
// opcode.
unsigned build_headers(HdrBuf &buf, uint8_t opcode, uint32_t psn)
{
	const struct sroce_opcode_info *op = sroce_opcode_lookup(opcode);
	uint8_t *p = buf.data();

	if (!op)
		return 0;

	struct sroce_bth bth = {};
	bth.opcode = opcode;
	bth.pad = 0;
	bth.tver = SROCE_BTH_TVER;
	bth.pkey = 0xffff;
	bth.dest_qp = 0x000123;
	bth.ack_req = op->flags & SROCE_OPF_LAST;
	bth.psn = psn;
	sroce_hdr_bth_encode(p, &bth);

	if (op->hdrs & SROCE_HDR_RETH) {
		const struct sroce_reth reth = {0x7f0012345000ull, 0x1234, 65536};

		sroce_hdr_reth_encode(p + op->off[SROCE_EXT_RETH], &reth);
	}
	if (op->hdrs & SROCE_HDR_AETH) {
		const struct sroce_aeth aeth = {0x1f, psn};

		sroce_hdr_aeth_encode(p + op->off[SROCE_EXT_AETH], &aeth);
	}
	if (op->hdrs & SROCE_HDR_IMMDT)
		sroce_hdr_immdt_encode(p + op->off[SROCE_EXT_IMMDT], 0xdeadbeef);
	return op->hdr_len;
}

struct Parsed {
	struct sroce_bth bth;
	struct sroce_reth reth;
	struct sroce_aeth aeth;
	uint32_t imm;
	const struct sroce_opcode_info *op;
};

bool parse_headers(const uint8_t *p, Parsed &out)
{
	sroce_hdr_bth_decode(&out.bth, p);
	out.op = sroce_opcode_lookup(out.bth.opcode);
	if (!out.op)
		return false;
	if (out.op->hdrs & SROCE_HDR_RETH)
		sroce_hdr_reth_decode(&out.reth, p + out.op->off[SROCE_EXT_RETH]);
	if (out.op->hdrs & SROCE_HDR_AETH)
		sroce_hdr_aeth_decode(&out.aeth, p + out.op->off[SROCE_EXT_AETH]);
	if (out.op->hdrs & SROCE_HDR_IMMDT)
		out.imm = sroce_hdr_immdt_decode(p + out.op->off[SROCE_EXT_IMMDT]);
	return true;
}

void bm_build(benchmark::State &state, uint8_t opcode)
{
	HdrBuf buf{};
	uint32_t psn = 0xfffff0;

	for (auto _ : state) {
		unsigned len = build_headers(buf, opcode, psn);

		benchmark::DoNotOptimize(len);
		benchmark::DoNotOptimize(buf.data());
		benchmark::ClobberMemory();
		psn = sroce_psn_add(psn, 1);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_parse(benchmark::State &state, uint8_t opcode)
{
	HdrBuf buf{};
	Parsed out{};

	build_headers(buf, opcode, 0x000456);
	for (auto _ : state) {
		benchmark::DoNotOptimize(buf.data());
		bool ok = parse_headers(buf.data(), out);

		benchmark::DoNotOptimize(ok);
		benchmark::DoNotOptimize(out);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_inplace_get(benchmark::State &state)
{
	HdrBuf buf{};

	build_headers(buf, SROCE_OP_RC_SEND_MIDDLE, 0x000456);
	for (auto _ : state) {
		benchmark::DoNotOptimize(buf.data());
		uint8_t op = sroce_bth_opcode(buf.data());
		uint32_t qpn = sroce_bth_qpn(buf.data());
		uint32_t psn = sroce_bth_psn(buf.data());

		benchmark::DoNotOptimize(op);
		benchmark::DoNotOptimize(qpn);
		benchmark::DoNotOptimize(psn);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_inplace_set(benchmark::State &state)
{
	HdrBuf buf{};
	uint32_t psn = 0x000456;

	build_headers(buf, SROCE_OP_RC_SEND_MIDDLE, psn);
	for (auto _ : state) {
		sroce_bth_set_psn(buf.data(), psn);
		sroce_bth_set_ack_req(buf.data(), psn & 1);
		benchmark::DoNotOptimize(buf.data());
		benchmark::ClobberMemory();
		psn = sroce_psn_add(psn, 1);
	}
	state.SetItemsProcessed(state.iterations());
}

} // namespace

void register_hdr_benchmarks()
{
	for (const auto &c : kCases)
		benchmark::RegisterBenchmark(
			(std::string("hdr_build/") + c.name).c_str(), bm_build,
			c.opcode);
	for (const auto &c : kCases)
		benchmark::RegisterBenchmark(
			(std::string("hdr_parse/") + c.name).c_str(), bm_parse,
			c.opcode);
	benchmark::RegisterBenchmark("hdr_bth_inplace/get", bm_inplace_get);
	benchmark::RegisterBenchmark("hdr_bth_inplace/set", bm_inplace_set);
}

void check_hdr(Checker &c)
{
	for (const auto &hc : kCases) {
		const std::string what = std::string("hdr ") + hc.name;
		HdrBuf buf{};
		Parsed out{};
		const unsigned len = build_headers(buf, hc.opcode, 0xabcdef);

		c.expect(len >= SROCE_BTH_LEN, what + ": built");
		c.expect(parse_headers(buf.data(), out), what + ": parsed");
		c.expect(out.bth.opcode == hc.opcode && out.bth.psn == 0xabcdef &&
				 out.bth.dest_qp == 0x123 && out.bth.pkey == 0xffff,
			 what + ": BTH round trip");
		if (out.op && (out.op->hdrs & SROCE_HDR_RETH))
			c.expect(out.reth.va == 0x7f0012345000ull &&
					 out.reth.rkey == 0x1234 &&
					 out.reth.dma_len == 65536,
				 what + ": RETH round trip");
		if (out.op && (out.op->hdrs & SROCE_HDR_AETH))
			c.expect(out.aeth.syndrome == 0x1f &&
					 out.aeth.msn == 0xabcdef,
				 what + ": AETH round trip");
		c.expect(sroce_bth_psn(buf.data()) == 0xabcdef &&
				 sroce_bth_qpn(buf.data()) == 0x123,
			 what + ": in-place fields");
	}
}

} // namespace sroce_bench
