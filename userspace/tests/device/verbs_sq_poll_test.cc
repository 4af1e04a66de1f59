// The SQ poller (sq_poll_us, kernel/dp/exec.c) on a live sroce device, in a
// test-bed guest of two vCPUs or more, as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='SqPoll*'
// One thread streams small RDMA WRITEs between two RC QPs of the device
// (through its own IPv4 RoCE v2 GID) while the other CPU is idle: its
// doorbells are handed to the poller (the port counter sq_poll_handoffs
// moves), which then runs the engine without doorbells.  Every WRITE
// completes, in order, and the destination holds each slot's last value,
// so no WQE was lost or run twice between the poster, the poller and the
// NEED_WAKEUP flag.  With sq_poll_us=0 the same stream hands off nothing.
// Skips on another driver (the counter and the parameter are sroce's) and
// on a guest of one CPU (no other CPU to poll on).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "test_env.h"
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
		Caps c;
		c.send_wr = kSqDepth;
		ASSERT_TRUE(make_end(a_, pd_.get(), c));
		ASSERT_TRUE(make_end(b_, pd_.get(), c));
		ASSERT_TRUE(connect(a_.qp.get(), b_->qp_num, gid_, gid_index_));
		ASSERT_TRUE(connect(b_.qp.get(), a_->qp_num, gid_, gid_index_));
		smr_.reset(ibv_reg_mr(pd_.get(), src_.data(), src_.size(),
				      kMrAll));
		dmr_.reset(ibv_reg_mr(pd_.get(), dst_.data(), dst_.size(),
				      kMrAll));
		ASSERT_TRUE(smr_ && dmr_) << std::strerror(errno);
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
	End a_, b_;
	Buffer src_{kSlots * 8}, dst_{kSlots * 8};
	Mr smr_, dmr_;
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
