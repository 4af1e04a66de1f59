// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// The extended send API (ibv_qp_ex) of the provider on the fake uverbs
// kernel (provider_uverbs_fake.h), on the same slots as ibv_post_send().
#include <gtest/gtest.h>

#include "provider_uverbs_fixture.h"

namespace {

using namespace sroce_provider_test;

constexpr uint64_t kQpExRcOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
// The memory operations, which UD QPs do not have and UC only partly.
constexpr uint64_t kQpExMemOps = IBV_QP_EX_WITH_LOCAL_INV |
				 IBV_QP_EX_WITH_BIND_MW |
				 IBV_QP_EX_WITH_SEND_WITH_INV;

class ProviderQpEx : public ProviderQp {
protected:
	ibv_qp_ex *create_qp_ex(uint64_t ops = kQpExRcOps,
				ibv_qp_type type = IBV_QPT_RC)
	{
		ibv_qp_init_attr_ex attr{};

		attr.send_cq = cq_.get();
		attr.recv_cq = cq_.get();
		attr.qp_type = type;
		attr.cap.max_send_wr = kernel_.sq_slots;
		attr.cap.max_recv_wr = kernel_.rq_slots;
		attr.cap.max_send_sge = kSendSge;
		attr.cap.max_recv_sge = kRecvSge;
		attr.cap.max_inline_data = kInline;
		attr.comp_mask = IBV_QP_INIT_ATTR_PD |
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		attr.pd = pd_.get();
		attr.send_ops_flags = ops;
		qp_.reset(ibv_create_qp_ex(ctx_.get(), &attr));
		return qp_ ? ibv_qp_to_qp_ex(qp_.get()) : nullptr;
	}

	// An extended QP in RTS; running: no doorbells wanted.
	ibv_qp_ex *ready_ex(bool running = true, uint64_t ops = kQpExRcOps)
	{
		ibv_qp_ex *x = create_qp_ex(ops);
		if (!x || to_state(IBV_QPS_RTS))
			return nullptr;
		if (running)
			kernel_.sq.hdr()->flags = 0;
		return x;
	}

	// The bytes of a slot the kernel reads: the header and its SGEs or
	// inline data (the rest may be left over from an earlier WR).
	std::vector<unsigned char> slot_bytes(uint32_t idx) const
	{
		const unsigned char *p = kernel_.sq.slot(idx);
		const sroce_send_wqe w = send_slot(idx);
		const size_t body = w.inline_len ? w.inline_len :
				    w.num_sge * sizeof(sroce_sge);
		return { p, p + sizeof(w) + body };
	}
};

TEST_F(ProviderQpEx, UnsupportedOperationsAreRefusedBeforeTheKernel)
{
	const struct {
		ibv_qp_type type;
		uint64_t op;
	} refused[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
	};
	for (const auto &r : refused) {
		SCOPED_TRACE(r.op);
		SCOPED_TRACE(r.type);
		errno = 0;
		EXPECT_EQ(create_qp_ex(IBV_QP_EX_WITH_SEND | r.op, r.type),
			  nullptr);
		EXPECT_EQ(errno, EOPNOTSUPP);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_CREATE_QP), 0u);
	ibv_qp_ex *x = create_qp_ex(kQpExRcOps | kQpExMemOps);
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_CREATE_QP), 1u);
	EXPECT_NE(x->wr_bind_mw, nullptr);
	EXPECT_NE(x->wr_local_inv, nullptr);
	EXPECT_NE(x->wr_send_inv, nullptr);
}

