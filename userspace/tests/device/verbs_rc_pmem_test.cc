// RC cases of the IBTA 1.5 memory placement extensions (RcPmem, part of
// verbs_device_tests; the fixture is in verbs_rc_fixture.h): ATOMIC WRITE,
// posted through ibv_wr_atomic_write() and through ibv_post_send(), its data
// placed as one 8-byte word, and the requests the responder must refuse
// (no remote write access on the QP or the region, a bad R_Key, a range
// outside the region, a misaligned address), each with the NAK's status at
// the requester, the responder's QP in the error state and its memory
// untouched.  FLUSH cannot be posted through libibverbs 44 (no
// ibv_wr_flush()); the device's capability bits are checked here and the
// responder's answers by sroce_pmem (selftests/pair.sh, interop.sh).
//
// They also run against rdma_rxe, which has ATOMIC WRITE since Linux 6.2:
// on an older rdma_rxe (6.1) they skip, saying the device lacks it.
#include <gtest/gtest.h>

#include "verbs_rc_fixture.h"

namespace sroce::test {
namespace {

using namespace rc;

// Device capability bits of the memory placement extensions
// (ib_user_verbs.h since Linux 6.2, IB_UVERBS_DEVICE_*); libibverbs 44
// hands device_cap_flags_ex through but has no names for them.
constexpr uint64_t kDevFlushGlobal = 1ull << 38;
constexpr uint64_t kDevFlushPersistent = 1ull << 39;
constexpr uint64_t kDevAtomicWrite = 1ull << 40;

constexpr uint64_t kWord1 = 0x0123456789abcdefull;
constexpr uint64_t kWord2 = 0xfedcba9876543210ull;

class RcPmem : public Rc {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Rc::SetUp());
		if (IsSkipped())
			return;
		ibv_device_attr_ex ex{};
		ASSERT_EQ(ibv_query_device_ex(ctx_.get(), nullptr, &ex), 0);
		caps_ = ex.device_cap_flags_ex;
		if (!(caps_ & kDevAtomicWrite)) {
			ASSERT_FALSE(testing_sroce())
				<< "sroce does not announce ATOMIC_WRITE";
			GTEST_SKIP() << not_sroce("ATOMIC WRITE");
		}
	}

	// a (the requester, with the extended send API for ATOMIC WRITE)
	// and b, with b's QP access la gives.
	::testing::AssertionResult pair_aw(End &a, End &b,
					   int b_access = kRemoteAll)
	{
		Caps c;
		c.send_ops = IBV_QP_EX_WITH_ATOMIC_WRITE |
			     IBV_QP_EX_WITH_RDMA_WRITE;
		Link lb;
		lb.access = b_access;
		return pair(a, b, c, {}, lb);
	}

	// One signaled ATOMIC WRITE of v to raddr through ibv_wr_*(); the
	// source word is overwritten right after the call, which must not
	// matter (ibv_wr_atomic_write(3): the data is copied).
	static int atomic_write(End &a, uint64_t id, uint32_t rkey,
				uint64_t raddr, uint64_t v)
	{
		ibv_qp_ex *x = ibv_qp_to_qp_ex(a.qp.get());

		if (!x)
			return EINVAL;
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		uint64_t src = v;
		ibv_wr_atomic_write(x, rkey, raddr, &src);
		src = ~v;
		return ibv_wr_complete(x);
	}

	uint64_t caps_ = 0;
};

// The capability bits say what the device does: ATOMIC WRITE, and on
// sroce FLUSH to global visibility where ib_core knows the access bit
// (Linux 6.2 and later) but never persistence (ordinary RAM; provider.md).
TEST_F(RcPmem, CapabilitiesAreAnnounced)
{
	EXPECT_TRUE(caps_ & kDevAtomicWrite);
	if (!testing_sroce())
		return;
	EXPECT_FALSE(caps_ & kDevFlushPersistent)
		<< "sroce cannot make memory persistent";
	// IBV_ACCESS_FLUSH_GLOBAL (1 << 8) is taken where it is announced,
	// and refused where not (6.1's ib_uverbs does not know it).
	Buffer b(4096);
	Mr mr(ibv_reg_mr(pd_.get(), b.data(), b.size(),
			 IBV_ACCESS_LOCAL_WRITE | (1 << 8)));
	EXPECT_EQ(bool(mr), bool(caps_ & kDevFlushGlobal))
		<< "reg_mr with FLUSH_GLOBAL: " << std::strerror(errno);
	Mr persistent(ibv_reg_mr(pd_.get(), b.data(), b.size(),
				 IBV_ACCESS_LOCAL_WRITE | (1 << 9)));
	EXPECT_FALSE(persistent) << "reg_mr with FLUSH_PERSISTENT";
}

