// The SQ poller (sq_poll_us, kernel/dp/exec.c) on a live sroce device, in a
// test-bed guest of two vCPUs or more, as root (part of verbs_device_tests;
// selftests/loopback.sh runs these cases, pair.sh all the others):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='SqPoll*'
// One thread streams small RDMA WRITEs between two RC QPs of the device
// (through its own IPv4 RoCE v2 GID) while the other CPU is idle: its
// doorbells are handed to the poller (the port counter sq_poll_handoffs
// moves), which then runs the engine without doorbells.  Every WRITE
// completes, in order, and the destination holds each slot's last value,
// so no WQE was lost or run twice between the poster, the poller and the
// NEED_WAKEUP flag.  With sq_poll_us=0 the same stream hands off nothing;
// nor, with the poller on, does a ping-pong whose doorbells come on an
// empty SQ more than two polling periods apart (a round trip over a wire,
// where a hand-off would add a wake-up of the idle CPU to each message).
// A process that writes garbage into its SQ's producer index behind the
// provider's back while the poller polls costs nothing but its own QP: the
// QP is destroyed in bounded time and a new pair streams correctly after.
// Skips on another driver (the counter and the parameter are sroce's) and
// on a guest of one CPU (no other CPU to poll on).
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "rdma/sroce-abi.h"
#include "test_env.h"
#include "uverbs_maps.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

const char kParam[] = "/sys/module/sroce/parameters/sq_poll_us";

// sq_poll_us set for the scope, restored after.
class SqPollSetting {
public:
	explicit SqPollSetting(unsigned int us)
	{
		std::ifstream in(kParam);

		ok_ = bool(in >> old_) && write(us);
	}
	~SqPollSetting()
	{
		if (ok_)
			write(old_);
	}
	SqPollSetting(const SqPollSetting &) = delete;
	SqPollSetting &operator=(const SqPollSetting &) = delete;
	bool ok() const { return ok_; }

private:
	static bool write(unsigned int us)
	{
		std::ofstream out(kParam);

		out << us << "\n";
		out.flush();
		return bool(out);
	}
	unsigned int old_ = 0;
	bool ok_ = false;
};

class SqPoll : public ::testing::Test {
protected:
	static constexpr int kSlots = 4096;	// 8-byte slots of dst
	static constexpr int kWrites = 20000;
	static constexpr int kSignal = 32;	// one signalled WRITE in kSignal
	static constexpr int kSqDepth = 128;

	void SetUp() override
	{
		if (!testing_sroce())
			GTEST_SKIP() << not_sroce("the SQ poller");
		if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
			GTEST_SKIP() << "one CPU online: no other CPU to poll on";
		std::string name;
		ASSERT_NO_FATAL_FAILURE(
			open_with_ipv4_gid(ctx_, pd_, gid_, gid_index_, &name));
		ASSERT_GE(hw_counter("sq_poll_handoffs"), 0)
			<< "cannot read sq_poll_handoffs of " << name;
		smr_.reset(ibv_reg_mr(pd_.get(), src_.data(), src_.size(),
				      kMrAll));
		dmr_.reset(ibv_reg_mr(pd_.get(), dst_.data(), dst_.size(),
				      kMrAll));
		ASSERT_TRUE(smr_ && dmr_) << std::strerror(errno);
		ASSERT_NO_FATAL_FAILURE(make_pair());
	}

	// The QP goes before its CQs.
	static void drop(End &e)
	{
		e.qp.reset();
		e.scq.reset();
		e.rcq.reset();
	}

	// a_ and b_ connected; sq_hdr_ is the header of a_'s SQ ring: of the
	// rings a_ brought (two CQs of 256, an RQ of 64), the one of kSqDepth
	// slots of a send WQE or more.
	void make_pair()
	{
		Caps c;
		c.send_wr = kSqDepth;
		drop(a_);
		drop(b_);
		const auto before = uverbs_mappings();
		ASSERT_TRUE(make_end(a_, pd_.get(), c));
		sq_hdr_ = nullptr;
		for (const auto &m : new_mappings(before)) {
			auto *h = reinterpret_cast<sroce_ring_hdr *>(m.start);
			if (h->num_slots == kSqDepth &&
			    (1u << h->slot_shift) >= sizeof(sroce_send_wqe))
				sq_hdr_ = h;
		}
		ASSERT_TRUE(make_end(b_, pd_.get(), c));
		ASSERT_TRUE(connect(a_.qp.get(), b_->qp_num, gid_, gid_index_));
		ASSERT_TRUE(connect(b_.qp.get(), a_->qp_num, gid_, gid_index_));
	}

