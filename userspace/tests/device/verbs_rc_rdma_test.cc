// RDMA and atomics on RC (part of verbs_device_tests; the fixture and the
// conventions of the checks are in verbs_rc_fixture.h): WRITE with
// immediate, zero-length RDMA, many READs outstanding, atomics, and the
// remote access errors of each operation.
#include <gtest/gtest.h>

#include "verbs_rc_fixture.h"

namespace sroce::test {
namespace {

using namespace rc;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// RDMA and atomics.

TEST_F(Rc, WriteWithImmediateConsumesAReceive)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(pd_.get(), 8192, kMrAll, 4), dst(pd_.get(), 8192, kMrAll);
	Region rbuf(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst && rbuf) << std::strerror(errno);

	// The data goes where the WRITE says, never into the receive
	// buffer; the receive completion reports the length written
	// (ibv_poll_cq(3): byte_len is valid for RDMA WRITE with immediate).
	ASSERT_EQ(post_recv(b.qp.get(), 101, nullptr, 0), 0);
	ibv_sge rs = rbuf.sge(0, 4096);
	ASSERT_EQ(post_recv(b.qp.get(), 102, &rs, 1), 0);
	std::vector<uint8_t> want = dst.buf.image();
	std::copy_n(src.buf.data(), 5000, want.begin() + 8);

	ibv_sge s = src.sge(0, 5000);
	ibv_send_wr w1 = rdma_wr(1, IBV_WR_RDMA_WRITE_WITH_IMM, &s, 1,
				 dst.buf.addr(8), dst.mr->rkey);
	w1.imm_data = htobe32(0x11223344);
	// Zero bytes with immediate data: addr and rkey need not be valid.
	ibv_send_wr w2 = rdma_wr(2, IBV_WR_RDMA_WRITE_WITH_IMM, nullptr, 0,
				 0, 0);
	w2.imm_data = htobe32(0x55667788);
	ASSERT_EQ(post(a.qp.get(), {w1, w2}), 0);

	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(1, IBV_WC_RDMA_WRITE, a.qp.get(), {},
				  IBV_WC_WITH_IMM),
			       ok(2, IBV_WC_RDMA_WRITE, a.qp.get(), {},
				  IBV_WC_WITH_IMM)}));
	ASSERT_TRUE(completes(
		b.rcq.get(),
		{ok(101, IBV_WC_RECV_RDMA_WITH_IMM, b.qp.get(), 5000u,
		    IBV_WC_WITH_IMM, 0x11223344u),
		 ok(102, IBV_WC_RECV_RDMA_WITH_IMM, b.qp.get(), 0u,
		    IBV_WC_WITH_IMM, 0x55667788u)}));
	EXPECT_TRUE(same(dst.buf.data(), want.data(), 8192, "WRITE target"));
	const Buffer untouched = patterned(4096);
	EXPECT_TRUE(same(rbuf.buf.data(), untouched.data(), 4096,
			 "receive buffer"));
}

TEST_F(Rc, ZeroLengthRdmaNeedsNoValidRkey)
{
	// IBA C9-88: a zero-length RDMA READ or WRITE does not check the
	// R_Key or the virtual address.
	End a, b;
	ASSERT_TRUE(pair(a, b));
	ASSERT_EQ(post(a.qp.get(),
		       {rdma_wr(1, IBV_WR_RDMA_WRITE, nullptr, 0, 0x1234, 0xbad),
			rdma_wr(2, IBV_WR_RDMA_READ, nullptr, 0, 0x1234, 0xbad)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(1, IBV_WC_RDMA_WRITE, a.qp.get()),
			       ok(2, IBV_WC_RDMA_READ, a.qp.get(), 0u)}));
	EXPECT_EQ(query_state(a.qp.get()), IBV_QPS_RTS);
}

