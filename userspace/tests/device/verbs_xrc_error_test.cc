// XRC, what the target refuses (part of verbs_device_tests; the fixture and
// the expectations are in verbs_xrc_fixture.h).  A request naming an SRQ
// that does not exist, or an XRC SRQ of another domain, is not a valid
// request for the TGT: NAK invalid request, IBV_WC_REM_INV_REQ_ERR at the
// sender, whatever the operation (a READ too: the SRQ is where its PD comes
// from).  An RDMA WRITE whose R_Key is of an MR in a PD other than the
// named SRQ's is a remote access error (IBV_WC_REM_ACCESS_ERR), although the
// same R_Key is good when the request names an SRQ of that PD.  An empty SRQ
// is "receiver not ready", retried rnr_retry times: with 0,
// IBV_WC_RNR_RETRY_EXC_ERR.  An SRQ number of more than 24 bits never
// leaves the sender (IBV_WC_LOC_QP_OP_ERR), nor does an ATOMIC WRITE: sroce
// does not speak XRC's opcode for it.  Each time the INI goes to the error state and
// flushes the WR behind, no memory of the target changes, nothing completes
// at any SRQ, and the WQEs posted before are all still there: a message on
// a new connection takes each.
#include <gtest/gtest.h>

#include "verbs_xrc_fixture.h"