	// WRITE i puts i into slot i % kSlots; every kSignal-th is signalled,
	// and the oldest signalled one is waited for when kSqDepth / kSignal
	// - 1 are outstanding, so the SQ never fills.  A slot of src is written
	// again only long after its last WRITE completed (RC completes in
	// order, and kSlots is far more than kSqDepth).
	void stream()
	{
		auto *src = reinterpret_cast<uint64_t *>(src_.data());
		uint64_t oldest = kSignal - 1;	// signalled, not waited for
		int pending = 0;

		for (int i = 0; i < kWrites; i++) {
			const int slot = i % kSlots;
			const bool sig = i % kSignal == kSignal - 1;

			src[slot] = uint64_t(i);
			ASSERT_EQ(post_send(a_.qp.get(), uint64_t(i),
					    IBV_WR_RDMA_WRITE,
					    {src_.addr(slot * 8), 8, smr_->lkey},
					    sig ? IBV_SEND_SIGNALED : 0,
					    dst_.addr(slot * 8), dmr_->rkey),
				  0)
				<< "WRITE " << i;
			if (!sig || ++pending < kSqDepth / kSignal - 1)
				continue;
			ASSERT_TRUE(completes(a_.scq.get(), oldest,
					      IBV_WC_SUCCESS,
					      IBV_WC_RDMA_WRITE));
			oldest += kSignal;
			pending--;
		}
		for (; pending > 0; pending--, oldest += kSignal)
			ASSERT_TRUE(completes(a_.scq.get(), oldest,
					      IBV_WC_SUCCESS,
					      IBV_WC_RDMA_WRITE));
		const auto *dst = reinterpret_cast<const uint64_t *>(dst_.data());
		for (int slot = 0; slot < kSlots; slot++) {
			const int last = (kWrites - 1 - slot) / kSlots * kSlots +
					 slot;
			ASSERT_EQ(dst[slot], uint64_t(last)) << "slot " << slot;
		}
	}

	Context ctx_;
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
	Buffer src_{kSlots * 8}, dst_{kSlots * 8};
	Mr smr_, dmr_;
	End a_, b_;
	sroce_ring_hdr *sq_hdr_ = nullptr;
};

TEST_F(SqPoll, StreamedWritesAreHandedToThePollerAndAllArrive)
{
	SqPollSetting on(50);
	ASSERT_TRUE(on.ok()) << "cannot set " << kParam;
	const long before = hw_counter("sq_poll_handoffs");

	ASSERT_NO_FATAL_FAILURE(stream());
	const long handed = hw_counter("sq_poll_handoffs") - before;
	std::cout << "sq_poll_handoffs: +" << handed << " in " << kWrites
		  << " WRITEs\n";
	EXPECT_GT(handed, 0) << "no doorbell reached the poller";
	// a poller that stays on needs few doorbells, not one per WRITE
	EXPECT_LT(handed, kWrites / 2);
}

