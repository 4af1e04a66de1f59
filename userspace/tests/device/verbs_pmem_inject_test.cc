// The RC responder's side of the IBTA 1.5 memory placement extensions
// (Placement, part of verbs_device_tests; the fixture is in
// verbs_inject_fixture.h), with hand-made ATOMIC WRITE and FLUSH requests
// aimed at a live RC QP in RTR: the ones it must refuse (a misaligned or
// short ATOMIC WRITE, a FLUSH with an invalid FETH or one the QP or the
// region does not allow, persistence) put it in the error state with a NAK;
// the ones it must execute place the word, or answer, and leave it alive.
// FLUSH cannot be posted through libibverbs 44, so this is where sroce's
// FLUSH responder is tested.  sroce only: the packets come from a made-up
// peer and the checks read sroce's counters.
#include <gtest/gtest.h>

#include "verbs_inject_fixture.h"

namespace sroce::test {
namespace {

// IB_UVERBS_DEVICE_FLUSH_GLOBAL and the access bits of FLUSH (Linux 6.2);
// libibverbs 44 has no names for them.
constexpr uint64_t kDevFlushGlobal = 1ull << 38;
constexpr int kAccessFlushGlobal = 1 << 8;
constexpr uint32_t kFethGlobalRange = 0x01;
constexpr uint32_t kFethGlobalRegion = 0x11;
constexpr uint32_t kFethPersistent = 0x02;

class Placement : public Inject {
protected:
	void SetUp() override
	{
		if (!testing_sroce())
			GTEST_SKIP() << not_sroce("hand-made requests from a "
						  "made-up peer (sroce only)");
		Context c;
		ASSERT_NO_FATAL_FAILURE(open_test_device(c));
		ibv_device_attr_ex ex{};
		ASSERT_EQ(ibv_query_device_ex(c.get(), nullptr, &ex), 0);
		flush_ = ex.device_cap_flags_ex & kDevFlushGlobal;
		ASSERT_NO_FATAL_FAILURE(Inject::SetUp());
		mem_ = Buffer(kLen);
		ASSERT_TRUE(mem_.data());
		mem_mr_.reset(ibv_reg_mr(pd_.get(), mem_.data(), kLen,
					 IBV_ACCESS_LOCAL_WRITE |
						 IBV_ACCESS_REMOTE_WRITE |
						 (flush_ ? kAccessFlushGlobal : 0)));
		ASSERT_TRUE(mem_mr_) << std::strerror(errno);
	}

	// Where the device announces FLUSH, the QP allows it.
	int qp_access() const override
	{
		return IBV_ACCESS_REMOTE_WRITE | (flush_ ? kAccessFlushGlobal : 0);
	}

	// An ATOMIC WRITE of 8 bytes of fill at offset off of mem_.
	roce::Spec atomic_write(uint64_t off, uint8_t fill) const
	{
		roce::Spec s = spec();

		s.opcode = opcode(roce::Transport::RC, "atomic-write");
		s.len = 8;
		s.fill = fill;
		s.va = mem_.addr(off);
		s.rkey = mem_mr_->rkey;
		return s;
	}

	// A FLUSH of len bytes at offset off of region mr.
	roce::Spec flush(uint32_t feth, uint64_t off, uint32_t len,
			 const ibv_mr *mr) const
	{
		roce::Spec s = spec();

		s.opcode = opcode(roce::Transport::RC, "flush");
		s.len = 0;
		s.dma_len = len;
		s.va = mem_.addr(off);
		s.rkey = mr->rkey;
		s.feth = feth;
		return s;
	}

	// s at the expected PSN is refused with a NAK: the QP in ERR with the
	// affiliated event, the receive flushed, memory untouched.
	void expect_refused(const roce::Spec &s, ibv_event_type ev)
	{
		const long sent = hw_counter("sent_pkts");

		ASSERT_NO_FATAL_FAILURE(inject(s));
		EXPECT_TRUE(wait_qp_event(ev)) << "no " << ibv_event_type_str(ev);
		EXPECT_EQ(query_state(qp_.get()), IBV_QPS_ERR);
		EXPECT_TRUE(completes(cq_.get(), 1, IBV_WC_WR_FLUSH_ERR,
				      IBV_WC_RECV));
		EXPECT_TRUE(all_are(mem_.data(), kLen, kSentinel, "memory"));
		EXPECT_TRUE(sent_more_than(sent)) << "no NAK sent";
	}

	// The QP answered (the counters are cached 10 ms) and is alive.
	void expect_answered(long sent)
	{
		EXPECT_TRUE(sent_more_than(sent)) << "no answer sent";
		EXPECT_EQ(query_state(qp_.get()), IBV_QPS_RTR);
		const std::optional<ibv_wc> wc = next_wc(cq_.get(), slow(kQuiet));
		EXPECT_FALSE(wc) << "completed: " << wc_str(*wc);
	}