TEST_F(Rc, ManyReadsOutstanding)
{
	// max_rd_atomic 4 / max_dest_rd_atomic 4, 12 READs posted at once:
	// the requester must hold back the fifth until the first answer.
	// They are interleaved with WRITEs to the locations the READs fetch
	// afterwards; a READ after a WRITE on the same QP sees its data.
	End a, b;
	ASSERT_TRUE(pair(a, b));
	constexpr uint32_t kLens[] = {1, 4097, 65536, 3, 1024, 1025, 8,
				      100000, 2, 4096, 33, 70000};
	Region remote(pd_.get(), 1u << 20, kMrAll, 10);
	Region local(pd_.get(), 1u << 20, kMrAll);
	Region wsrc(pd_.get(), 4096, kMrAll, 11);
	ASSERT_TRUE(remote && local && wsrc) << std::strerror(errno);

	std::vector<ibv_send_wr> wrs;
	std::vector<ibv_sge> sges(std::size(kLens) + 3);
	std::vector<Want> want_wc;
	std::vector<uint8_t> rimg = remote.buf.image();
	std::vector<uint8_t> limg = local.buf.image();
	size_t roff = 0, loff = 0;
	uint64_t id = 1;
	for (size_t i = 0; i < std::size(kLens); i++) {
		const uint32_t n = kLens[i];
		if (i % 4 == 1) {
			// A WRITE of 16 bytes into what this READ fetches.
			sges[std::size(kLens) + i / 4] = wsrc.sge(i, 16);
			wrs.push_back(rdma_wr(id, IBV_WR_RDMA_WRITE,
					      &sges[std::size(kLens) + i / 4],
					      1, remote.buf.addr(roff),
					      remote.mr->rkey));
			std::copy_n(wsrc.buf.data() + i, 16,
				    rimg.begin() + long(roff));
			want_wc.push_back(
				ok(id++, IBV_WC_RDMA_WRITE, a.qp.get()));
		}
		sges[i] = local.sge(loff, n);
		wrs.push_back(rdma_wr(id, IBV_WR_RDMA_READ, &sges[i], 1,
				      remote.buf.addr(roff), remote.mr->rkey));
		std::copy_n(rimg.begin() + long(roff), n,
			    limg.begin() + long(loff));
		want_wc.push_back(ok(id++, IBV_WC_RDMA_READ, a.qp.get(), n));
		roff += n + 13;
		loff += n + 7;
	}
	ASSERT_LE(roff, remote.buf.size());
	ASSERT_LE(wrs.size(), size_t(a.cap.max_send_wr));
	ASSERT_EQ(post(a.qp.get(), wrs), 0);
	ASSERT_TRUE(completes(a.scq.get(), want_wc));
	EXPECT_TRUE(same(local.buf.data(), limg.data(), limg.size(),
			 "local memory"));
	EXPECT_TRUE(same(remote.buf.data(), rimg.data(), rimg.size(),
			 "remote memory"));
}