TEST_F(RcPmem, AtomicWritePlacesTheWord)
{
	End a, b;
	ASSERT_TRUE(pair_aw(a, b));
	Region remote(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(remote) << std::strerror(errno);
	std::vector<uint8_t> img = remote.buf.image();

	ASSERT_EQ(atomic_write(a, 1, remote.mr->rkey, remote.buf.addr(8),
			       kWord1), 0);
	ASSERT_EQ(atomic_write(a, 2, remote.mr->rkey, remote.buf.addr(4088),
			       kWord2), 0);
	// the same word again: the later value stays
	ASSERT_EQ(atomic_write(a, 3, remote.mr->rkey, remote.buf.addr(8),
			       kWord2), 0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(1, IBV_WC_ATOMIC_WRITE, a.qp.get()),
			       ok(2, IBV_WC_ATOMIC_WRITE, a.qp.get()),
			       ok(3, IBV_WC_ATOMIC_WRITE, a.qp.get())}));
	std::memcpy(img.data() + 8, &kWord2, 8);
	std::memcpy(img.data() + 4088, &kWord2, 8);
	EXPECT_TRUE(same(remote.buf.data(), img.data(), img.size(),
			 "remote memory"));
	// nothing completes at the responder: no receive is consumed
	EXPECT_TRUE(quiet(b.rcq.get()));
	EXPECT_TRUE(quiet(a.scq.get()));
}

// Old-style posting: IBV_WR_ATOMIC_WRITE with wr.rdma, the 8 bytes in an
// SGE or inline; between RDMA WRITEs, in order.  libibverbs documents
// ATOMIC WRITE for ibv_wr_atomic_write() only; rdma_rxe's provider reads
// such a WR otherwise (6.12: it completed with REM_ACCESS_ERR).
TEST_F(RcPmem, AtomicWriteThroughPostSend)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("ibv_post_send() of IBV_WR_ATOMIC_WRITE "
					  "with wr.rdma (sroce's reading)");
	End a, b;
	Caps c;
	c.inline_data = 16;
	ASSERT_TRUE(make_end(a, pd_.get(), c) && make_end(b, pd_.get(), c));
	ASSERT_TRUE(connect(a.qp.get(), b->qp_num, gid_, gid_index_,
			    with_mtu({})));
	ASSERT_TRUE(connect(b.qp.get(), a->qp_num, gid_, gid_index_,
			    with_mtu({})));
	Region remote(pd_.get(), 4096, kMrAll), local(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);
	std::memcpy(local.buf.data() + 64, &kWord1, 8);
	uint64_t inl = kWord2;
	std::vector<uint8_t> img = remote.buf.image();

	ibv_sge s[3] = {local.sge(64, 8), {uintptr_t(&inl), 8, 0},
			local.sge(128, 100)};
	ibv_send_wr sgl = rdma_wr(1, IBV_WR_ATOMIC_WRITE, &s[0], 1,
				  remote.buf.addr(16), remote.mr->rkey);
	ibv_send_wr in = rdma_wr(2, IBV_WR_ATOMIC_WRITE, &s[1], 1,
				 remote.buf.addr(24), remote.mr->rkey,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	ibv_send_wr wr = rdma_wr(3, IBV_WR_RDMA_WRITE, &s[2], 1,
				 remote.buf.addr(1024), remote.mr->rkey);
	const int r = post(a.qp.get(), {wr, sgl, in});
	ASSERT_EQ(r, 0) << std::strerror(r);
	inl = 0;
	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(3, IBV_WC_RDMA_WRITE, a.qp.get()),
			       ok(1, IBV_WC_ATOMIC_WRITE, a.qp.get()),
			       ok(2, IBV_WC_ATOMIC_WRITE, a.qp.get())}));
	std::memcpy(img.data() + 16, &kWord1, 8);
	std::memcpy(img.data() + 24, &kWord2, 8);
	std::memcpy(img.data() + 1024, local.buf.data() + 128, 100);
	EXPECT_TRUE(same(remote.buf.data(), img.data(), img.size(),
			 "remote memory"));
}

