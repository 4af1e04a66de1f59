// UD and UC data paths of a live RDMA device, run inside a test-bed guest
// as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Ud*:Uc*'
// Two QPs of the device under test, in this one process, exchange traffic
// through the device's own IPv4-mapped RoCE v2 GID (same-host loopback).
// Each case checks the completions (status, opcode, byte_len, wc_flags,
// src_qp, immediate data) and the memory, including the 40-byte GRH area
// that every RoCE device puts in front of a received datagram.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "verbs_ud_fixture.h"

namespace sroce::test::ud {
namespace {

TEST_F(Ud, SendsOfEverySizeUpToThePortMtu)
{
	for (uint32_t len : {0u, 1u, 3u, 100u, port_mtu() - 1, port_mtu()}) {
		SCOPED_TRACE(len);
		ASSERT_NO_FATAL_FAILURE(exchange(len));
	}
}

TEST_F(Ud, SendWithImmediate)
{
	ASSERT_NO_FATAL_FAILURE(exchange(33, IBV_WR_SEND_WITH_IMM));
}

// A datagram larger than the port MTU fails locally; the QP is in error.
TEST_F(Ud, LargerThanTheMtuFails)
{
	Region src(pd_.get(), port_mtu() + 1, 1);
	ASSERT_EQ(post_ud(a_.get(), 1, src.sge(0, port_mtu() + 1), ah_.get(),
			  b_->qp_num, kQkey),
		  0);
	auto s = next_wc(scq_.get());
	ASSERT_TRUE(s);
	EXPECT_EQ(s->status, IBV_WC_LOC_LEN_ERR) << wc_str(*s);
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet));
}

// Another Q_Key is dropped (and counted); a controlled Q_Key in the WR
// (high bit set) stands for the sender QP's own.
TEST_F(Ud, QkeyMismatchIsDroppedControlledQkeyUsesOwn)
{
	Region src(pd_.get(), 16, 3), dst(pd_.get(), kGrh + 16, 0);
	const long before = rx_drops("bad_qkey");

	ASSERT_EQ(post_recv(b_.get(), 1, dst.sge(0, kGrh + 16)), 0);
	ASSERT_EQ(post_ud(a_.get(), 2, src.sge(0, 16), ah_.get(), b_->qp_num,
			  kQkey + 1),
		  0);
	auto s = next_wc(scq_.get());
	ASSERT_TRUE(s);
	EXPECT_EQ(s->status, IBV_WC_SUCCESS) << "the sender cannot know";
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet)) << "delivered anyway";
	if (before >= 0) {
		EXPECT_EQ(rx_drops("bad_qkey"), before + 1);
	}

	ASSERT_EQ(post_ud(a_.get(), 3, src.sge(0, 16), ah_.get(), b_->qp_num,
			  0x80000000u | 0x42),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	auto r = next_wc(rcq_.get());
	ASSERT_TRUE(r) << "controlled Q_Key not replaced by the QP's";
	EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
}