TEST_F(Rc, AtomicsReturnTheOriginalValue)
{
	if (dev_.atomic_cap == IBV_ATOMIC_NONE) {
		ASSERT_FALSE(testing_sroce()) << "sroce has atomic_cap NONE";
		GTEST_SKIP() << not_sroce("atomics (atomic_cap NONE)");
	}
	End a, b;
	ASSERT_TRUE(pair(a, b));
	// Remote words at 8-byte aligned addresses, in the responder's byte
	// order (host order: both ends are this host).
	Region remote(pd_.get(), 4096, kMrAll), local(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);
	uint64_t *rw = reinterpret_cast<uint64_t *>(remote.buf.data());
	uint64_t *lw = reinterpret_cast<uint64_t *>(local.buf.data());
	rw[1] = 0x1111222233334444ull;
	rw[2] = 0x5555666677778888ull;
	rw[3] = 0xfffffffffffffffeull;
	const std::vector<uint8_t> rbefore = remote.buf.image();

	ibv_sge s[4] = {local.sge(8, 8), local.sge(16, 8), local.sge(24, 8),
			local.sge(32, 8)};
	ASSERT_EQ(post(a.qp.get(),
		       {// Compare hits: swapped.
			atomic_wr(1, IBV_WR_ATOMIC_CMP_AND_SWP, &s[0],
				  remote.buf.addr(8), remote.mr->rkey,
				  0x1111222233334444ull, 0xaaaabbbbccccddddull),
			// Compare misses: unchanged.
			atomic_wr(2, IBV_WR_ATOMIC_CMP_AND_SWP, &s[1],
				  remote.buf.addr(16), remote.mr->rkey,
				  0x5555666677778889ull, 0x1ull),
			// Add wraps around.
			atomic_wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD, &s[2],
				  remote.buf.addr(24), remote.mr->rkey, 3, 0),
			// The swapped word is seen by the next atomic.
			atomic_wr(4, IBV_WR_ATOMIC_FETCH_AND_ADD, &s[3],
				  remote.buf.addr(8), remote.mr->rkey,
				  0x0101010101010101ull, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(1, IBV_WC_COMP_SWAP, a.qp.get(), 8u),
			       ok(2, IBV_WC_COMP_SWAP, a.qp.get(), 8u),
			       ok(3, IBV_WC_FETCH_ADD, a.qp.get(), 8u),
			       ok(4, IBV_WC_FETCH_ADD, a.qp.get(), 8u)}));
	EXPECT_EQ(lw[1], 0x1111222233334444ull) << "CAS hit: original";
	EXPECT_EQ(lw[2], 0x5555666677778888ull) << "CAS miss: original";
	EXPECT_EQ(lw[3], 0xfffffffffffffffeull) << "FAA: original";
	EXPECT_EQ(lw[4], 0xaaaabbbbccccddddull) << "FAA after CAS: original";
	EXPECT_EQ(rw[1], 0xaaaabbbbccccddddull + 0x0101010101010101ull);
	EXPECT_EQ(rw[2], 0x5555666677778888ull) << "CAS miss changed memory";
	EXPECT_EQ(rw[3], 1ull) << "FAA does not wrap";
	// Nothing else in either buffer changed.
	EXPECT_TRUE(same(remote.buf.data() + 32, rbefore.data() + 32,
			 4096 - 32, "rest of remote memory"));
	EXPECT_TRUE(same(remote.buf.data(), rbefore.data(), 8,
			 "remote word 0"));
	const Buffer lbefore = patterned(4096);
	EXPECT_TRUE(same(local.buf.data() + 40, lbefore.data() + 40, 4096 - 40,
			 "rest of local memory"));
	EXPECT_TRUE(quiet(b.rcq.get(), 0ms));
}

// ---------------------------------------------------------------------
// Remote access errors: the responder refuses, its memory stays as it was,
// the requester's WR completes in error, its QP goes to the error state and
// everything behind the WR, or posted later, is flushed.
//
// An R_Key that is invalid, deregistered, of another PD, or whose MR lacks
// the access right or does not cover the range, is a Remote Access Error.
// A QP whose qp_access_flags lack the operation is different: the request
// is not valid for that QP, a NAK Invalid Request, so the requester sees
// IBV_WC_REM_INV_REQ_ERR.  That is how the verbs documentation describes
// the two statuses (REM_INV_REQ_ERR: "the operation is not supported by
// this receive queue (qp_access_flags in remote QP wasn't configured to
// support this operation)"; REM_ACCESS_ERR: "a protection error occurred
// on a remote data buffer"), and what mlx5 and rxe do.

enum class Op { Write, Read, CmpSwap, FetchAdd };

enum class Fault {
	BadRkey,
	BeyondEnd,
	BeforeStart,
	MrNoRemoteWrite,
	MrNoRemoteRead,
	MrNoRemoteAtomic,
	QpNoRemoteWrite,
	QpNoRemoteRead,
	QpNoRemoteAtomic,
	DeregisteredMr,
	OtherPdMr,
};