// An ATOMIC WRITE moves exactly 8 bytes: other lengths are refused when
// posted (sroce's provider; the IBA leaves it to the implementation).
TEST_F(RcPmem, AtomicWriteOfAnotherLengthIsRefused)
{
	if (!testing_sroce())
		GTEST_SKIP() << not_sroce("refusing ATOMIC WRITEs of 4 bytes at "
					  "post time");
	End a, b;
	ASSERT_TRUE(pair_aw(a, b));
	Region remote(pd_.get(), 4096, kMrAll), local(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);
	const std::vector<uint8_t> img = remote.buf.image();
	for (uint32_t len : {0u, 4u, 16u}) {
		SCOPED_TRACE(len);
		ibv_sge s = local.sge(0, len);
		EXPECT_EQ(post(a.qp.get(),
			       {rdma_wr(1, IBV_WR_ATOMIC_WRITE, &s, len ? 1 : 0,
					remote.buf.addr(8), remote.mr->rkey)}),
			  EINVAL);
	}
	ibv_qp_ex *x = ibv_qp_to_qp_ex(a.qp.get());
	ASSERT_NE(x, nullptr);
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, remote.mr->rkey, remote.buf.addr(8), &kWord1);
	ibv_wr_set_sge(x, local.mr->lkey, local.buf.addr(), 4);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_TRUE(quiet(a.scq.get()));
	EXPECT_TRUE(same(remote.buf.data(), img.data(), img.size(),
			 "remote memory"));
}

// What the responder refuses, one connection each (the NAK ends both
// QPs): the status the requester sees, and the memory stays as it was.
struct Refusal {
	const char *name;
	int qp_access;		// the responder QP's
	int mr_access;		// the target region's
	int64_t offset;		// of the word in the 4096-byte region
	bool bad_rkey;
	ibv_wc_status status;
};

class RcPmemRefused : public RcPmem,
		      public ::testing::WithParamInterface<Refusal> {};

TEST_P(RcPmemRefused, AtomicWrite)
{
	const Refusal &p = GetParam();
	End a, b;
	ASSERT_TRUE(pair_aw(a, b, p.qp_access));
	Region remote(pd_.get(), 4096, p.mr_access);
	ASSERT_TRUE(remote) << std::strerror(errno);
	const std::vector<uint8_t> img = remote.buf.image();
	const uint32_t rkey = remote.mr->rkey ^ (p.bad_rkey ? 0x80u : 0u);

	ASSERT_EQ(atomic_write(a, 7, rkey, remote.buf.addr(0) + p.offset,
			       kWord1), 0);
	ASSERT_TRUE(completes(a.scq.get(), {err(7, p.status, a.qp.get())}));
	EXPECT_TRUE(reaches(a.qp.get(), IBV_QPS_ERR));
	EXPECT_TRUE(reaches(b.qp.get(), IBV_QPS_ERR));
	EXPECT_TRUE(same(remote.buf.data(), img.data(), img.size(),
			 "remote memory"));
}

constexpr int kReadOnly = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

INSTANTIATE_TEST_SUITE_P(
	Refusals, RcPmemRefused,
	::testing::Values(
		// C9-50: the QP does not allow remote writes
		Refusal{"QpWithoutRemoteWrite", IBV_ACCESS_REMOTE_READ, kMrAll,
			8, false, IBV_WC_REM_INV_REQ_ERR},
		Refusal{"RegionWithoutRemoteWrite", kRemoteAll, kReadOnly, 8,
			false, IBV_WC_REM_ACCESS_ERR},
		Refusal{"BadRkey", kRemoteAll, kMrAll, 8, true,
			IBV_WC_REM_ACCESS_ERR},
		Refusal{"PastTheRegion", kRemoteAll, kMrAll, 4096, false,
			IBV_WC_REM_ACCESS_ERR},
		// IBTA A19.5: an 8-byte aligned address, else invalid
		Refusal{"Misaligned", kRemoteAll, kMrAll, 12, false,
			IBV_WC_REM_INV_REQ_ERR}),
	[](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace sroce::test
