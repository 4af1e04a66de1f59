// Extended verbs: ibv_qp_ex posting and ibv_create_cq_ex polling (ExQp,
// ExCq; part of verbs_device_tests, the fixture is in verbs_ex_fixture.h).
#include <gtest/gtest.h>

#include "verbs_ex_fixture.h"

namespace sroce::test {
namespace {

using namespace ex;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// ibv_qp_ex

using ExQp = Ex;

TEST_F(ExQp, UnsupportedSendOpsAreRefusedAtCreation)
{
	Cq c = cq();
	ASSERT_TRUE(c);
	// (the memory operations are accepted: verbs_mw_test.cc, MwsEx;
	// ATOMIC WRITE too: verbs_rc_pmem_test.cc)
	for (uint64_t op : {uint64_t(IBV_QP_EX_WITH_TSO)}) {
		SCOPED_TRACE(op);
		errno = 0;
		Qp q = qp(c.get(), c.get(), kRcOps | op);
		EXPECT_FALSE(q);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
	// A plain QP has no ibv_qp_ex, an extended one has.
	Qp plain = qp(c.get(), c.get());
	ASSERT_TRUE(plain);
	EXPECT_EQ(ibv_qp_to_qp_ex(plain.get()), nullptr);
	Qp ext = qp(c.get(), c.get(), kRcOps);
	ASSERT_TRUE(ext) << std::strerror(errno);
	EXPECT_NE(ibv_qp_to_qp_ex(ext.get()), nullptr);
}

TEST_F(ExQp, EveryOperationMovesItsDataAndCompletes)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get(), kRcOps), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));
	ibv_qp_ex *x = ibv_qp_to_qp_ex(a.get());
	ASSERT_NE(x, nullptr);

	Region src(pd_.get(), 4096, 1), dst(pd_.get(), 4096, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	const std::vector<uint8_t> src0 = src.buf, dst0 = dst.buf;
	uint64_t *word = reinterpret_cast<uint64_t *>(dst.buf.data() + 2048);
	*word = 100;
	for (uint64_t i = 0; i < 2; i++)
		ASSERT_EQ(post_recv(b.get(), 50 + i,
				    {dst.addr(512 * i), 256, dst.mr->lkey}),
			  0);
	ASSERT_EQ(post_recv(b.get(), 52, {dst.addr(3072), 16, dst.mr->lkey}),
		  0);

	const uint8_t inl1[] = {0xa1, 0xa2, 0xa3}, inl2[] = {0xb1, 0xb2};
	const ibv_data_buf bufs[] = {{const_cast<uint8_t *>(inl1), 3},
				     {const_cast<uint8_t *>(inl2), 2}};
	const ibv_sge two[] = {{src.addr(0), 8, src.mr->lkey},
			       {src.addr(100), 8, src.mr->lkey}};
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_send(x);					// 100 bytes
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(0), 100);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htobe32(0x1234));		// inline, 5 bytes
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 3;
	ibv_wr_rdma_write(x, dst.mr->rkey, dst.addr(1024));	// 16 bytes
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 4;
	ibv_wr_rdma_write_imm(x, dst.mr->rkey, dst.addr(1100),
			      htobe32(0xfeed));	// inline, 4 bytes
	ibv_wr_set_inline_data(x, const_cast<uint8_t *>(inl1), 3);
	x->wr_id = 5;
	ibv_wr_rdma_read(x, dst.mr->rkey, dst.addr(1536));	// 64 bytes
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(2048), 64);
	x->wr_id = 6;
	ibv_wr_atomic_fetch_add(x, dst.mr->rkey, dst.addr(2048), 5);
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(3000), 8);
	x->wr_id = 7;
	ibv_wr_atomic_cmp_swp(x, dst.mr->rkey, dst.addr(2048), 105, 7);
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(3008), 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);

	const std::vector<Wc> s = poll_wcs(scq.get(), 7);
	ASSERT_EQ(s.size(), 7u);
	const ibv_wc_opcode sops[] = {IBV_WC_SEND,	 IBV_WC_SEND,
				      IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
				      IBV_WC_RDMA_READ,	 IBV_WC_FETCH_ADD,
				      IBV_WC_COMP_SWAP};
	for (size_t i = 0; i < 7; i++)
		EXPECT_TRUE(is_ok(s[i], i + 1, sops[i], a.get())) << i;
	EXPECT_EQ(s[4].byte_len, 64u);
	EXPECT_EQ(s[5].byte_len, 8u);

	const std::vector<Wc> r = poll_wcs(rcq.get(), 3);
	ASSERT_EQ(r.size(), 3u);
	EXPECT_TRUE(is_ok(r[0], 50, IBV_WC_RECV, b.get()));
	EXPECT_EQ(r[0].byte_len, 100u);
	EXPECT_TRUE(is_ok(r[1], 51, IBV_WC_RECV, b.get()));
	EXPECT_EQ(r[1].byte_len, 5u);
	EXPECT_EQ(be32toh(r[1].imm), 0x1234u);
	EXPECT_TRUE(r[1].wc_flags & IBV_WC_WITH_IMM);
	EXPECT_TRUE(is_ok(r[2], 52, IBV_WC_RECV_RDMA_WITH_IMM, b.get()));
	EXPECT_EQ(r[2].byte_len, 3u);
	EXPECT_EQ(be32toh(r[2].imm), 0xfeedu);

	EXPECT_EQ(0, std::memcmp(dst.buf.data(), src0.data(), 100));
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 100, dst0.data() + 100, 156));
	const uint8_t five[] = {0xa1, 0xa2, 0xa3, 0xb1, 0xb2};
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 512, five, 5));
	EXPECT_EQ(dst.buf[517], dst0[517]);
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 1024, src0.data(), 8));
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 1032, src0.data() + 100, 8));
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 1100, inl1, 3));
	EXPECT_EQ(0, std::memcmp(src.buf.data() + 2048, dst.buf.data() + 1536,
				 64));
	uint64_t fetched, swapped;
	std::memcpy(&fetched, src.buf.data() + 3000, 8);
	std::memcpy(&swapped, src.buf.data() + 3008, 8);
	EXPECT_EQ(fetched, 100u);
	EXPECT_EQ(swapped, 105u);
	EXPECT_EQ(*word, 7u);
}

