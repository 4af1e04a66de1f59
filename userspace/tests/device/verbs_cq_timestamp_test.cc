// Completion timestamps and the device clock (CqTimestamp.*, part of
// verbs_device_tests).  Run inside a test-bed guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='CqTimestamp.*'
// Two RC QPs of the device, connected to each other through its own IPv4
// RoCE v2 GID (the Ex fixture of verbs_ex_fixture.h).  Covered:
// - the device describes its clock (completion_timestamp_mask,
//   hca_core_clock) and ibv_query_rt_values_ex reads it, at the advertised
//   rate; on sroce it is CLOCK_MONOTONIC in nanoseconds (sroce-abi.h);
// - every completion of a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
//   carries a stamp: per CQ non-decreasing in completion order, between two
//   device clock readings taken before posting and after polling, and a
//   receive's stamp not before its send was posted;
// - IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, alone or with the device
//   clock, stamps CLOCK_REALTIME;
// - a CQ without the flags works as before (and on sroce is not stamped);
// - a timestamp CQ with an unsupported wc_flag is still refused.
// A device that does not advertise a clock (rdma_rxe) skips the stamp cases
// and says so; sroce must advertise it.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "verbs_ex_fixture.h"

namespace sroce::test::ex {
namespace {

// One completion of an extended CQ, with its stamps (0 where not asked for).
struct TsWc {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num;
	uint64_t ts, wallclock;
};

inline std::string str(const TsWc &w)
{
	std::ostringstream o;
	o << "{wr_id " << w.wr_id << ", " << ibv_wc_status_str(w.status)
	  << ", opcode " << int(w.opcode) << ", ts " << w.ts << ", wallclock "
	  << w.wallclock << "}";
	return o.str();
}

uint64_t ns_of(const timespec &t)
{
	return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

uint64_t realtime_ns()
{
	timespec t{};
	clock_gettime(CLOCK_REALTIME, &t);
	return ns_of(t);
}

uint64_t monotonic_ns()
{
	timespec t{};
	clock_gettime(CLOCK_MONOTONIC, &t);
	return ns_of(t);
}

class CqTimestamp : public Ex {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Ex::SetUp());
		ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &attr_), 0);
	}

	// Whether the device has a clock to stamp with; sroce must.
	bool has_clock() const
	{
		return attr_.completion_timestamp_mask && attr_.hca_core_clock;
	}

	// The device clock's current value in ticks: raw_clock as a count
	// (tv_sec 0, the hardware providers' way) or as a timespec, which
	// are the same number for tv_sec 0.  A failure if it cannot be read.
	::testing::AssertionResult raw_clock(uint64_t &ticks)
	{
		ibv_values_ex v{};
		v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
		const int r = ibv_query_rt_values_ex(ctx_.get(), &v);
		if (r)
			return ::testing::AssertionFailure()
			       << "ibv_query_rt_values_ex: " << err_str(r);
		if (!(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
			return ::testing::AssertionFailure()
			       << "raw clock not returned (comp_mask 0x"
			       << std::hex << v.comp_mask << ")";
		ticks = ns_of(v.raw_clock);
		return ::testing::AssertionSuccess();
	}

	CqEx ts_cq(uint64_t ts_flags, int cqe = 64)
	{
		ibv_cq_init_attr_ex a{};
		a.cqe = cqe;
		a.wc_flags = kWcFlags | ts_flags;
		return CqEx(ibv_create_cq_ex(ctx_.get(), &a));
	}

	// Everything cq holds now, appended to out, through extended polling.
	static void drain(ibv_cq_ex *cq, uint64_t flags, std::vector<TsWc> &out)
	{
		ibv_poll_cq_attr pa{};
		int r = ibv_start_poll(cq, &pa);
		if (r == ENOENT)
			return;
		ASSERT_EQ(r, 0) << "ibv_start_poll";
		do {
			TsWc w{cq->wr_id,
			       cq->status,
			       ibv_wc_read_opcode(cq),
			       ibv_wc_read_byte_len(cq),
			       ibv_wc_read_qp_num(cq),
			       0,
			       0};
			if (flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
				w.ts = ibv_wc_read_completion_ts(cq);
			if (flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
				w.wallclock =
					ibv_wc_read_completion_wallclock_ns(cq);
			out.push_back(w);
			r = ibv_next_poll(cq);
		} while (r == 0);
		ibv_end_poll(cq);
		ASSERT_EQ(r, ENOENT) << "ibv_next_poll";
	}

	// Polls cq into out until it holds a completion of opcode op for
	// wr_id; that completion, or none within kWait.
	static std::optional<TsWc> wait_for(ibv_cq_ex *cq, uint64_t flags,
					    std::vector<TsWc> &out,
					    uint64_t wr_id, ibv_wc_opcode op)
	{
		const auto deadline = Clock::now() + kWait;
		for (;;) {
			for (const TsWc &w : out)
				if (w.wr_id == wr_id && w.opcode == op)
					return w;
			if (Clock::now() > deadline || ::testing::Test::HasFatalFailure())
				return std::nullopt;
			const size_t before = out.size();
			drain(cq, flags, out);
			if (out.size() == before)
				std::this_thread::sleep_for(kNap);
		}
	}

	ibv_device_attr_ex attr_{};
};

#define SKIP_WITHOUT_CLOCK()                                                  \
	do {                                                                  \
		if (!has_clock()) {                                           \
			ASSERT_FALSE(testing_sroce())                         \
				<< "sroce must advertise its clock";          \
			GTEST_SKIP() << not_sroce("completion timestamps "    \
						  "(completion_timestamp_"    \
						  "mask 0)");                 \
		}                                                             \
	} while (0)

// The attributes describe a clock that ibv_query_rt_values_ex reads and
// that runs at hca_core_clock kHz.
TEST_F(CqTimestamp, DeviceDescribesAndReadsItsClock)
{
	SKIP_WITHOUT_CLOCK();
	if (testing_sroce()) {
		EXPECT_EQ(attr_.completion_timestamp_mask,
			  SROCE_COMPLETION_TIMESTAMP_MASK);
		EXPECT_EQ(attr_.hca_core_clock, SROCE_HCA_CORE_CLOCK_KHZ);
	}

	// Readings do not go back, and the rate is the advertised one:
	// 100 ms of steady_clock, measured around the two readings, hold
	// at least the ticks of the 100 ms slept and not many more than
	// the ticks of the time that passed.
	uint64_t r0 = 0, r1 = 0;
	const auto t0 = Clock::now();
	ASSERT_TRUE(raw_clock(r0));
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	ASSERT_TRUE(raw_clock(r1));
	const auto t1 = Clock::now();
	ASSERT_GE(r1, r0);
	const double dev_us = double((r1 - r0) & attr_.completion_timestamp_mask) *
			      1000.0 / double(attr_.hca_core_clock);
	const double host_us = double(
		std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0)
			.count());
	EXPECT_GE(dev_us, 100000.0 * 0.95) << "host " << host_us << " us";
	EXPECT_LE(dev_us, host_us * 1.05 + 1000.0) << "host " << host_us << " us";

	// sroce's clock is CLOCK_MONOTONIC in nanoseconds, read without the
	// kernel: a reading lies between two of clock_gettime.
	if (testing_sroce()) {
		const uint64_t m0 = monotonic_ns();
		uint64_t r = 0;
		ASSERT_TRUE(raw_clock(r));
		const uint64_t m1 = monotonic_ns();
		EXPECT_LE(m0, r);
		EXPECT_LE(r, m1);
		// Bits it does not know are cleared, RAW_CLOCK kept.
		ibv_values_ex v{};
		v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | (1u << 30);
		ASSERT_EQ(ibv_query_rt_values_ex(ctx_.get(), &v), 0);
		EXPECT_EQ(v.comp_mask, uint32_t(IBV_VALUES_MASK_RAW_CLOCK));
		EXPECT_EQ(v.raw_clock.tv_sec, 0);
	}
}

// A ping-pong of n SENDs each way: a's CQ and b's CQ each get n send and
// n receive completions, interleaved, all stamped.
TEST_F(CqTimestamp, RcExchangeIsStamped)
{
	SKIP_WITHOUT_CLOCK();
	constexpr uint64_t kTs = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	constexpr int n = 8;
	CqEx ca = ts_cq(kTs), cb = ts_cq(kTs);
	ASSERT_TRUE(ca && cb) << std::strerror(errno);
	Qp a = qp(ibv_cq_ex_to_cq(ca.get()), ibv_cq_ex_to_cq(ca.get())),
	   b = qp(ibv_cq_ex_to_cq(cb.get()), ibv_cq_ex_to_cq(cb.get()));
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 256, 1), dst(pd_.get(), 256 * n * 2, 2);
	ASSERT_TRUE(src.mr && dst.mr) << std::strerror(errno);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(post_recv(b.get(), 100 + i,
				    {dst.addr(256 * i), 256, dst.mr->lkey}), 0);
		ASSERT_EQ(post_recv(a.get(), 200 + i,
				    {dst.addr(256 * (n + i)), 256,
				     dst.mr->lkey}), 0);
	}

	std::vector<TsWc> wa, wb;
	uint64_t before = 0, after = 0;
	std::vector<uint64_t> posted_ab(n), posted_ba(n);
	ASSERT_TRUE(raw_clock(before));
	for (int i = 0; i < n; i++) {
		const uint32_t len = 16 + 8 * i;
		ASSERT_TRUE(raw_clock(posted_ab[i]));
		ASSERT_EQ(post_send(a.get(), 1000 + i, IBV_WR_SEND,
				    {src.addr(), len, src.mr->lkey},
				    IBV_SEND_SIGNALED), 0);
		ASSERT_TRUE(wait_for(cb.get(), kTs, wb, 100 + i, IBV_WC_RECV))
			<< "message " << i << " a->b not received";
		ASSERT_TRUE(raw_clock(posted_ba[i]));
		ASSERT_EQ(post_send(b.get(), 2000 + i, IBV_WR_SEND,
				    {src.addr(), len, src.mr->lkey},
				    IBV_SEND_SIGNALED), 0);
		ASSERT_TRUE(wait_for(ca.get(), kTs, wa, 200 + i, IBV_WC_RECV))
			<< "message " << i << " b->a not received";
	}
	for (int i = 0; i < n; i++) {
		ASSERT_TRUE(wait_for(ca.get(), kTs, wa, 1000 + i, IBV_WC_SEND));
		ASSERT_TRUE(wait_for(cb.get(), kTs, wb, 2000 + i, IBV_WC_SEND));
	}
	ASSERT_TRUE(raw_clock(after));

	const uint64_t mask = attr_.completion_timestamp_mask;
	for (const auto *w : {&wa, &wb}) {
		const char *who = w == &wa ? "a's CQ" : "b's CQ";
		ASSERT_EQ(w->size(), size_t(2 * n)) << who;
		uint64_t last = 0;
		for (const TsWc &c : *w) {
			SCOPED_TRACE(std::string(who) + " " + str(c));
			EXPECT_EQ(c.status, IBV_WC_SUCCESS);
			EXPECT_GE(c.ts & mask, before & mask);
			EXPECT_LE(c.ts & mask, after & mask);
			EXPECT_GE(c.ts, last) << "went back in completion order";
			last = c.ts;
			const bool recv = c.opcode == IBV_WC_RECV;
			const uint64_t base = recv ? (w == &wa ? 200 : 100)
						   : (w == &wa ? 1000 : 2000);
			ASSERT_GE(c.wr_id, base);
			ASSERT_LT(c.wr_id, base + n);
			const size_t i = c.wr_id - base;
			// A's receives are b's sends, and the other way.
			const uint64_t posted =
				(w == &wa) == recv ? posted_ba[i] : posted_ab[i];
			EXPECT_GE(c.ts, posted) << "before its send was posted";
			if (recv) {
				EXPECT_EQ(c.byte_len, 16u + 8 * i);
			}
		}
	}
}