// A datagram with no receive posted is lost; one too big for the receive
// buffer completes it in error; the QP keeps receiving either way.
TEST_F(Ud, ReceiverTroublesDoNotStopTheQp)
{
	Region src(pd_.get(), 200, 5), small(pd_.get(), kGrh + 50, 0),
		big(pd_.get(), kGrh + 200, 0);

	ASSERT_EQ(post_ud(a_.get(), 1, src.sge(0, 200), ah_.get(), b_->qp_num,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet));

	ASSERT_EQ(post_recv(b_.get(), 2, small.sge(0, kGrh + 50)), 0);
	ASSERT_EQ(post_ud(a_.get(), 3, src.sge(0, 200), ah_.get(), b_->qp_num,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	auto r = next_wc(rcq_.get());
	ASSERT_TRUE(r);
	EXPECT_EQ(r->wr_id, 2u);
	EXPECT_EQ(r->status, IBV_WC_LOC_LEN_ERR) << wc_str(*r);

	ASSERT_EQ(post_recv(b_.get(), 4, big.sge(0, kGrh + 200)), 0);
	ASSERT_EQ(post_ud(a_.get(), 5, src.sge(0, 200), ah_.get(), b_->qp_num,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	r = next_wc(rcq_.get());
	ASSERT_TRUE(r);
	EXPECT_EQ(r->wr_id, 4u);
	EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
	EXPECT_EQ(std::memcmp(big.mem.data() + kGrh, src.mem.data(), 200), 0);
}

// Only SENDs go on a UD QP, and each needs an address handle.
TEST_F(Ud, OnlySendsWithAnAddressHandle)
{
	Region src(pd_.get(), 8, 0);
	ibv_sge sge = src.sge(0, 8);
	ibv_send_wr wr{}, *bad = nullptr;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.ud.ah = ah_.get();
	EXPECT_EQ(ibv_post_send(a_.get(), &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = nullptr;
	EXPECT_EQ(ibv_post_send(a_.get(), &wr, &bad), EINVAL);
	EXPECT_FALSE(next_wc(scq_.get(), kQuiet));
}

// An address handle of another protection domain is refused at send time.
TEST_F(Ud, AddressHandleOfAnotherPdFails)
{
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other);
	Ah foreign = make_ah(other.get(), gid_);
	ASSERT_TRUE(foreign);
	Region src(pd_.get(), 8, 0);

	ASSERT_EQ(post_ud(a_.get(), 1, src.sge(0, 8), foreign.get(), b_->qp_num,
			  kQkey),
		  0);
	auto s = next_wc(scq_.get());
	ASSERT_TRUE(s);
	EXPECT_NE(s->status, IBV_WC_SUCCESS) << wc_str(*s);
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet));
}

// A multicast group: datagrams to it reach the attached QP, and stop after
// it detaches.
TEST_F(Ud, MulticastAttachDetach)
{
	ibv_gid group{};
	group.raw[10] = group.raw[11] = 0xff;
	group.raw[12] = 239;
	group.raw[13] = 7;
	group.raw[14] = 7;
	group.raw[15] = 7;
	Ah mah = make_ah(pd_.get(), group);
	ASSERT_TRUE(mah) << "multicast AH: " << std::strerror(errno);
	Region src(pd_.get(), 64, 9), dst(pd_.get(), 2 * (kGrh + 64), 0);

	ASSERT_EQ(ibv_attach_mcast(b_.get(), &group, 0), 0);
	ASSERT_EQ(post_recv(b_.get(), 1, dst.sge(0, kGrh + 64)), 0);
	ASSERT_EQ(post_ud(a_.get(), 2, src.sge(0, 64), mah.get(), 0xffffff,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	auto r = next_wc(rcq_.get());
	ASSERT_TRUE(r) << "multicast datagram not delivered";
	EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
	EXPECT_EQ(r->src_qp, a_->qp_num);
	EXPECT_EQ(std::memcmp(dst.mem.data() + kGrh, src.mem.data(), 64), 0);

	ASSERT_EQ(ibv_detach_mcast(b_.get(), &group, 0), 0);
	ASSERT_EQ(post_recv(b_.get(), 3, dst.sge(kGrh + 64, kGrh + 64)), 0);
	ASSERT_EQ(post_ud(a_.get(), 4, src.sge(0, 64), mah.get(), 0xffffff,
			  kQkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet)) << "delivered after detach";

	EXPECT_NE(ibv_detach_mcast(b_.get(), &group, 0), 0)
		<< "detached twice";
	EXPECT_NE(ibv_attach_mcast(b_.get(), &gid_, 0), 0)
		<< "attached to a unicast GID";
}

// ---------------------------------------------------------------------
// UC

class Uc : public Datagram {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(Datagram::SetUp());
		a_ = make_qp(IBV_QPT_UC);
		b_ = make_qp(IBV_QPT_UC);
		ASSERT_TRUE(a_ && b_) << std::strerror(errno);
		// Remote writes are all UC has of remote access.
		constexpr Link l = {.access = IBV_ACCESS_REMOTE_WRITE,
				    .sq_psn = 0x400,
				    .rq_psn = 0x400};
		ASSERT_TRUE(connect(a_.get(), b_->qp_num, gid_, gid_index_, l));
		ASSERT_TRUE(connect(b_.get(), a_->qp_num, gid_, gid_index_, l));
	}

	int post(ibv_qp *qp, uint64_t id, ibv_sge sge, ibv_wr_opcode op,
		 uint64_t raddr = 0, uint32_t rkey = 0)
	{
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.imm_data = htobe32(uint32_t(id));
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		return ibv_post_send(qp, &wr, &bad);
	}

	Qp a_, b_;
};

TEST_F(Uc, SendsAcrossPackets)
{
	for (uint32_t len : {0u, 1u, 1024u, 1025u, 5000u}) {
		SCOPED_TRACE(len);
		Region src(pd_.get(), len, uint8_t(len)), dst(pd_.get(), len, 0);
		for (uint32_t i = 0; i < len; i++)
			src.mem[i] = uint8_t(i ^ (i >> 8));
		ASSERT_EQ(post_recv(b_.get(), len, dst.sge(0, len)), 0);
		ASSERT_EQ(post(a_.get(), len, src.sge(0, len), IBV_WR_SEND), 0);
		auto s = next_wc(scq_.get());
		ASSERT_TRUE(s);
		EXPECT_EQ(s->status, IBV_WC_SUCCESS) << wc_str(*s);
		auto r = next_wc(rcq_.get());
		ASSERT_TRUE(r);
		EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
		EXPECT_EQ(r->opcode, IBV_WC_RECV);
		EXPECT_EQ(r->byte_len, len);
		EXPECT_EQ(r->src_qp, a_->qp_num);
		EXPECT_EQ(dst.mem, src.mem);
	}
}

TEST_F(Uc, WriteAndWriteWithImmediate)
{
	const uint32_t len = 3000;
	Region src(pd_.get(), len, 0x5a), dst(pd_.get(), len, 0),
		none(pd_.get(), 0, 0);

	ASSERT_EQ(post(a_.get(), 1, src.sge(0, len), IBV_WR_RDMA_WRITE,
		       reinterpret_cast<uintptr_t>(dst.mem.data()),
		       dst.mr->rkey),
		  0);
	auto s = next_wc(scq_.get());
	ASSERT_TRUE(s);
	EXPECT_EQ(s->status, IBV_WC_SUCCESS) << wc_str(*s);
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet)) << "WRITE consumed a receive";

	for (auto &b : src.mem)
		b = 0xa5;
	ASSERT_EQ(post_recv(b_.get(), 2, none.sge(0, 0)), 0);
	ASSERT_EQ(post(a_.get(), 3, src.sge(0, len), IBV_WR_RDMA_WRITE_WITH_IMM,
		       reinterpret_cast<uintptr_t>(dst.mem.data()),
		       dst.mr->rkey),
		  0);
	ASSERT_TRUE(next_wc(scq_.get()));
	auto r = next_wc(rcq_.get());
	ASSERT_TRUE(r);
	EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
	EXPECT_EQ(r->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(r->byte_len, len);
	EXPECT_TRUE(r->wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(be32toh(r->imm_data), 3u);
	EXPECT_EQ(dst.mem, src.mem);
}

// Without a receive WQE, or with a bad R_Key, a message is lost without
// an error on either side; the next one arrives.
TEST_F(Uc, LostMessagesDoNotStopTheQp)
{
	Region src(pd_.get(), 2048, 1), dst(pd_.get(), 2048, 0);

	ASSERT_EQ(post(a_.get(), 1, src.sge(0, 2048), IBV_WR_SEND), 0);
	ASSERT_EQ(post(a_.get(), 2, src.sge(0, 2048), IBV_WR_RDMA_WRITE,
		       reinterpret_cast<uintptr_t>(dst.mem.data()),
		       dst.mr->rkey + 1),
		  0);
	for (int i = 0; i < 2; i++) {
		auto s = next_wc(scq_.get());
		ASSERT_TRUE(s);
		EXPECT_EQ(s->status, IBV_WC_SUCCESS) << wc_str(*s);
	}
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet));
	EXPECT_EQ(dst.mem, std::vector<uint8_t>(2048, 0));

	ASSERT_EQ(post_recv(b_.get(), 3, dst.sge(0, 2048)), 0);
	ASSERT_EQ(post(a_.get(), 4, src.sge(0, 2048), IBV_WR_SEND), 0);
	ASSERT_TRUE(next_wc(scq_.get()));
	auto r = next_wc(rcq_.get());
	ASSERT_TRUE(r);
	EXPECT_EQ(r->status, IBV_WC_SUCCESS) << wc_str(*r);
	EXPECT_EQ(r->byte_len, 2048u);
	EXPECT_EQ(dst.mem, src.mem);
}

TEST_F(Uc, NoReadsOrAtomics)
{
	Region src(pd_.get(), 8, 0);
	EXPECT_EQ(post(a_.get(), 1, src.sge(0, 8), IBV_WR_RDMA_READ, 0x1000, 1),
		  EINVAL);
	EXPECT_EQ(post(a_.get(), 1, src.sge(0, 8), IBV_WR_ATOMIC_FETCH_AND_ADD,
		       0x1000, 1),
		  EINVAL);
}

} // namespace
} // namespace sroce::test::ud
