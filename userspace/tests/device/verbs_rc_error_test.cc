// RC errors other than remote access (part of verbs_device_tests; the
// fixture and the conventions of the checks are in verbs_rc_fixture.h):
// receive buffers too small, local protection errors of send, receive and
// READ response SGEs, RNR retries and transport retries.
#include <gtest/gtest.h>

#include "verbs_rc_fixture.h"

namespace sroce::test {
namespace {

using namespace rc;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// Other errors.

TEST_F(Rc, ReceiveBufferTooSmall)
{
	// IBA vol. 1 ch. 9: a message longer than the receive WQE is an
	// Invalid Request at the responder: its receive completes with a
	// Local Length Error and it NAKs, so the requester gets a Remote
	// Invalid Request Error; both QPs go to the error state.  The verbs
	// documentation agrees: IBV_WC_LOC_LEN_ERR is what a receive "isn't
	// big enough for holding the incoming message" gets.
	//
	// rxe (6.1 and 6.12) deviates: the responder's receive completes
	// with IBV_WC_LOC_QP_OP_ERR and the requester gets IBV_WC_REM_OP_ERR
	// (a NAK Remote Operational Error): its copy_data() fails with
	// -EINVAL rather than -ENOSPC, so send_data_in() takes the
	// malformed-WQE path instead of the length-error one.
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(pd_.get(), 4096, kMrAll, 5), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	ibv_sge rs = dst.sge(0, 16), rs2 = dst.sge(2048, 16);
	ASSERT_EQ(post_recv(b.qp.get(), 101, &rs, 1), 0);
	ASSERT_EQ(post_recv(b.qp.get(), 102, &rs2, 1), 0);
	ibv_sge ss = src.sge(0, 64);
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, &ss, 1), send_wr(2, &ss, 1)}),
		  0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_REM_INV_REQ_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	EXPECT_TRUE(completes(b.rcq.get(),
			      {err(101, IBV_WC_LOC_LEN_ERR, b.qp.get()),
			       err(102, IBV_WC_WR_FLUSH_ERR, b.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_TRUE(reaches(b.qp.get(), IBV_QPS_ERR));
	EXPECT_EQ(post(a.qp.get(), {send_wr(3, &ss, 1)}), 0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {err(3, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	// The second receive buffer was never written.
	const Buffer untouched = patterned(4096);
	EXPECT_TRUE(same(dst.buf.data() + 2048, untouched.data() + 2048, 2048,
			 "second receive buffer"));
	EXPECT_TRUE(quiet(a.scq.get()));
	EXPECT_TRUE(quiet(b.rcq.get(), 0ms));
}

// What is wrong with a local SGE.
enum class Lkey {
	Bad,		// no MR has it
	PastTheMr,	// a good key, but the SGE runs past the MR
	OtherPd,	// the MR of another PD
	NoLocalWrite,	// an MR without LOCAL_WRITE, written into
};

struct LocalCase {
	const char *name;
	Lkey fault;
};

void PrintTo(const LocalCase &c, std::ostream *os)
{
	*os << c.name;
}

class RcLocalProtection : public Rc,
			  public ::testing::WithParamInterface<LocalCase> {};

TEST_P(RcLocalProtection, SendSgeOutsideItsMr)
{
	// A gather list entry the lkey does not cover: Local Protection Error
	// ("the locally posted Work Request's buffers in the scatter/gather
	// list does not reference a Memory Region that is valid for the
	// requested operation").  rxe 6.1 reports an invalid lkey as
	// IBV_WC_LOC_QP_OP_ERR instead (any copy error but -EFAULT), a range
	// beyond a valid MR as IBV_WC_LOC_PROT_ERR; rxe 6.12 completes the
	// faulty WR itself with IBV_WC_WR_FLUSH_ERR in both cases.
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(pd_.get(), 8192, kMrAll, 6), dst(pd_.get(), 8192, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	Mr half(ibv_reg_mr(pd_.get(), src.buf.data(), 4096,
			   IBV_ACCESS_LOCAL_WRITE));
	ASSERT_TRUE(half) << std::strerror(errno);

	ibv_sge rs = dst.sge(0, 8192);
	ASSERT_EQ(post_recv(b.qp.get(), 101, &rs, 1), 0);
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	Mr foreign(ibv_reg_mr(other.get(), src.buf.data(), 4096,
			      IBV_ACCESS_LOCAL_WRITE));
	ASSERT_TRUE(foreign) << std::strerror(errno);
	ibv_sge ss = {src.buf.addr(), 100, src.mr->lkey ^ 0x80};
	if (GetParam().fault == Lkey::PastTheMr)
		ss = {src.buf.addr(4000), 200, half->lkey};
	else if (GetParam().fault == Lkey::OtherPd)
		ss = {src.buf.addr(), 100, foreign->lkey};
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, &ss, 1), send_wr(2, nullptr, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_LOC_PROT_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_EQ(post(a.qp.get(), {send_wr(3, nullptr, 0)}), 0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {err(3, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	// Nothing reached the responder.
	EXPECT_TRUE(quiet(b.rcq.get()));
	const Buffer untouched = patterned(8192);
	EXPECT_TRUE(same(dst.buf.data(), untouched.data(), 8192,
			 "receive buffer"));
}

INSTANTIATE_TEST_SUITE_P(Sges, RcLocalProtection,
			 ::testing::Values(LocalCase{"BadLkey", Lkey::Bad},
					   LocalCase{"PastTheMr", Lkey::PastTheMr},
					   LocalCase{"OtherPdLkey", Lkey::OtherPd}),
			 [](const ::testing::TestParamInfo<LocalCase> &i) {
				 return std::string(i.param.name);
			 });

class RcLocalWrite : public Rc,
		     public ::testing::WithParamInterface<LocalCase> {
protected:
	// An SGE over dst.buf[0, n) with the fault of the case.
	ibv_sge faulty(const Region &dst, uint32_t n)
	{
		const Lkey f = GetParam().fault;
		ibv_pd *pd = pd_.get();
		int access = IBV_ACCESS_LOCAL_WRITE;

		if (f == Lkey::Bad)
			return {dst.buf.addr(), n, dst.mr->lkey ^ 0x80};
		if (f == Lkey::OtherPd) {
			other_.reset(ibv_alloc_pd(ctx_.get()));
			pd = other_.get();
		}
		if (f == Lkey::NoLocalWrite)
			access = 0;
		mr_.reset(ibv_reg_mr(pd, dst.buf.data(), n, access));
		EXPECT_TRUE(mr_) << std::strerror(errno);
		return {dst.buf.addr(), n, mr_ ? mr_->lkey : 0};
	}

	Pd other_;
	Mr mr_;
};

// A receive WQE whose SGE may not be written: the responder completes it
// with LOC_PROT_ERR and answers with a remote operational error NAK
// (IBTA 9.7.5.2.4); both QPs end in ERR and the buffer is untouched.
TEST_P(RcLocalWrite, ReceiveSgeFails)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(pd_.get(), 4096, kMrAll, 6), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	ibv_sge rs = faulty(dst, 4096);
	ASSERT_FALSE(HasFailure());
	ASSERT_EQ(post_recv(b.qp.get(), 101, &rs, 1), 0);
	ibv_sge ss = src.sge(0, 100);
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, &ss, 1), send_wr(2, &ss, 1)}),
		  0);
	ASSERT_TRUE(completes(b.rcq.get(),
			      {err(101, IBV_WC_LOC_PROT_ERR, b.qp.get())}));
	ASSERT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_REM_OP_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_TRUE(reaches(b.qp.get(), IBV_QPS_ERR));
	const Buffer untouched = patterned(4096);
	EXPECT_TRUE(same(dst.buf.data(), untouched.data(), 4096,
			 "receive buffer"));
}

// A READ whose local SGE may not be written: the response data cannot be
// placed, the READ completes with LOC_PROT_ERR at the requester, whose QP
// goes to ERR; the responder, which did nothing wrong, stays in RTS.
TEST_P(RcLocalWrite, ReadResponseSgeFails)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region far(pd_.get(), 4096, kMrAll, 9), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(far && dst) << std::strerror(errno);
	ibv_sge rs = faulty(dst, 4096);
	ASSERT_FALSE(HasFailure());
	ASSERT_EQ(post(a.qp.get(),
		       {rdma_wr(1, IBV_WR_RDMA_READ, &rs, 1, far.buf.addr(),
				far.mr->rkey),
			send_wr(2, nullptr, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_LOC_PROT_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_EQ(query_state(b.qp.get()), IBV_QPS_RTS);
	const Buffer untouched = patterned(4096);
	EXPECT_TRUE(same(dst.buf.data(), untouched.data(), 4096,
			 "READ destination"));
	EXPECT_TRUE(quiet(b.rcq.get(), 0ms));
}

INSTANTIATE_TEST_SUITE_P(Sges, RcLocalWrite,
			 ::testing::Values(LocalCase{"BadLkey", Lkey::Bad},
					   LocalCase{"OtherPdLkey", Lkey::OtherPd},
					   LocalCase{"NoLocalWrite",
						     Lkey::NoLocalWrite}),
			 [](const ::testing::TestParamInfo<LocalCase> &i) {
				 return std::string(i.param.name);
			 });

// ---------------------------------------------------------------------
// Receiver not ready, retries.

class RcRnr : public Rc, public ::testing::WithParamInterface<int> {};

// rnr_retry n (0 to 6; 7 is "for ever", below) towards a QP with no
// receive posted: the requester resends after each RNR NAK, waiting the
// responder's min_rnr_timer (22: 20.48 ms, IBTA table 45) each time, and
// fails the send once the n retries are spent: after at least n x 20.48 ms
// (the timer honoured) and at most 3 times that plus the posting.
TEST_P(RcRnr, RetriesThenFails)
{
	const int n = GetParam();
	constexpr auto timer = std::chrono::microseconds(20480);
	End a, b;
	Link la, lb;
	la.rnr_retry = uint8_t(n);
	la.min_rnr_timer = lb.min_rnr_timer = 22;
	ASSERT_TRUE(pair(a, b, {}, la, lb));
	const auto t0 = Clock::now();
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, nullptr, 0),
				    send_wr(2, nullptr, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_RNR_RETRY_EXC_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
		Clock::now() - t0);
	const auto least = std::chrono::duration_cast<
		std::chrono::milliseconds>(timer * n);
	const auto most = slow(3 * least + 100ms);
	std::cout << "RNR retries exceeded after " << took.count()
		  << " ms, bounds " << least.count() << " to " << most.count()
		  << " ms\n";
	EXPECT_GE(took, least) << "the RNR timer was not honoured";
	EXPECT_LE(took, most) << "RNR waits far longer than the timer";
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	// Receiver not ready is no error of the responder.
	EXPECT_EQ(query_state(b.qp.get()), IBV_QPS_RTS);
	EXPECT_TRUE(quiet(b.rcq.get(), 0ms));
}

INSTANTIATE_TEST_SUITE_P(Counts, RcRnr, ::testing::Range(0, 7),
			 [](const ::testing::TestParamInfo<int> &i) {
				 return "RnrRetry" + std::to_string(i.param);
			 });

TEST_F(Rc, RnrRetryForeverWaitsForTheReceive)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));	// rnr_retry 7, min_rnr_timer 0.64 ms
	Region src(pd_.get(), 4096, kMrAll, 8), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	ibv_sge ss = src.sge(0, 3000);
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, &ss, 1)}), 0);
	// The send cannot complete while no receive is posted.
	EXPECT_TRUE(quiet(a.scq.get(), slow(50ms)));
	ibv_sge rs = dst.sge(0, 4096);
	ASSERT_EQ(post_recv(b.qp.get(), 101, &rs, 1), 0);
	ASSERT_TRUE(completes(a.scq.get(), {ok(1, IBV_WC_SEND, a.qp.get())}));
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(101, IBV_WC_RECV, b.qp.get(), 3000u)}));
	EXPECT_TRUE(same(dst.buf.data(), src.buf.data(), 3000, "message"));
}