// The wall-clock stamp is CLOCK_REALTIME when the device generated the
// completion, alone or with the device clock's.
TEST_F(CqTimestamp, WallclockStampsAreRealtime)
{
	SKIP_WITHOUT_CLOCK();
	constexpr uint64_t kWall = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	constexpr uint64_t kBoth = kWall | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	CqEx cw = ts_cq(kWall), cboth = ts_cq(kBoth);
	if (!cw || !cboth) {
		ASSERT_FALSE(testing_sroce()) << std::strerror(errno);
		ASSERT_EQ(errno, EOPNOTSUPP);
		GTEST_SKIP() << test_device_name()
			     << " has no wall-clock completion timestamps";
	}
	Qp a = qp(ibv_cq_ex_to_cq(cw.get()), ibv_cq_ex_to_cq(cw.get())),
	   b = qp(ibv_cq_ex_to_cq(cboth.get()), ibv_cq_ex_to_cq(cboth.get()));
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr) << std::strerror(errno);
	ASSERT_EQ(post_recv(b.get(), 1, {dst.addr(), 64, dst.mr->lkey}), 0);

	std::vector<TsWc> wa, wb;
	uint64_t dev_before = 0, dev_after = 0;
	const uint64_t wall_before = realtime_ns();
	ASSERT_TRUE(raw_clock(dev_before));
	ASSERT_EQ(post_send(a.get(), 2, IBV_WR_SEND,
			    {src.addr(), 64, src.mr->lkey}, IBV_SEND_SIGNALED),
		  0);
	const auto rb = wait_for(cboth.get(), kBoth, wb, 1, IBV_WC_RECV);
	const auto sa = wait_for(cw.get(), kWall, wa, 2, IBV_WC_SEND);
	ASSERT_TRUE(raw_clock(dev_after));
	const uint64_t wall_after = realtime_ns();
	ASSERT_TRUE(rb && sa);
	for (const TsWc &c : {*rb, *sa}) {
		SCOPED_TRACE(str(c));
		EXPECT_EQ(c.status, IBV_WC_SUCCESS);
		EXPECT_GE(c.wallclock, wall_before);
		EXPECT_LE(c.wallclock, wall_after);
	}
	EXPECT_GE(rb->ts, dev_before);
	EXPECT_LE(rb->ts, dev_after);
}

