// PSN arithmetic (kernel/core/psn.h) and the per-packet RC decisions built
// on it (kernel/core/rc.c).
//
//   psn/<op>            one call of the static inline helper; the inputs
//                       are opaque to the compiler, so this is the cost of
//                       the instructions plus the benchmark loop (~1 cycle)
//   rc/ack_decide       sroce_rc_ack_decide() for an ACK inside the window
//   rc/resp_decide      sroce_rc_resp_decide() for the expected SEND MIDDLE
//   rc/resp_advance     sroce_rc_resp_advance() past it
#include <benchmark/benchmark.h>

#include "bench_packets.h"
#include "core_bench.h"

extern "C" {
#include "kernel/core/opcode.h"
#include "kernel/core/pkt.h"
#include "kernel/core/psn.h"
#include "kernel/core/rc.h"
}

namespace sroce_bench {

namespace {

void bm_psn_diff(benchmark::State &state)
{
	uint32_t a = 0x000010, b = 0xfffff0;

	for (auto _ : state) {
		benchmark::DoNotOptimize(a);
		benchmark::DoNotOptimize(b);
		int d = sroce_psn_diff(a, b);

		benchmark::DoNotOptimize(d);
	}
}

void bm_psn_before(benchmark::State &state)
{
	uint32_t a = 0x000010, b = 0xfffff0;

	for (auto _ : state) {
		benchmark::DoNotOptimize(a);
		benchmark::DoNotOptimize(b);
		bool r = sroce_psn_before(a, b);

		benchmark::DoNotOptimize(r);
	}
}

void bm_psn_in_range(benchmark::State &state)
{
	uint32_t psn = 0x000010, first = 0xfffff0, n = 64;

	for (auto _ : state) {
		benchmark::DoNotOptimize(psn);
		benchmark::DoNotOptimize(first);
		benchmark::DoNotOptimize(n);
		bool r = sroce_psn_in_range(psn, first, n);

		benchmark::DoNotOptimize(r);
	}
}

void bm_psn_add(benchmark::State &state)
{
	uint32_t psn = 0xfffff0;

	for (auto _ : state) {
		psn = sroce_psn_add(psn, 1);
		benchmark::DoNotOptimize(psn);
	}
}

void bm_ack_decide(benchmark::State &state)
{
	uint32_t una = 0xfffff0, next = 0x000010, psn = 0x000004;
	uint8_t syndrome = 0x1f;	// ACK, unlimited credits
	struct sroce_rc_ack out = {};

	for (auto _ : state) {
		benchmark::DoNotOptimize(psn);
		benchmark::DoNotOptimize(syndrome);
		sroce_rc_ack_decide(una, next, psn, syndrome, &out);
		benchmark::DoNotOptimize(out);
	}
	state.SetItemsProcessed(state.iterations());
}

struct SendMiddle {
	RocePacket packet;
	struct sroce_pkt pkt;
	enum sroce_drop reason;

	SendMiddle() : packet(4, make_spec()), pkt{}
	{
		reason = sroce_pkt_parse(packet.bth(), packet.udp_payload_len(),
					 &pkt);
	}

	static PacketSpec make_spec()
	{
		PacketSpec s;

		s.opcode = SROCE_OP_RC_SEND_MIDDLE;
		s.payload = 1024;
		s.psn = 0x000456;
		return s;
	}
};

void bm_resp_decide(benchmark::State &state)
{
	const SendMiddle m;
	struct sroce_rc_resp_state st = {0x000456, SROCE_RC_SEQ_SEND, false};

	for (auto _ : state) {
		benchmark::DoNotOptimize(st);
		auto a = sroce_rc_resp_decide(&st, &m.pkt, m.reason);

		benchmark::DoNotOptimize(a);
	}
	state.SetItemsProcessed(state.iterations());
}

void bm_resp_advance(benchmark::State &state)
{
	const SendMiddle m;
	struct sroce_rc_resp_state st = {0x000456, SROCE_RC_SEQ_SEND, false};

	for (auto _ : state) {
		sroce_rc_resp_advance(&st, &m.pkt, 1024);
		st.epsn = 0x000456;	// stay on the same packet
		benchmark::DoNotOptimize(st);
	}
	state.SetItemsProcessed(state.iterations());
}

} // namespace

void register_psn_benchmarks()
{
	benchmark::RegisterBenchmark("psn/diff", bm_psn_diff);
	benchmark::RegisterBenchmark("psn/before", bm_psn_before);
	benchmark::RegisterBenchmark("psn/in_range", bm_psn_in_range);
	benchmark::RegisterBenchmark("psn/add", bm_psn_add);
	benchmark::RegisterBenchmark("rc/ack_decide", bm_ack_decide);
	benchmark::RegisterBenchmark("rc/resp_decide", bm_resp_decide);
	benchmark::RegisterBenchmark("rc/resp_advance", bm_resp_advance);
}

void check_psn(Checker &c)
{
	struct sroce_rc_ack out = {};
	const SendMiddle m;
	struct sroce_rc_resp_state st = {0x000456, SROCE_RC_SEQ_SEND, false};

	c.expect(sroce_psn_diff(0x000010, 0xfffff0) == 0x20, "psn diff wraps");
	c.expect(sroce_psn_before(0xfffff0, 0x000010), "psn before wraps");
	c.expect(sroce_psn_in_range(0x000010, 0xfffff0, 64), "psn in range");
	sroce_rc_ack_decide(0xfffff0, 0x000010, 0x000004, 0x1f, &out);
	c.expect(out.action == SROCE_RC_ACK_ADVANCE && out.acked &&
			 out.acked_psn == 0x000004,
		 "rc ack_decide advances");
	c.expect(m.reason == SROCE_DROP_NONE, "rc SEND MIDDLE parses");
	c.expect(sroce_rc_resp_decide(&st, &m.pkt, m.reason) ==
			 SROCE_RC_RESP_EXECUTE,
		 "rc resp_decide executes the expected PSN");
	sroce_rc_resp_advance(&st, &m.pkt, 1024);
	c.expect(st.epsn == 0x000457 && st.seq == SROCE_RC_SEQ_SEND,
		 "rc resp_advance");
}

} // namespace sroce_bench