enum class Deaf { AbsentQp, QpInReset };

void PrintTo(Deaf d, std::ostream *os)
{
	*os << (d == Deaf::AbsentQp ? "AbsentQp" : "QpInReset");
}

class RcRetry : public Rc, public ::testing::WithParamInterface<Deaf> {};

TEST_P(RcRetry, ExceedsRetriesWhenNobodyAnswers)
{
	// Requests to a QP number nobody owns, or to a QP in RESET, are
	// silently dropped; with timeout 14 (4.096 us * 2^14 = 67 ms, long
	// against a jiffy) and retry_cnt 1 the requester gives up after two
	// transmissions, each followed by at least one timeout.
	End a, b;
	ASSERT_TRUE(make_end(a, pd_.get()));
	ASSERT_TRUE(make_end(b, pd_.get()));	// stays in RESET
	uint32_t dest = b->qp_num;
	if (GetParam() == Deaf::AbsentQp) {
		End gone;
		ASSERT_TRUE(make_end(gone, pd_.get()));
		dest = gone->qp_num;
	}
	Link l = with_mtu({});
	l.timeout = 14;
	l.retry_cnt = 1;
	ASSERT_TRUE(connect(a.qp.get(), dest, gid_, gid_index_, l));
	const auto t0 = Clock::now();
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, nullptr, 0),
				    send_wr(2, nullptr, 0, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {err(1, IBV_WC_RETRY_EXC_ERR, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
		Clock::now() - t0);
	// The transport timer (IBTA 9.7.6.1.3) is 4.096 us * 2^timeout;
	// retry_cnt + 1 transmissions wait at least that each, and sroce
	// backs off (x2, then x4, as IBTA allows) after each timeout: T
	// then 2T here, 3T within [least = 2T, 3 x least].
	const auto least = std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::nanoseconds(4096LL << l.timeout) *
		(l.retry_cnt + 1));
	std::cout << "retry exceeded after " << took.count() << " ms, bounds "
		  << least.count() << " to " << slow(3 * least).count()
		  << " ms\n";
	EXPECT_GE(took, least) << "gave up before its timeouts";
	EXPECT_LE(took, slow(3 * least)) << "timer not honoured";
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_EQ(query_state(b.qp.get()), IBV_QPS_RESET);
}

INSTANTIATE_TEST_SUITE_P(Peers, RcRetry,
			 ::testing::Values(Deaf::AbsentQp, Deaf::QpInReset),
			 [](const ::testing::TestParamInfo<Deaf> &i) {
				 return std::string(i.param == Deaf::AbsentQp
							    ? "AbsentQp"
							    : "QpInReset");
			 });

} // namespace
} // namespace sroce::test