TEST_F(ExQp, AbortAndFailedCompletePostNothing)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get(), kRcOps), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));
	ibv_qp_ex *x = ibv_qp_to_qp_ex(a.get());
	ASSERT_NE(x, nullptr);
	Region src(pd_.get(), 256, 1), dst(pd_.get(), 256, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	const std::vector<uint8_t> dst0 = dst.buf;

	// Aborted: two writes.
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	for (uint64_t id : {10, 11}) {
		x->wr_id = id;
		ibv_wr_rdma_write(x, dst.mr->rkey, dst.addr());
		ibv_wr_set_sge(x, src.mr->lkey, src.addr(), 64);
	}
	ibv_wr_abort(x);
	// Failed: a good write, then an atomic of 4 bytes; the whole batch
	// is discarded.
	ibv_wr_start(x);
	x->wr_id = 12;
	ibv_wr_rdma_write(x, dst.mr->rkey, dst.addr());
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(), 64);
	x->wr_id = 13;
	ibv_wr_atomic_fetch_add(x, dst.mr->rkey, dst.addr(), 1);
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(), 4);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	// Failed: a setter without an operation.
	ibv_wr_start(x);
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(), 8);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	// Failed: more inline bytes than the QP takes.
	std::vector<uint8_t> big(4096);
	ibv_wr_start(x);
	x->wr_id = 14;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big.data(), big.size());
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);

	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());
	EXPECT_EQ(dst.buf, dst0);

	// The slots are free again: the next batch is the next work.
	ibv_wr_start(x);
	x->wr_id = 15;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, dst.mr->rkey, dst.addr(128));
	ibv_wr_set_sge(x, src.mr->lkey, src.addr(), 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 15, IBV_WC_RDMA_WRITE, a.get()));
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());
	EXPECT_EQ(0, std::memcmp(dst.buf.data(), dst0.data(), 128));
	EXPECT_EQ(0, std::memcmp(dst.buf.data() + 128, src.buf.data(), 8));
}

TEST_F(ExQp, CompleteIsRefusedBeforeRts)
{
	Cq c = cq();
	ASSERT_TRUE(c);
	Qp a = qp(c.get(), c.get(), kRcOps);
	ASSERT_TRUE(a) << std::strerror(errno);
	ibv_qp_ex *x = ibv_qp_to_qp_ex(a.get());
	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
}

// ---------------------------------------------------------------------
// ibv_cq_ex

using ExCq = Ex;