// A CQ that asked for no stamp is made and works as before, extended or
// not; on sroce its CQEs are not stamped (the reader, which sroce sets on
// every extended CQ, returns 0: no clock was read for them).
TEST_F(CqTimestamp, CqWithoutTheFlagWorksAsBefore)
{
	ibv_cq_init_attr_ex ca{};
	ca.cqe = 16;
	ca.wc_flags = kWcFlags;
	CqEx rcq(ibv_create_cq_ex(ctx_.get(), &ca));
	ASSERT_TRUE(rcq) << std::strerror(errno);
	Cq scq = cq();
	ASSERT_TRUE(scq) << std::strerror(errno);
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(),
						 ibv_cq_ex_to_cq(rcq.get()));
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr) << std::strerror(errno);
	ASSERT_EQ(post_recv(b.get(), 1, {dst.addr(), 64, dst.mr->lkey}), 0);
	ASSERT_EQ(post_send(a.get(), 2, IBV_WR_SEND,
			    {src.addr(), 40, src.mr->lkey}, IBV_SEND_SIGNALED),
		  0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 2, IBV_WC_SEND, a.get()));

	const auto deadline = Clock::now() + kWait;
	ibv_poll_cq_attr pa{};
	int r;
	while ((r = ibv_start_poll(rcq.get(), &pa)) == ENOENT &&
	       Clock::now() < deadline)
		std::this_thread::sleep_for(kNap);
	ASSERT_EQ(r, 0);
	const Wc w = from_cq_ex(rcq.get());
	const uint64_t ts = testing_sroce() ?
				    ibv_wc_read_completion_ts(rcq.get()) : 0;
	ibv_end_poll(rcq.get());
	EXPECT_TRUE(is_ok(w, 1, IBV_WC_RECV, b.get())) << str(w);
	EXPECT_EQ(w.byte_len, 40u);
	EXPECT_EQ(ts, 0u);
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());
}

// Asking for stamps does not make the other refusals go away.
TEST_F(CqTimestamp, UnsupportedWcFlagIsStillRefused)
{
	SKIP_WITHOUT_CLOCK();
	std::vector<uint64_t> bad = {uint64_t(1) << 40};	// no such flag
	if (testing_sroce()) {
		bad.push_back(IBV_WC_EX_WITH_CVLAN);
		bad.push_back(IBV_WC_EX_WITH_FLOW_TAG);
		bad.push_back(IBV_WC_EX_WITH_TM_INFO);
	}
	for (const uint64_t f : bad) {
		SCOPED_TRACE(f);
		errno = 0;
		CqEx c = ts_cq(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | f);
		EXPECT_FALSE(c);
		EXPECT_EQ(errno, EOPNOTSUPP) << std::strerror(errno);
	}
	if (testing_sroce()) {
		ibv_cq_init_attr_ex a{};
		a.cqe = 16;
		a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
		errno = 0;
		CqEx c(ibv_create_cq_ex(ctx_.get(), &a));
		EXPECT_FALSE(c);
		EXPECT_EQ(errno, EOPNOTSUPP) << std::strerror(errno);
	}
}

} // namespace
} // namespace sroce::test::ex