	static bool sent_more_than(long sent)
	{
		const auto deadline = Clock::now() + kWait;

		while (hw_counter("sent_pkts") <= sent && Clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		return hw_counter("sent_pkts") > sent;
	}

	// A SEND at psn completes the receive: the QP expects psn.
	void expect_expects(uint32_t psn)
	{
		roce::Spec s = spec();

		s.psn = psn;
		ASSERT_NO_FATAL_FAILURE(inject(s));
		const std::optional<ibv_wc> wc = next_wc(cq_.get());
		ASSERT_TRUE(wc) << "a SEND at PSN " << psn << " did not complete";
		EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
		EXPECT_EQ(wc->byte_len, kPayload);
	}

	bool flush_ = false;
	Buffer mem_;
	Mr mem_mr_;
};

TEST_P(Placement, AtomicWritePlacesTheWord)
{
	const long sent = hw_counter("sent_pkts");

	ASSERT_NO_FATAL_FAILURE(inject(atomic_write(1024, 0x3c)));
	const auto deadline = Clock::now() + kWait;
	while (mem_.data()[1024] != 0x3c && Clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	EXPECT_TRUE(all_are(mem_.data() + 1024, 8, 0x3c, "the word"));
	EXPECT_TRUE(all_are(mem_.data(), 1024, kSentinel, "before it"));
	EXPECT_TRUE(all_are(mem_.data() + 1032, kLen - 1032, kSentinel,
			    "after it"));
	expect_answered(sent);
	// a duplicate is answered again, not executed again
	mem_.data()[1024] = 0;
	const long sent2 = hw_counter("sent_pkts");
	ASSERT_NO_FATAL_FAILURE(inject(atomic_write(1024, 0x3c)));
	expect_answered(sent2);
	EXPECT_EQ(mem_.data()[1024], 0) << "a duplicate was executed again";
	expect_expects(kPsn + 1);
}

TEST_P(Placement, AtomicWriteMisalignedIsInvalid)
{
	expect_refused(atomic_write(1028, 0x3c), IBV_EVENT_QP_REQ_ERR);
}

TEST_P(Placement, AtomicWriteOfFourBytesIsInvalid)
{
	roce::Spec s = atomic_write(1024, 0x3c);

	s.len = 4;
	expect_refused(s, IBV_EVENT_QP_REQ_ERR);
}

TEST_P(Placement, AtomicWriteOutsideTheRegionIsAnAccessError)
{
	expect_refused(atomic_write(kLen, 0x3c), IBV_EVENT_QP_ACCESS_ERR);
}

TEST_P(Placement, FlushWithoutPlacementTypeIsInvalid)
{
	expect_refused(flush(0, 0, kLen, mem_mr_.get()), IBV_EVENT_QP_REQ_ERR);
}

TEST_P(Placement, FlushWithReservedSelectivityIsInvalid)
{
	expect_refused(flush(0x21, 0, kLen, mem_mr_.get()),
		       IBV_EVENT_QP_REQ_ERR);
}

// Global visibility of a range, then of the whole region (whatever the
// RETH says), each answered; where ib_core has no FLUSH access bit (6.1)
// the QP cannot allow it and the request is invalid.
TEST_P(Placement, FlushGlobalIsAnsweredWhereAnnounced)
{
	if (!flush_) {
		expect_refused(flush(kFethGlobalRange, 0, kLen, mem_mr_.get()),
			       IBV_EVENT_QP_REQ_ERR);
		return;
	}
	long sent = hw_counter("sent_pkts");
	ASSERT_NO_FATAL_FAILURE(inject(flush(kFethGlobalRange, 512, 1024,
					     mem_mr_.get())));
	expect_answered(sent);
	roce::Spec s = flush(kFethGlobalRegion, 0, 0, mem_mr_.get());
	s.psn = kPsn + 1;
	s.va = 0x1234;		// ignored for a whole region
	sent = hw_counter("sent_pkts");
	ASSERT_NO_FATAL_FAILURE(inject(s));
	expect_answered(sent);
	expect_expects(kPsn + 2);
	EXPECT_TRUE(all_are(mem_.data(), kLen, kSentinel, "memory"));
}

// sroce cannot make memory persistent: no QP or region grants it.
TEST_P(Placement, FlushPersistentIsRefused)
{
	expect_refused(flush(kFethPersistent, 0, kLen, mem_mr_.get()),
		       IBV_EVENT_QP_REQ_ERR);
}

// The range must lie in a region that allows FLUSH.
TEST_P(Placement, FlushOfARegionWithoutTheAccessIsAnAccessError)
{
	if (!flush_)
		GTEST_SKIP() << "FLUSH_GLOBAL not announced (Linux before 6.2): "
				"FlushGlobalIsAnsweredWhereAnnounced covers it";
	expect_refused(flush(kFethGlobalRange, 0, kLen, mr_.get()),
		       IBV_EVENT_QP_ACCESS_ERR);
}

TEST_P(Placement, FlushPastTheRegionIsAnAccessError)
{
	if (!flush_)
		GTEST_SKIP() << "FLUSH_GLOBAL not announced (Linux before 6.2): "
				"FlushGlobalIsAnsweredWhereAnnounced covers it";
	expect_refused(flush(kFethGlobalRange, 8, kLen, mem_mr_.get()),
		       IBV_EVENT_QP_ACCESS_ERR);
}

INSTANTIATE_TEST_SUITE_P(Live, Placement, ::testing::Values(IBV_QPT_RC),
			 qp_type_name);

} // namespace
} // namespace sroce::test