namespace sroce::test {
namespace {

using namespace xrc;
using namespace std::chrono_literals;

enum class Fault {
	NoSuchSrq,		// a number no SRQ has
	DestroyedSrq,		// the number of an SRQ that is gone
	SrqOfAnotherXrcd,	// an XRC SRQ, of another domain
	ReadNamingNoSrq,	// an RDMA READ naming a destroyed SRQ
	RkeyOfAnotherPd,	// an RDMA WRITE, R_Key of another PD's MR
	EmptySrqRnrRetry0,	// nothing posted, rnr_retry 0
	SrqnBeyond24Bits,	// the fixture's SRQ number with bit 24 set
	AtomicWriteNotSpoken,	// IBV_WR_ATOMIC_WRITE through XRC
};

struct FaultCase {
	const char *name;
	Fault fault;
	ibv_wc_status want;
};

void PrintTo(const FaultCase &c, std::ostream *os)
{
	*os << c.name;
}

class XrcFault : public Xrc, public ::testing::WithParamInterface<FaultCase> {
};

// Above every SRQ number sroce hands out (as pair.sh's NO_QPN for QPs).
constexpr uint32_t kNoSrqn = 0xabcdef;

TEST_P(XrcFault, SenderFailsAndNothingLands)
{
	const FaultCase &c = GetParam();

	// The SRQs a request could wrongly reach: the fixture's (one WQE,
	// but when the case is an empty SRQ) and one of another domain
	// (one WQE), each with a buffer of sentinel.
	Region rx(pd_.get(), 4096, kMrAll), rx_o(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(rx && rx_o) << std::strerror(errno);
	if (c.fault != Fault::EmptySrqRnrRetry0) {
		ASSERT_EQ(post_srq(srq_.get(), 7, rx.sge(0, 4096)), 0);
	}
	Xrcd other;
	ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, other), 0);
	Cq cq_o(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq_o) << std::strerror(errno);
	XrcSrq srq_o;
	ASSERT_EQ(create_srq(ctx_.get(),
			     xrc_srq_attr(other.get(), cq_o.get(), pd_.get(), 4),
			     srq_o),
		  0);
	const uint32_t srqn_o = srq_num(srq_o.get());
	ASSERT_EQ(post_srq(srq_o.get(), 8, rx_o.sge(0, 4096)), 0);
	// Memory of the target: three pages, an MR of pd_ over the middle
	// one and one of another PD over all three; an SRQ of that PD in
	// the same domain.
	Pd pd2(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(pd2) << std::strerror(errno);
	Buffer arena = patterned(3 * 4096);
	Mr mr(ibv_reg_mr(pd_.get(), arena.data() + 4096, 4096, kMrAll));
	Mr mr2(ibv_reg_mr(pd2.get(), arena.data(), 3 * 4096, kMrAll));
	ASSERT_TRUE(mr && mr2) << std::strerror(errno);
	XrcSrq srq_p2;
	ASSERT_EQ(create_srq(ctx_.get(),
			     xrc_srq_attr(xrcd_.get(), rcq_.get(), pd2.get(), 4),
			     srq_p2),
		  0);
	const uint32_t srqn_p2 = srq_num(srq_p2.get());
	std::vector<uint8_t> want = arena.image();
	// A number that named an SRQ of the domain a moment ago (made last:
	// sroce hands out the lowest free number, and no SRQ is made after
	// this one).
	uint32_t gone = 0;
	{
		XrcSrq s;
		ASSERT_EQ(create_srq(ctx_.get(),
				     xrc_srq_attr(xrcd_.get(), rcq_.get(),
						  pd_.get(), 4),
				     s),
			  0);
		gone = srq_num(s.get());
	}

	Link l;
	if (c.fault == Fault::EmptySrqRnrRetry0)
		l.rnr_retry = 0;
	Conn k;
	ASSERT_TRUE(connect(k, l));
	Region local(pd_.get(), 4096, kMrAll, 9);
	ASSERT_TRUE(local) << std::strerror(errno);

	std::vector<XWr> wrs;
	std::vector<Want> wcs;
	const uint64_t mid = arena.addr(4096);
	switch (c.fault) {
	case Fault::NoSuchSrq:
		wrs.push_back(xsend(1, kNoSrqn, {local.sge(0, 64)}));
		break;
	case Fault::DestroyedSrq:
		wrs.push_back(xsend(1, gone, {local.sge(0, 64)}));
		break;
	case Fault::SrqOfAnotherXrcd:
		wrs.push_back(xsend(1, srqn_o, {local.sge(0, 64)}));
		break;
	case Fault::ReadNamingNoSrq:
		wrs.push_back(xrdma(1, IBV_WR_RDMA_READ, gone,
				    {local.sge(0, 64)}, mid, mr->rkey));
		break;
	case Fault::RkeyOfAnotherPd:
		// Naming the SRQ of pd2, the R_Key of pd2's MR is good ...
		wrs.push_back(xrdma(0, IBV_WR_RDMA_WRITE, srqn_p2,
				    {local.sge(0, 64)}, mid, mr2->rkey));
		wcs.push_back(ok(0, IBV_WC_RDMA_WRITE, k.ini.get()));
		std::copy_n(local.buf.data(), 64, want.begin() + 4096);
		// ... naming the SRQ of pd_, it is not.
		wrs.push_back(xrdma(1, IBV_WR_RDMA_WRITE, srqn_,
				    {local.sge(0, 64)}, mid + 1024, mr2->rkey));
		break;
	case Fault::EmptySrqRnrRetry0:
		wrs.push_back(xsend(1, srqn_, {local.sge(0, 64)}));
		break;
	case Fault::SrqnBeyond24Bits:
		// cut to the XRCETH's 24 bits it would reach srq_'s WQE
		wrs.push_back(xsend(1, srqn_ | 1u << 24, {local.sge(0, 64)}));
		break;
	case Fault::AtomicWriteNotSpoken:
		// a good address, key and SRQ; the provider takes the WR (the
		// QP announces ATOMIC WRITE), the kernel fails it
		wrs.push_back(xrdma(1, IBV_WR_ATOMIC_WRITE, srqn_,
				    {local.sge(0, 8)}, mid, mr->rkey));
		break;
	}
	// Behind it, a SEND that would do on its own.
	wrs.push_back(xsend(2, srqn_, {local.sge(64, 64)}));
	wcs.push_back(err(1, c.want, k.ini.get()));
	wcs.push_back(err(2, IBV_WC_WR_FLUSH_ERR, k.ini.get()));
	ASSERT_EQ(post(k.ini.get(), Api::PostSend, wrs), 0);
	EXPECT_TRUE(completes(k.scq.get(), wcs));
	EXPECT_TRUE(reaches(k.ini.get(), IBV_QPS_ERR));
	if (c.fault == Fault::EmptySrqRnrRetry0) {
		// Receiver not ready is no error of the receiver's.
		EXPECT_EQ(query_state(k.tgt.get()), IBV_QPS_RTR);
	}

	EXPECT_TRUE(quiet(rcq_.get())) << "the domain's SRQs' CQ";
	EXPECT_TRUE(quiet(cq_o.get(), 0ms)) << "the other domain's";
	EXPECT_TRUE(same(arena.data(), want.data(), want.size(),
			 "the target's memory"));
	const Buffer sentinel = patterned(4096);
	EXPECT_TRUE(same(rx.buf.data(), sentinel.data(), 4096, "SRQ buffer"));
	EXPECT_TRUE(same(rx_o.buf.data(), sentinel.data(), 4096,
			 "other domain's SRQ buffer"));
	const Buffer local_before = patterned(4096, 9);
	EXPECT_TRUE(same(local.buf.data(), local_before.data(), 4096,
			 "the sender's memory"));

	// The WQEs are where they were: new connections take them.
	if (c.fault == Fault::EmptySrqRnrRetry0) {
		ASSERT_EQ(post_srq(srq_.get(), 7, rx.sge(0, 4096)), 0);
	}
	Conn k2, k3;
	ASSERT_TRUE(connect(k2));
	ASSERT_TRUE(connect(k3, {}, 0, other.get()));
	ASSERT_EQ(post(k2.ini.get(), Api::PostSend,
		       {xsend(3, srqn_, {local.sge(0, 100)})}),
		  0);
	ASSERT_EQ(post(k3.ini.get(), Api::PostSend,
		       {xsend(4, srqn_o, {local.sge(0, 200)})}),
		  0);
	EXPECT_TRUE(completes(k2.scq.get(), {ok(3, IBV_WC_SEND, k2.ini.get())}));
	EXPECT_TRUE(completes(k3.scq.get(), {ok(4, IBV_WC_SEND, k3.ini.get())}));
	EXPECT_TRUE(completes(rcq_.get(),
			      {ok(7, IBV_WC_RECV, k2.tgt.get(), 100u)}));
	EXPECT_TRUE(completes(cq_o.get(),
			      {ok(8, IBV_WC_RECV, k3.tgt.get(), 200u)}));
	EXPECT_TRUE(same(rx.buf.data(), local.buf.data(), 100, "SRQ buffer"));
	EXPECT_TRUE(same(rx_o.buf.data(), local.buf.data(), 200,
			 "other domain's SRQ buffer"));
}

INSTANTIATE_TEST_SUITE_P(
	Faults, XrcFault,
	::testing::Values(
		FaultCase{"NoSuchSrq", Fault::NoSuchSrq, IBV_WC_REM_INV_REQ_ERR},
		FaultCase{"DestroyedSrq", Fault::DestroyedSrq,
			  IBV_WC_REM_INV_REQ_ERR},
		FaultCase{"SrqOfAnotherXrcd", Fault::SrqOfAnotherXrcd,
			  IBV_WC_REM_INV_REQ_ERR},
		FaultCase{"ReadNamingNoSrq", Fault::ReadNamingNoSrq,
			  IBV_WC_REM_INV_REQ_ERR},
		FaultCase{"RkeyOfAnotherPd", Fault::RkeyOfAnotherPd,
			  IBV_WC_REM_ACCESS_ERR},
		FaultCase{"EmptySrqRnrRetry0", Fault::EmptySrqRnrRetry0,
			  IBV_WC_RNR_RETRY_EXC_ERR},
		// sroce's reading: a number the wire cannot carry is the
		// sender's own fault, never sent
		FaultCase{"SrqnBeyond24Bits", Fault::SrqnBeyond24Bits,
			  IBV_WC_LOC_QP_OP_ERR},
		// XRC's ATOMIC WRITE (0xbd) is not spoken (provider.md)
		FaultCase{"AtomicWriteNotSpoken", Fault::AtomicWriteNotSpoken,
			  IBV_WC_LOC_QP_OP_ERR}),
	[](const ::testing::TestParamInfo<FaultCase> &i) {
		return std::string(i.param.name);
	});

} // namespace
} // namespace sroce::test