// For 300 ms, bursts of WRITEs (which hand the QP to the poller; their
// posts may fail, their WQEs go astray), each followed by random values
// stored into the SQ's producer while the poller still polls it.  The
// kernel validates every producer it reads, so the worst is work for this
// QP alone.  Then the QP must go within the usual bound, and a new pair
// must stream with every byte right.  One thread: the other CPU must stay
// idle for the hand-offs.
TEST_F(SqPoll, ScribbledProducerCostsOnlyItsOwnQp)
{
	using Clock = std::chrono::steady_clock;
	SqPollSetting on(50);
	ASSERT_TRUE(on.ok()) << "cannot set " << kParam;
	ASSERT_NE(sq_hdr_, nullptr) << "no SQ ring among the QP's mappings";
	const long before = hw_counter("sq_poll_handoffs");
	const auto end = Clock::now() + std::chrono::milliseconds(300);
	std::mt19937 rng(20261203);
	ibv_wc wc[16];
	long posted = 0, scribbled = 0;

	for (int i = 0; Clock::now() < end;) {
		for (int n = 0; n < kSignal; n++, i++) {
			const int slot = i % kSlots;
			posted += post_send(a_.qp.get(), uint64_t(i),
					    IBV_WR_RDMA_WRITE,
					    {src_.addr(slot * 8), 8, smr_->lkey},
					    n ? 0 : IBV_SEND_SIGNALED,
					    dst_.addr(slot * 8),
					    dmr_->rkey) == 0;
		}
		for (int n = 0; n < 2000; n++, scribbled++)
			__atomic_store_n(&sq_hdr_->producer, uint32_t(rng()),
					 __ATOMIC_RELEASE);
		while (ibv_poll_cq(a_.scq.get(), 16, wc) > 0)
			;
	}
	const long handed = hw_counter("sq_poll_handoffs") - before;
	std::cout << posted << " WRITEs posted, " << scribbled
		  << " producers scribbled, sq_poll_handoffs: +" << handed
		  << "\n";
	EXPECT_GT(handed, 0) << "the poller never polled the scribbled ring";

	const auto t0 = Clock::now();
	a_.qp.reset();
	const auto took = Clock::now() - t0;
	EXPECT_LT(took, slow(std::chrono::seconds{10}))
		<< "destroying the scribbled QP took "
		<< std::chrono::duration_cast<std::chrono::milliseconds>(took)
			   .count()
		<< " ms";
	ASSERT_NO_FATAL_FAILURE(make_pair());
	ASSERT_NO_FATAL_FAILURE(stream());
}

// One signalled WRITE at a time, each posted 300 us (six polling periods)
// after the last one completed, spinning so that the other CPU alone is
// idle: the pattern of a latency test over a wire, whose replies take a
// round trip.  The SQ is empty at every doorbell and the poster does not
// stream, so no doorbell may go to the poller.
TEST_F(SqPoll, PingPongWithPausesHandsNothing)
{
	using Clock = std::chrono::steady_clock;
	constexpr int kRounds = 200;
	SqPollSetting on(50);
	ASSERT_TRUE(on.ok()) << "cannot set " << kParam;
	auto *src = reinterpret_cast<uint64_t *>(src_.data());
	const auto *dst = reinterpret_cast<const uint64_t *>(dst_.data());
	const long before = hw_counter("sq_poll_handoffs");

	for (int i = 0; i < kRounds; i++) {
		src[0] = uint64_t(i) + 1;
		ASSERT_EQ(post_send(a_.qp.get(), uint64_t(i),
				    IBV_WR_RDMA_WRITE,
				    {src_.addr(0), 8, smr_->lkey},
				    IBV_SEND_SIGNALED, dst_.addr(0),
				    dmr_->rkey),
			  0)
			<< "WRITE " << i;
		ASSERT_TRUE(completes(a_.scq.get(), uint64_t(i),
				      IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE));
		ASSERT_EQ(__atomic_load_n(dst, __ATOMIC_ACQUIRE),
			  uint64_t(i) + 1)
			<< "WRITE " << i;
		const auto until = Clock::now() + std::chrono::microseconds(300);
		while (Clock::now() < until)
			;
	}
	usleep(50000);	// ib_core's cached counter read expires
	EXPECT_EQ(hw_counter("sq_poll_handoffs"), before)
		<< "a ping-pong's doorbells went to the poller";
}

TEST_F(SqPoll, OffHandsNothingAndAllArrive)
{
	SqPollSetting off(0);
	ASSERT_TRUE(off.ok()) << "cannot set " << kParam;
	const long before = hw_counter("sq_poll_handoffs");

	ASSERT_NO_FATAL_FAILURE(stream());
	// the counter is ib_core's cached read: let it expire first
	usleep(50000);
	EXPECT_EQ(hw_counter("sq_poll_handoffs"), before);
}

} // namespace
} // namespace sroce::test