TEST_F(ExCq, UnsupportedFlagsAreRefused)
{
	// Completion timestamps: CqTimestamp.* (verbs_cq_timestamp_test.cc).
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_CVLAN),
			   uint64_t(IBV_WC_EX_WITH_FLOW_TAG)}) {
		SCOPED_TRACE(f);
		ibv_cq_init_attr_ex a{};
		a.cqe = 16;
		a.wc_flags = kWcFlags | f;
		errno = 0;
		CqEx c(ibv_create_cq_ex(ctx_.get(), &a));
		EXPECT_FALSE(c);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
	ibv_cq_init_attr_ex a{};
	a.cqe = 16;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	CqEx c(ibv_create_cq_ex(ctx_.get(), &a));
	EXPECT_FALSE(c);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

// The receive CQ is extended; half of the completions are read through it,
// the other half through ibv_poll_cq, and both see what was sent.
TEST_F(ExCq, ExtendedPollingReadsWhatPollCqReads)
{
	ibv_cq_init_attr_ex ca{};
	ca.cqe = 64;
	ca.wc_flags = kWcFlags;
	CqEx rcq(ibv_create_cq_ex(ctx_.get(), &ca));
	ASSERT_TRUE(rcq) << std::strerror(errno);
	ibv_cq *rcq_base = ibv_cq_ex_to_cq(rcq.get());
	EXPECT_GE(rcq_base->cqe, 64);
	Cq scq = cq();
	ASSERT_TRUE(scq);
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(), rcq_base);
	ASSERT_TRUE(a && b) << std::strerror(errno);
	ASSERT_TRUE(connect(a.get(), b.get()));

	// Empty: start_poll says so (and no end_poll follows).
	ibv_poll_cq_attr pa{};
	EXPECT_EQ(ibv_start_poll(rcq.get(), &pa), ENOENT);

	Region src(pd_.get(), 1024, 3), dst(pd_.get(), 8192, 4);
	ASSERT_TRUE(src.mr && dst.mr);
	constexpr int kN = 8;
	std::vector<Wc> want;
	for (int i = 0; i < kN; i++) {
		ASSERT_EQ(post_recv(b.get(), 100 + i,
				    {dst.addr(1024 * i), 1024, dst.mr->lkey}),
			  0);
		const bool imm = i % 2;
		const ibv_sge sg{src.addr(), uint32_t(10 * i + 1), src.mr->lkey};
		const __be32 imm_data = htobe32(0xabc00 + i);
		ASSERT_EQ(post_send(a.get(), uint64_t(i),
				    imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				    sg, 0, 0, 0, imm_data),
			  0);
		want.push_back({uint64_t(100 + i), IBV_WC_SUCCESS, IBV_WC_RECV,
				0, sg.length, imm ? imm_data : 0,
				b->qp_num, a->qp_num,
				imm ? unsigned(IBV_WC_WITH_IMM) : 0u, 0, 0, 0});
	}

	// Wait until all are in the CQ, without consuming any.
	std::vector<Wc> got;
	const auto deadline = Clock::now() + kWait;
	int ret;
	while ((ret = ibv_start_poll(rcq.get(), &pa)) == ENOENT &&
	       Clock::now() < deadline)
		std::this_thread::sleep_for(1ms);
	ASSERT_EQ(ret, 0);
	got.push_back(from_cq_ex(rcq.get()));
	while (got.size() < kN / 2 && ibv_next_poll(rcq.get()) == 0)
		got.push_back(from_cq_ex(rcq.get()));
	ibv_end_poll(rcq.get());
	const std::vector<Wc> rest = poll_wcs(rcq_base, kN - got.size());
	got.insert(got.end(), rest.begin(), rest.end());
	ASSERT_EQ(got.size(), size_t(kN));
	for (int i = 0; i < kN; i++) {
		// IBV_WC_GRH on RC says nothing (see verbs_rc_fixture.h).
		got[i].wc_flags &= ~unsigned(IBV_WC_GRH);
		EXPECT_EQ(got[i], want[i])
			<< i << ": " << str(got[i]) << " vs " << str(want[i]);
	}
	// Consumed exactly once.
	EXPECT_EQ(ibv_start_poll(rcq.get(), &pa), ENOENT);
	EXPECT_TRUE(poll_wcs(rcq_base, 1, kQuiet).empty());
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());	// unsignaled
}

} // namespace
} // namespace sroce::test
