// XRC, the data path (part of verbs_device_tests; the fixture and the
// expectations are in verbs_xrc_fixture.h): SENDs of every size with and
// without immediate data, RDMA WRITE (with immediate: it takes a WQE of the
// SRQ it names), RDMA READ and atomics through an INI and its TGT; three
// INIs delivering into one XRC SRQ; one TGT delivering into two SRQs of its
// domain, each message into the one it names.  Every case runs twice:
// posting with ibv_post_send() and wr.qp_type.xrc.remote_srqn, and with the
// extended send API and ibv_wr_set_xrc_srqn() (Apis/XrcData.*/PostSend,
// .../WrEx).
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>

#include "verbs_xrc_fixture.h"

namespace sroce::test {
namespace {

using namespace xrc;
using namespace std::chrono_literals;

class XrcData : public Xrc, public ::testing::WithParamInterface<Api> {
protected:
	Api api() const { return GetParam(); }
};

// Sizes around the path MTU (1024) and the page, up to 64 packets.
constexpr uint32_t kSizes[] = {0, 1, 1024, 1025, 4097, 65536};
// A receive WQE's area: the largest message and a page it must not reach.
constexpr uint32_t kSlot = 65536 + 4096;

TEST_P(XrcData, SendOfEverySizeLandsInTheSrq)
{
	Conn c;
	ASSERT_TRUE(connect(c, api()));
	constexpr size_t n = 2 * std::size(kSizes);
	Region src(pd_.get(), n * 65536, kMrAll);
	Region rx(pd_.get(), n * kSlot, kMrAll);
	ASSERT_TRUE(src && rx) << std::strerror(errno);
	std::vector<uint8_t> want = rx.buf.image();
	std::vector<XWr> wrs;
	std::vector<Want> sent, got;
	for (size_t i = 0; i < n; i++) {
		// each size once without immediate data, once with
		const uint32_t len = kSizes[i / 2];
		const std::optional<uint32_t> imm =
			i % 2 ? std::optional<uint32_t>(0x1000 + uint32_t(i))
			      : std::nullopt;
		uint8_t *p = src.buf.data() + i * 65536;
		fill(p, len, uint32_t(100 + i));
		std::copy_n(p, len, want.begin() + long(i * kSlot));
		ASSERT_EQ(post_srq(srq_.get(), 100 + i, rx.sge(i * kSlot, kSlot)),
			  0);
		std::vector<ibv_sge> sg;
		if (len)
			sg.push_back(src.sge(i * 65536, len));
		wrs.push_back(xsend(i, srqn_, sg, imm));
		const unsigned f = imm ? unsigned(IBV_WC_WITH_IMM) : 0u;
		sent.push_back(ok(i, IBV_WC_SEND, c.ini.get(), {}, f));
		got.push_back(ok(100 + i, IBV_WC_RECV, c.tgt.get(), len, f, imm));
	}
	ASSERT_EQ(post(c.ini.get(), api(), wrs), 0);
	EXPECT_TRUE(completes(c.scq.get(), sent));
	// On the SRQ's CQ, in order (one TGT takes the WQEs in order), each
	// with the TGT's number.
	EXPECT_TRUE(completes(rcq_.get(), got));
	EXPECT_TRUE(same(rx.buf.data(), want.data(), want.size(),
			 "receive buffers"));
	EXPECT_TRUE(quiet(rcq_.get()));
	EXPECT_EQ(query_state(c.ini.get()), IBV_QPS_RTS);
}

TEST_P(XrcData, WriteLandsAndWriteWithImmediateTakesAWqe)
{
	Conn c;
	ASSERT_TRUE(connect(c, api()));
	Region src(pd_.get(), 2 * 65536, kMrAll, 5);
	Region dst(pd_.get(), 3 * 65536, kMrAll);
	Region rx(pd_.get(), 2 * 4096, kMrAll);
	ASSERT_TRUE(src && dst && rx) << std::strerror(errno);
	std::vector<uint8_t> want = dst.buf.image();
	std::copy_n(src.buf.data(), 65536, want.begin() + 100);
	std::copy_n(src.buf.data() + 65536, 4097, want.begin() + 70000);
	std::copy_n(src.buf.data() + 3, 1, want.begin() + 3 * 65536 - 1);
	ASSERT_EQ(post_srq(srq_.get(), 50, rx.sge(0, 4096)), 0);
	ASSERT_EQ(post_srq(srq_.get(), 51, rx.sge(4096, 4096)), 0);

	ASSERT_EQ(post(c.ini.get(), api(),
		       {xrdma(1, IBV_WR_RDMA_WRITE, srqn_, {src.sge(0, 65536)},
			      dst.buf.addr(100), dst.mr->rkey),
			// with immediate: the data goes where the WRITE says,
			// a WQE of the named SRQ completes with its length
			xrdma(2, IBV_WR_RDMA_WRITE_WITH_IMM, srqn_,
			      {src.sge(65536, 4097)}, dst.buf.addr(70000),
			      dst.mr->rkey, 0x11223344),
			// the last byte of the region
			xrdma(3, IBV_WR_RDMA_WRITE, srqn_, {src.sge(3, 1)},
			      dst.buf.addr(3 * 65536 - 1), dst.mr->rkey),
			// nothing but the immediate data (C9-88: no R_Key
			// checked)
			xrdma(4, IBV_WR_RDMA_WRITE_WITH_IMM, srqn_, {}, 0, 0,
			      0x55667788)}),
		  0);
	EXPECT_TRUE(completes(
		c.scq.get(),
		{ok(1, IBV_WC_RDMA_WRITE, c.ini.get()),
		 ok(2, IBV_WC_RDMA_WRITE, c.ini.get(), {}, IBV_WC_WITH_IMM),
		 ok(3, IBV_WC_RDMA_WRITE, c.ini.get()),
		 ok(4, IBV_WC_RDMA_WRITE, c.ini.get(), {}, IBV_WC_WITH_IMM)}));
	EXPECT_TRUE(completes(rcq_.get(),
			      {ok(50, IBV_WC_RECV_RDMA_WITH_IMM, c.tgt.get(),
				  4097u, IBV_WC_WITH_IMM, 0x11223344u),
			       ok(51, IBV_WC_RECV_RDMA_WITH_IMM, c.tgt.get(),
				  0u, IBV_WC_WITH_IMM, 0x55667788u)}));
	EXPECT_TRUE(same(dst.buf.data(), want.data(), want.size(),
			 "WRITE target"));
	const Buffer untouched = patterned(2 * 4096);
	EXPECT_TRUE(same(rx.buf.data(), untouched.data(), 2 * 4096,
			 "the WQEs' buffers (a WRITE places no data there)"));
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_P(XrcData, ReadOfSeveralSizes)
{
	Conn c;
	ASSERT_TRUE(connect(c, api()));
	Region remote(pd_.get(), 2 * 65536, kMrAll, 7);
	Region local(pd_.get(), 3 * 65536, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);
	const std::vector<uint8_t> rbefore = remote.buf.image();
	std::vector<uint8_t> want = local.buf.image();
	std::copy_n(rbefore.begin() + 5, 1, want.begin());
	std::copy_n(rbefore.begin() + 1000, 4097, want.begin() + 4096);
	std::copy_n(rbefore.begin() + 65536, 65536, want.begin() + 65536);
	ASSERT_EQ(post(c.ini.get(), api(),
		       {xrdma(1, IBV_WR_RDMA_READ, srqn_, {local.sge(0, 1)},
			      remote.buf.addr(5), remote.mr->rkey),
			xrdma(2, IBV_WR_RDMA_READ, srqn_,
			      {local.sge(4096, 4097)}, remote.buf.addr(1000),
			      remote.mr->rkey),
			xrdma(3, IBV_WR_RDMA_READ, srqn_,
			      {local.sge(65536, 65536)},
			      remote.buf.addr(65536), remote.mr->rkey)}),
		  0);
	EXPECT_TRUE(completes(c.scq.get(),
			      {ok(1, IBV_WC_RDMA_READ, c.ini.get(), 1u),
			       ok(2, IBV_WC_RDMA_READ, c.ini.get(), 4097u),
			       ok(3, IBV_WC_RDMA_READ, c.ini.get(), 65536u)}));
	EXPECT_TRUE(same(local.buf.data(), want.data(), want.size(),
			 "READ destination"));
	EXPECT_TRUE(same(remote.buf.data(), rbefore.data(), rbefore.size(),
			 "READ source"));
	// A READ takes no WQE.
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_P(XrcData, AtomicsReturnTheOriginalValue)
{
	if (dev_.atomic_cap == IBV_ATOMIC_NONE) {
		ASSERT_FALSE(testing_sroce()) << "sroce has atomic_cap NONE";
		GTEST_SKIP() << not_sroce("atomics (atomic_cap NONE)");
	}
	Conn c;
	ASSERT_TRUE(connect(c, api()));
	Region remote(pd_.get(), 4096, kMrAll), local(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);
	uint64_t *rw = reinterpret_cast<uint64_t *>(remote.buf.data());
	uint64_t *lw = reinterpret_cast<uint64_t *>(local.buf.data());
	rw[1] = 0x1111222233334444ull;
	rw[2] = 0x5555666677778888ull;
	rw[3] = 0xfffffffffffffffeull;
	const std::vector<uint8_t> rbefore = remote.buf.image();
	const uint32_t rkey = remote.mr->rkey;

	ASSERT_EQ(post(c.ini.get(), api(),
		       {// compare hits: swapped
			xatomic(1, IBV_WR_ATOMIC_CMP_AND_SWP, srqn_,
				local.sge(8, 8), remote.buf.addr(8), rkey,
				0x1111222233334444ull, 0xaaaabbbbccccddddull),
			// compare misses: unchanged
			xatomic(2, IBV_WR_ATOMIC_CMP_AND_SWP, srqn_,
				local.sge(16, 8), remote.buf.addr(16), rkey,
				0x5555666677778889ull, 1),
			// the add wraps around
			xatomic(3, IBV_WR_ATOMIC_FETCH_AND_ADD, srqn_,
				local.sge(24, 8), remote.buf.addr(24), rkey, 3),
			// the swapped word is what the next one sees
			xatomic(4, IBV_WR_ATOMIC_FETCH_AND_ADD, srqn_,
				local.sge(32, 8), remote.buf.addr(8), rkey,
				0x0101010101010101ull)}),
		  0);
	EXPECT_TRUE(completes(c.scq.get(),
			      {ok(1, IBV_WC_COMP_SWAP, c.ini.get(), 8u),
			       ok(2, IBV_WC_COMP_SWAP, c.ini.get(), 8u),
			       ok(3, IBV_WC_FETCH_ADD, c.ini.get(), 8u),
			       ok(4, IBV_WC_FETCH_ADD, c.ini.get(), 8u)}));
	EXPECT_EQ(lw[1], 0x1111222233334444ull) << "CAS hit: original";
	EXPECT_EQ(lw[2], 0x5555666677778888ull) << "CAS miss: original";
	EXPECT_EQ(lw[3], 0xfffffffffffffffeull) << "FAA: original";
	EXPECT_EQ(lw[4], 0xaaaabbbbccccddddull) << "FAA after CAS: original";
	EXPECT_EQ(rw[1], 0xaaaabbbbccccddddull + 0x0101010101010101ull);
	EXPECT_EQ(rw[2], 0x5555666677778888ull) << "CAS miss changed memory";
	EXPECT_EQ(rw[3], 1ull) << "FAA wraps";
	EXPECT_TRUE(same(remote.buf.data(), rbefore.data(), 8, "remote word 0"));
	EXPECT_TRUE(same(remote.buf.data() + 32, rbefore.data() + 32, 4096 - 32,
			 "rest of remote memory"));
	const Buffer lbefore = patterned(4096);
	EXPECT_TRUE(same(local.buf.data(), lbefore.data(), 8, "local word 0"));
	EXPECT_TRUE(same(local.buf.data() + 40, lbefore.data() + 40, 4096 - 40,
			 "rest of local memory"));
	EXPECT_TRUE(quiet(rcq_.get(), 0ms));
}

// ---------------------------------------------------------------------
// Sharing.

// Message seq of connection k: its length and its first pattern seed.
uint32_t share_len(size_t k, uint32_t seq)
{
	return (uint32_t(k) * 977u + seq * 1331u) % 5000u;
}

uint32_t share_seed(size_t k, uint32_t seq)
{
	return uint32_t(k) << 16 | seq;
}

TEST_P(XrcData, SeveralInisDeliverIntoOneSrq)
{
	// Three INIs, each connected to a TGT of its own, every message
	// naming the one SRQ: its WQEs are taken in arrival order by all
	// three TGTs; each completion names the TGT (and so the sender),
	// per TGT in sending order, each WQE once, the data in its buffer.
	constexpr size_t kConns = 3;
	constexpr uint32_t kEach = 10, kBuf = 8192;
	std::vector<Conn> conns(kConns);
	std::map<uint32_t, size_t> sender_of;
	for (size_t k = 0; k < kConns; k++) {
		ASSERT_TRUE(connect(conns[k], api()));
		sender_of[conns[k].tgt->qp_num] = k;
	}
	ASSERT_EQ(sender_of.size(), kConns) << "TGT numbers not distinct";
	Region src(pd_.get(), kConns * kEach * kBuf, kMrAll);
	Region rx(pd_.get(), kConns * kEach * kBuf, kMrAll);
	ASSERT_TRUE(src && rx) << std::strerror(errno);
	std::set<uint64_t> posted;
	for (uint32_t i = 0; i < kConns * kEach; i++) {
		ASSERT_EQ(post_srq(srq_.get(), i, rx.sge(i * kBuf, kBuf)), 0);
		posted.insert(i);
	}
	// Interleaved: message seq of every INI before message seq + 1.
	for (uint32_t seq = 0; seq < kEach; seq++)
		for (size_t k = 0; k < kConns; k++) {
			const size_t at = (k * kEach + seq) * kBuf;
			const uint32_t len = share_len(k, seq);
			fill(src.buf.data() + at, len, share_seed(k, seq));
			std::vector<ibv_sge> sg;
			if (len)
				sg.push_back(src.sge(at, len));
			ASSERT_EQ(post(conns[k].ini.get(), api(),
				       {xsend(seq, srqn_, sg)}),
				  0);
		}
	for (size_t k = 0; k < kConns; k++) {
		std::vector<Want> w;
		for (uint32_t seq = 0; seq < kEach; seq++)
			w.push_back(ok(seq, IBV_WC_SEND, conns[k].ini.get()));
		EXPECT_TRUE(completes(conns[k].scq.get(), w)) << "INI " << k;
	}

	const std::vector<ibv_wc> got = poll_n(rcq_.get(), kConns * kEach);
	ASSERT_EQ(got.size(), kConns * kEach);
	std::vector<uint32_t> next(kConns, 0);
	const Buffer sentinel = patterned(kConns * kEach * kBuf);
	for (const ibv_wc &wc : got) {
		const auto s = sender_of.find(wc.qp_num);
		ASSERT_TRUE(wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV && s != sender_of.end())
			<< wc_str(wc);
		ASSERT_EQ(posted.erase(wc.wr_id), 1u)
			<< wc_str(wc) << ": WQE taken twice or never posted";
		const size_t k = s->second;
		const uint32_t seq = next[k]++;
		const uint32_t len = share_len(k, seq);
		ASSERT_EQ(wc.byte_len, len) << wc_str(wc) << ": message " << seq
					    << " of INI " << k;
		EXPECT_EQ(wc.wc_flags & ~unsigned(IBV_WC_GRH), 0u) << wc_str(wc);
		std::vector<uint8_t> want(kBuf);
		for (uint32_t i = 0; i < kBuf; i++)
			want[i] = i < len ? pat(share_seed(k, seq), i)
					  : sentinel.data()[wc.wr_id * kBuf + i];
		EXPECT_TRUE(same(rx.buf.data() + wc.wr_id * kBuf, want.data(),
				 kBuf, "WQE " + std::to_string(wc.wr_id)));
	}
	for (size_t k = 0; k < kConns; k++)
		EXPECT_EQ(next[k], kEach) << "messages through TGT " << k;
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_P(XrcData, OneTgtDeliversIntoTheSrqEachMessageNames)
{
	// A second SRQ of the same domain, with its own CQ and its own PD
	// (its WQEs' buffers registered there): one TGT delivers into both,
	// each message into the SRQ it names, in the order of that SRQ's
	// WQEs, and its completion on that SRQ's CQ.  A WRITE with
	// immediate data naming B writes memory of B's PD.
	Pd pd_b(ibv_alloc_pd(ctx_.get()));
	Cq cq_b(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(pd_b && cq_b) << std::strerror(errno);
	XrcSrq srq_b;
	ASSERT_EQ(create_srq(ctx_.get(),
			     xrc_srq_attr(xrcd_.get(), cq_b.get(), pd_b.get(),
					  32),
			     srq_b),
		  0);
	const uint32_t srqn_b = srq_num(srq_b.get());
	ASSERT_NE(srqn_b, srqn_);
	Conn c;
	ASSERT_TRUE(connect(c, api()));

	constexpr uint32_t kBuf = 4096;
	const std::string to = "ABBAABABBBAA";	// which SRQ each SEND names
	const size_t n = to.size();
	Region src(pd_.get(), n * kBuf, kMrAll);
	Region rx_a(pd_.get(), n * kBuf, kMrAll);
	Region rx_b(pd_b.get(), n * kBuf, kMrAll);
	Region mem_b(pd_b.get(), 8192, kMrAll);
	ASSERT_TRUE(src && rx_a && rx_b && mem_b) << std::strerror(errno);
	for (uint32_t i = 0; i < n; i++) {
		ASSERT_EQ(post_srq(srq_.get(), 1000 + i, rx_a.sge(i * kBuf, kBuf)),
			  0);
		ASSERT_EQ(post_srq(srq_b.get(), 2000 + i,
				   rx_b.sge(i * kBuf, kBuf)),
			  0);
	}
	std::vector<uint8_t> want_a = rx_a.buf.image(), want_b = rx_b.buf.image();
	std::vector<XWr> wrs;
	std::vector<Want> sent, got_a, got_b;
	uint32_t na = 0, nb = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t len = 100 + 311 * i;	// up to 3521
		fill(src.buf.data() + i * kBuf, len, 500 + i);
		const bool a = to[i] == 'A';
		const uint32_t slot = a ? na++ : nb++;
		std::copy_n(src.buf.data() + i * kBuf, len,
			    (a ? want_a : want_b).begin() + slot * kBuf);
		wrs.push_back(xsend(i, a ? srqn_ : srqn_b,
				    {src.sge(i * kBuf, len)}, 0x700 + i));
		sent.push_back(ok(i, IBV_WC_SEND, c.ini.get(), {},
				  IBV_WC_WITH_IMM));
		(a ? got_a : got_b)
			.push_back(ok((a ? 1000 : 2000) + slot, IBV_WC_RECV,
				      c.tgt.get(), len, IBV_WC_WITH_IMM,
				      0x700 + i));
	}
	// Last, a WRITE with immediate naming B, into memory of B's PD.
	std::vector<uint8_t> want_mem = mem_b.buf.image();
	std::copy_n(src.buf.data(), 3000, want_mem.begin() + 1000);
	wrs.push_back(xrdma(n, IBV_WR_RDMA_WRITE_WITH_IMM, srqn_b,
			    {src.sge(0, 3000)}, mem_b.buf.addr(1000),
			    mem_b.mr->rkey, 0xbbbb));
	sent.push_back(ok(n, IBV_WC_RDMA_WRITE, c.ini.get(), {},
			  IBV_WC_WITH_IMM));
	got_b.push_back(ok(2000 + nb, IBV_WC_RECV_RDMA_WITH_IMM, c.tgt.get(),
			   3000u, IBV_WC_WITH_IMM, 0xbbbbu));

	ASSERT_EQ(post(c.ini.get(), api(), wrs), 0);
	EXPECT_TRUE(completes(c.scq.get(), sent));
	EXPECT_TRUE(completes(rcq_.get(), got_a)) << "SRQ A's CQ";
	EXPECT_TRUE(completes(cq_b.get(), got_b)) << "SRQ B's CQ";
	EXPECT_TRUE(same(rx_a.buf.data(), want_a.data(), want_a.size(),
			 "SRQ A's buffers"));
	EXPECT_TRUE(same(rx_b.buf.data(), want_b.data(), want_b.size(),
			 "SRQ B's buffers"));
	EXPECT_TRUE(same(mem_b.buf.data(), want_mem.data(), want_mem.size(),
			 "WRITE target of B's PD"));
	EXPECT_TRUE(quiet(rcq_.get()));
	EXPECT_TRUE(quiet(cq_b.get(), 0ms));
}

INSTANTIATE_TEST_SUITE_P(Apis, XrcData,
			 ::testing::Values(Api::PostSend, Api::WrEx), api_name);

} // namespace
} // namespace sroce::test