struct AccessCase {
	const char *name;
	Op op;
	Fault fault;
	ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
};

void PrintTo(const AccessCase &c, std::ostream *os)
{
	*os << c.name;
}

class RcRemoteAccess : public Rc,
		       public ::testing::WithParamInterface<AccessCase> {};

TEST_P(RcRemoteAccess, FailsAndLeavesMemoryAlone)
{
	const AccessCase &c = GetParam();
	if ((c.op == Op::CmpSwap || c.op == Op::FetchAdd) &&
	    dev_.atomic_cap == IBV_ATOMIC_NONE) {
		ASSERT_FALSE(testing_sroce()) << "sroce has atomic_cap NONE";
		GTEST_SKIP() << not_sroce("atomics (atomic_cap NONE)");
	}

	Link lb;
	if (c.fault == Fault::QpNoRemoteWrite)
		lb.access = kRemoteAll & ~IBV_ACCESS_REMOTE_WRITE;
	if (c.fault == Fault::QpNoRemoteRead)
		lb.access = kRemoteAll & ~IBV_ACCESS_REMOTE_READ;
	if (c.fault == Fault::QpNoRemoteAtomic)
		lb.access = kRemoteAll & ~IBV_ACCESS_REMOTE_ATOMIC;
	End a, b;
	ASSERT_TRUE(pair(a, b, {}, {}, lb));

	// The arena: three pages of sentinel; the MR covers the middle one.
	int access = kMrAll;
	if (c.fault == Fault::MrNoRemoteWrite)
		access &= ~IBV_ACCESS_REMOTE_WRITE;
	if (c.fault == Fault::MrNoRemoteRead)
		access &= ~IBV_ACCESS_REMOTE_READ;
	if (c.fault == Fault::MrNoRemoteAtomic)
		access &= ~IBV_ACCESS_REMOTE_ATOMIC;
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	Buffer arena = patterned(3 * 4096);
	const std::vector<uint8_t> before = arena.image();
	Mr mr(ibv_reg_mr(c.fault == Fault::OtherPdMr ? other.get() : pd_.get(),
			 arena.data() + 4096, 4096, access));
	ASSERT_TRUE(mr) << std::strerror(errno);
	uint32_t rkey = mr->rkey;
	if (c.fault == Fault::BadRkey)
		rkey ^= 0x80;	// another key, same index bits on most NICs
	if (c.fault == Fault::DeregisteredMr) {
		ASSERT_EQ(ibv_dereg_mr(mr.release()), 0);
	}

	const bool atomic = c.op == Op::CmpSwap || c.op == Op::FetchAdd;
	const uint32_t len = atomic ? 8 : 64;
	uint64_t raddr = arena.addr(4096 + 1024);
	if (c.fault == Fault::BeyondEnd)	// the last 8 in, 8 beyond
		raddr = arena.addr(2 * 4096 - (atomic ? 0 : 8));
	if (c.fault == Fault::BeforeStart)
		raddr = arena.addr(4096 - 8);

	Region local(pd_.get(), 4096, kMrAll, 21);
	Region good(pd_.get(), 4096, kMrAll, 22);	// b's, readable
	ASSERT_TRUE(local && good) << std::strerror(errno);
	ibv_sge s = local.sge(0, len), s2 = local.sge(2048, 16);
	ibv_send_wr bad{};
	switch (c.op) {
	case Op::Write:
		bad = rdma_wr(1, IBV_WR_RDMA_WRITE, &s, 1, raddr, rkey);
		break;
	case Op::Read:
		bad = rdma_wr(1, IBV_WR_RDMA_READ, &s, 1, raddr, rkey);
		break;
	case Op::CmpSwap:
		bad = atomic_wr(1, IBV_WR_ATOMIC_CMP_AND_SWP, &s, raddr, rkey,
				pat(kSentinelSeed, 0), 0x42);
		break;
	case Op::FetchAdd:
		bad = atomic_wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, raddr, rkey,
				1, 0);
		break;
	}
	// Behind it, a READ that would succeed on its own.
	ASSERT_EQ(post(a.qp.get(), {bad, rdma_wr(2, IBV_WR_RDMA_READ, &s2, 1,
						 good.buf.addr(),
						 good.mr->rkey)}),
		  0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {err(1, c.want, a.qp.get()),
			       err(2, IBV_WC_WR_FLUSH_ERR, a.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));

	// Posted after the error: flushed.  (Receives posted in the error
	// state: Rc.PostingInTheErrorStateFlushes.)
	ibv_sge s3 = local.sge(0, 8);
	EXPECT_EQ(post(a.qp.get(), {send_wr(3, &s3, 1)}), 0);
	EXPECT_TRUE(completes(a.scq.get(),
			      {err(3, IBV_WC_WR_FLUSH_ERR, a.qp.get())},
			      kFlushWait));
	EXPECT_TRUE(quiet(a.scq.get()));

	EXPECT_TRUE(same(arena.data(), before.data(), before.size(),
			 "responder memory"));
	const Buffer gbefore = patterned(4096, 22);
	EXPECT_TRUE(same(good.buf.data(), gbefore.data(), 4096,
			 "responder's other MR"));
	// The responder completes nothing (no receive was consumed).
	EXPECT_TRUE(quiet(b.rcq.get(), 0ms));
}