// LOCAL_INV, SEND_WITH_INV and a type 2 bind through ibv_wr_*() leave the
// bytes ibv_post_send() leaves; a type 1 window or a bind without an MR
// fails the batch.
TEST_F(ProviderQpEx, MemoryOperationsAreThoseOfPostSend)
{
	ibv_qp_ex *x = ready_ex(true, kQpExRcOps | kQpExMemOps);
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	ibv_sge sg{ 0x1000, 100, 0x11 };
	FakeBind f;
	ibv_mw &mw2 = f.mw2, &mw1 = f.mw1;
	const ibv_mw_bind_info &info = f.info;
	const uint32_t flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;

	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_LOCAL_INV, nullptr, 0, 200),
		send_wr(IBV_WR_SEND_WITH_INV, &sg, 1, 201),
		send_wr(IBV_WR_BIND_MW, nullptr, 0, 202),
	};
	chain(wrs);
	for (auto &wr : wrs)
		wr.send_flags = flags;
	wrs[0].invalidate_rkey = 0x01020304;
	wrs[1].invalidate_rkey = 0x05060708;
	wrs[2].bind_mw.mw = &mw2;
	wrs[2].bind_mw.rkey = ibv_inc_rkey(mw2.rkey);
	wrs[2].bind_mw.bind_info = info;
	ASSERT_EQ(post(wrs.data()), 0);
	ASSERT_EQ(sq_producer(), 3u);
	std::vector<std::vector<unsigned char>> want;
	for (uint32_t i = 0; i < 3; i++)
		want.push_back(slot_bytes(i));
	kernel_.sq.hdr()->consumer = 3;

	ibv_wr_start(x);
	x->wr_flags = flags;
	x->wr_id = 200;
	ibv_wr_local_inv(x, 0x01020304);
	x->wr_id = 201;
	ibv_wr_send_inv(x, 0x05060708);
	ibv_wr_set_sge(x, sg.lkey, sg.addr, sg.length);
	x->wr_id = 202;
	ibv_wr_bind_mw(x, &mw2, ibv_inc_rkey(mw2.rkey), &info);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_producer(), 6u);
	for (uint32_t i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		EXPECT_EQ(slot_bytes(3 + i), want[i]);
	}
	EXPECT_EQ(mw2.rkey, 0x11223344u) << "the application keeps the key";

	ibv_wr_start(x);
	ibv_wr_local_inv(x, 1);
	ibv_wr_bind_mw(x, &mw1, ibv_inc_rkey(mw1.rkey), &info);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_mw_bind_info no_mr = info;
	no_mr.mr = nullptr;
	no_mr.length = 0;
	ibv_wr_start(x);
	ibv_wr_bind_mw(x, &mw2, ibv_inc_rkey(mw2.rkey), &no_mr);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	// a memory operation carries no data
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 1);
	ibv_wr_set_sge(x, sg.lkey, sg.addr, sg.length);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(sq_producer(), 6u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

// Every operation written through ibv_wr_*() leaves exactly the bytes
// ibv_post_send() leaves for the same work request.
TEST_F(ProviderQpEx, SlotsAreThoseOfPostSend)
{
	ibv_qp_ex *x = ready_ex();
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	std::memset(buf_a, 0x3c, sizeof(buf_a));
	ibv_sge two[2] = { { 0x1000, 100, 0x11 }, { 0x2000, 200, 0x22 } };
	ibv_sge inl[2] = { { addr_of(buf_a), 10, 0 },
			   { addr_of(buf_a) + 20, 30, 0 } };
	ibv_sge eight{ 0x3000, 8, 0x33 };
	const uint32_t flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	const __be32 imm = htobe32(0x01020304);

	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_SEND, two, 2, 100),
		send_wr(IBV_WR_SEND_WITH_IMM, inl, 2, 101),
		send_wr(IBV_WR_RDMA_WRITE, two, 2, 102),
		send_wr(IBV_WR_RDMA_WRITE_WITH_IMM, inl, 2, 103),
		send_wr(IBV_WR_RDMA_READ, two, 1, 104),
		send_wr(IBV_WR_ATOMIC_CMP_AND_SWP, &eight, 1, 105),
		send_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &eight, 1, 106),
	};
	chain(wrs);
	for (auto &wr : wrs) {
		wr.send_flags = flags;
		wr.imm_data = imm;
		wr.wr.rdma.remote_addr = 0xaaaa0000;
		wr.wr.rdma.rkey = 0xbbbb;
	}
	wrs[1].send_flags |= IBV_SEND_INLINE;
	wrs[3].send_flags |= IBV_SEND_INLINE;
	for (int i : { 5, 6 }) {
		wrs[i].wr.atomic.remote_addr = 0xcccc0008;
		wrs[i].wr.atomic.rkey = 0xdddd;
		wrs[i].wr.atomic.compare_add = 0x1111222233334444;
		wrs[i].wr.atomic.swap = 0x5555666677778888;
	}
	ASSERT_EQ(post(wrs.data()), 0);
	ASSERT_EQ(sq_producer(), 7u);
	std::vector<std::vector<unsigned char>> want;
	for (uint32_t i = 0; i < 7; i++)
		want.push_back(slot_bytes(i));
	kernel_.sq.hdr()->consumer = 7;	// the kernel took them

	const ibv_data_buf bufs[2] = { { buf_a, 10 }, { buf_a + 20, 30 } };
	ibv_wr_start(x);
	x->wr_flags = flags;
	x->wr_id = 100;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 101;
	ibv_wr_send_imm(x, imm);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 102;
	ibv_wr_rdma_write(x, 0xbbbb, 0xaaaa0000);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 103;
	ibv_wr_rdma_write_imm(x, 0xbbbb, 0xaaaa0000, imm);
	ibv_wr_set_inline_data_list(x, 2, bufs);
	x->wr_id = 104;
	ibv_wr_rdma_read(x, 0xbbbb, 0xaaaa0000);
	ibv_wr_set_sge(x, two[0].lkey, two[0].addr, two[0].length);
	x->wr_id = 105;
	ibv_wr_atomic_cmp_swp(x, 0xdddd, 0xcccc0008, 0x1111222233334444,
			      0x5555666677778888);
	ibv_wr_set_sge(x, eight.lkey, eight.addr, eight.length);
	x->wr_id = 106;
	// fetch-and-add carries only the addend: post_send's swap is not sent
	ibv_wr_atomic_fetch_add(x, 0xdddd, 0xcccc0008, 0x1111222233334444);
	ibv_wr_set_sge(x, eight.lkey, eight.addr, eight.length);
	EXPECT_EQ(sq_producer(), 7u) << "published before wr_complete";
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_producer(), 14u);

	for (uint32_t i = 0; i < 7; i++) {
		SCOPED_TRACE(i);
		std::vector<unsigned char> got = slot_bytes(7 + i);
		if (i == 6) {	// see above: swap differs by design
			const size_t off = offsetof(sroce_send_wqe, wr.atomic.swap);
			std::memset(&want[i][off], 0, 8);
		}
		EXPECT_EQ(got, want[i]);
	}
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);
}