INSTANTIATE_TEST_SUITE_P(
	Faults, RcRemoteAccess,
	::testing::Values(
		AccessCase{"BadRkeyWrite", Op::Write, Fault::BadRkey},
		AccessCase{"BadRkeyRead", Op::Read, Fault::BadRkey},
		AccessCase{"BadRkeyAtomic", Op::FetchAdd, Fault::BadRkey},
		AccessCase{"WriteBeyondEnd", Op::Write, Fault::BeyondEnd},
		AccessCase{"WriteBeforeStart", Op::Write, Fault::BeforeStart},
		AccessCase{"ReadBeyondEnd", Op::Read, Fault::BeyondEnd},
		AccessCase{"ReadBeforeStart", Op::Read, Fault::BeforeStart},
		AccessCase{"AtomicBeyondEnd", Op::CmpSwap, Fault::BeyondEnd},
		AccessCase{"MrWithoutRemoteWrite", Op::Write,
			   Fault::MrNoRemoteWrite},
		AccessCase{"MrWithoutRemoteRead", Op::Read,
			   Fault::MrNoRemoteRead},
		AccessCase{"MrWithoutRemoteAtomic", Op::CmpSwap,
			   Fault::MrNoRemoteAtomic},
		AccessCase{"QpWithoutRemoteWrite", Op::Write,
			   Fault::QpNoRemoteWrite,
			   IBV_WC_REM_INV_REQ_ERR},
		AccessCase{"QpWithoutRemoteRead", Op::Read,
			   Fault::QpNoRemoteRead,
			   IBV_WC_REM_INV_REQ_ERR},
		AccessCase{"QpWithoutRemoteAtomic", Op::FetchAdd,
			   Fault::QpNoRemoteAtomic,
			   IBV_WC_REM_INV_REQ_ERR},
		AccessCase{"DeregisteredMrWrite", Op::Write,
			   Fault::DeregisteredMr},
		AccessCase{"DeregisteredMrRead", Op::Read,
			   Fault::DeregisteredMr},
		AccessCase{"OtherPdMrWrite", Op::Write, Fault::OtherPdMr},
		AccessCase{"OtherPdMrRead", Op::Read, Fault::OtherPdMr}),
	[](const ::testing::TestParamInfo<AccessCase> &i) {
		return std::string(i.param.name);
	});

} // namespace
} // namespace sroce::test