// ATOMIC WRITE (RC): wr_atomic_write copies its 8 bytes into the slot as
// inline data, as ibv_post_send() does for an inline IBV_WR_ATOMIC_WRITE;
// anything but 8 bytes of data is refused by both.
TEST_F(ProviderQpEx, AtomicWriteSlotsAreThoseOfPostSend)
{
	ibv_qp_ex *x = ready_ex(true, kQpExRcOps | IBV_QP_EX_WITH_ATOMIC_WRITE);
	ASSERT_NE(x, nullptr) << std::strerror(errno);
	uint64_t word = 0x0102030405060708;
	ibv_sge inl{ addr_of(&word), 8, 0 }, sge{ 0x3000, 8, 0x33 },
		four{ 0x3000, 4, 0x33 };

	std::vector<ibv_send_wr> wrs = {
		send_wr(IBV_WR_ATOMIC_WRITE, &inl, 1, 200),
		send_wr(IBV_WR_ATOMIC_WRITE, &sge, 1, 201),
	};
	chain(wrs);
	for (auto &wr : wrs) {
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = 0xaaaa0008;
		wr.wr.rdma.rkey = 0xbbbb;
	}
	wrs[0].send_flags |= IBV_SEND_INLINE;
	ASSERT_EQ(post(wrs.data()), 0);
	ASSERT_EQ(sq_producer(), 2u);
	const sroce_send_wqe w = send_slot(0);
	EXPECT_EQ(w.opcode, uint32_t(IBV_WR_ATOMIC_WRITE));
	EXPECT_EQ(w.inline_len, 8u);
	EXPECT_EQ(w.wr.rdma.remote_addr, 0xaaaa0008u);
	EXPECT_EQ(w.wr.rdma.rkey, 0xbbbbu);
	EXPECT_EQ(send_slot(1).num_sge, 1u);
	const std::vector<unsigned char> want = slot_bytes(0);
	kernel_.sq.hdr()->consumer = 2;

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 200;
	ibv_wr_atomic_write(x, 0xbbbb, 0xaaaa0008, &word);
	word = 0;	// copied during the call
	ASSERT_EQ(ibv_wr_complete(x), 0);
	ASSERT_EQ(sq_producer(), 3u);
	EXPECT_EQ(slot_bytes(2), want);

	// 4 bytes: refused by both, nothing posted
	wrs[1].sg_list = &four;
	wrs[1].next = nullptr;
	ibv_send_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_send(qp_.get(), &wrs[1], &bad), EINVAL);
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 0xbbbb, 0xaaaa0008, &word);
	ibv_wr_set_sge(x, four.lkey, four.addr, four.length);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(sq_producer(), 3u);
	// a UC QP has no ATOMIC WRITE
	errno = 0;
	EXPECT_EQ(create_qp_ex(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE,
			       IBV_QPT_UC), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(ProviderQpEx, AbortAndFailedBatchesPostNothing)
{
	ibv_qp_ex *x = ready_ex(false);	// NEED_WAKEUP set
	ASSERT_NE(x, nullptr) << std::strerror(errno);

	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ibv_wr_abort(x);
	EXPECT_EQ(sq_producer(), 0u);

	// A bad WR after a good one discards both.
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ibv_wr_atomic_fetch_add(x, 1, 0x2000, 1);
	ibv_wr_set_sge(x, 0x11, 0x1000, 4);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(sq_producer(), 0u);

	// Too many SGEs; a setter with no WR; inline past max_inline_data.
	std::vector<ibv_sge> many(kSendSge + 1, ibv_sge{ 0x1000, 1, 0x11 });
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, many.size(), many.data());
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, buf_a, kInline + 1);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);

	// More WRs than the ring holds: ENOMEM, none posted.
	ibv_wr_start(x);
	for (uint32_t i = 0; i <= kernel_.sq_slots; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	}
	EXPECT_EQ(ibv_wr_complete(x), ENOMEM);
	EXPECT_EQ(sq_producer(), 0u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 0u);

	// The QP is not stuck: the discarded slots are written again.
	ibv_wr_start(x);
	x->wr_id = 77;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_producer(), 1u);
	EXPECT_EQ(send_slot(0).wr_id, 77u);
}

TEST_F(ProviderQpEx, CompleteRingsOnceWhenTheKernelAsks)
{
	ibv_qp_ex *x = ready_ex(false);
	ASSERT_NE(x, nullptr) << std::strerror(errno);

	ibv_wr_start(x);
	for (uint64_t id = 1; id <= 3; id++) {
		x->wr_id = id;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	}
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(sq_producer(), 3u);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);

	// An empty batch rings nothing.
	ibv_wr_start(x);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(commands(IB_USER_VERBS_CMD_POST_SEND), 1u);

	// Before RTS nothing is accepted.
	ASSERT_EQ(to_state(IBV_QPS_RESET), 0);
	ibv_wr_start(x);
	ibv_wr_send(x);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
}

} // namespace
