// The RC data path (part of verbs_device_tests; the fixture and the
// conventions of the checks are in verbs_rc_fixture.h): SEND, RDMA WRITE and
// READ of every size over each path (IPv4 with path MTU 1024 and 4096,
// IPv6), scatter/gather, and the send variants: inline data, immediate
// data, solicited events, unsignaled sends, sq_sig_all, completion channels.
#include <gtest/gtest.h>

#include "verbs_rc_fixture.h"

namespace sroce::test {
namespace {

using namespace rc;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------
// Data transfer over each path: IPv4 with path MTU 1024 and 4096, IPv6.

struct Path {
	const char *name;
	GidKind kind;
	ibv_mtu mtu;
};

void PrintTo(const Path &p, std::ostream *os)
{
	*os << p.name;
}

class RcData : public Rc, public ::testing::WithParamInterface<Path> {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(
			SetUpDevice(GetParam().kind, GetParam().mtu));
		if (IsSkipped())
			return;
		ASSERT_TRUE(pair(a_, b_));
	}

	End a_, b_;
};

TEST_P(RcData, SendRecvOfEverySize)
{
	// One buffer per side for all sizes; the receive buffer is 64 bytes
	// longer than the message, and those must stay untouched.
	Region src(pd_.get(), (1u << 20) + 64, kMrAll);
	Region dst(pd_.get(), (1u << 20) + 64, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	uint64_t id = 1;
	for (uint32_t n : kSizes) {
		SCOPED_TRACE(testing::Message() << n << " bytes");
		fill(src.buf.data(), n, n);
		fill(dst.buf.data(), dst.buf.size(), kSentinelSeed);
		std::vector<uint8_t> want = dst.buf.image();
		std::copy_n(src.buf.data(), n, want.begin());

		// A zero-length message needs no SGE on either side.
		ibv_sge rs = dst.sge(0, n + 64);
		ASSERT_EQ(post_recv(b_.qp.get(), id + 1000, &rs, n ? 1 : 0), 0);
		ibv_sge ss = src.sge(0, n);
		ASSERT_EQ(post(a_.qp.get(), {send_wr(id, &ss, n ? 1 : 0)}), 0);

		ASSERT_TRUE(completes(a_.scq.get(),
				      {ok(id, IBV_WC_SEND, a_.qp.get())}));
		ASSERT_TRUE(completes(b_.rcq.get(), {ok(id + 1000, IBV_WC_RECV,
							 b_.qp.get(), n)}));
		ASSERT_TRUE(same(dst.buf.data(), want.data(), want.size(),
				 "receive buffer"));
		id++;
	}
	EXPECT_TRUE(quiet(a_.scq.get()));
	EXPECT_TRUE(quiet(b_.rcq.get()));
	EXPECT_TRUE(quiet(b_.scq.get(), 0ms));
	EXPECT_TRUE(quiet(a_.rcq.get(), 0ms));
}

TEST_P(RcData, SendRecvScattersAndGathers)
{
	// Gather from two MRs in an order that jumps around, scatter into
	// two others; the SGE boundaries fall inside and across packets.
	Region s1(pd_.get(), 16384, kMrAll, 1), s2(pd_.get(), 16384, kMrAll, 2);
	Region r1(pd_.get(), 16384, kMrAll), r2(pd_.get(), 16384, kMrAll);
	ASSERT_TRUE(s1 && s2 && r1 && r2) << std::strerror(errno);

	ibv_sge ss[] = {s1.sge(0, 1), s2.sge(7, 1023), s1.sge(100, 2049),
			s2.sge(5000, 3), s1.sge(3000, 5000)};
	ibv_sge rs[] = {r1.sge(10, 3), r2.sge(0, 4093), r1.sge(200, 1),
			r2.sge(8192, 3979)};
	uint32_t total = 0;
	for (const ibv_sge &s : ss)
		total += s.length;
	ASSERT_EQ(total, 8076u);

	// The message, as the gather list defines it.
	std::vector<uint8_t> msg;
	for (const ibv_sge &s : ss) {
		const uint8_t *p = reinterpret_cast<const uint8_t *>(s.addr);
		msg.insert(msg.end(), p, p + s.length);
	}
	// Where it must land: the scatter list in order, as far as it goes.
	auto expect = [&](uint32_t len) {
		std::vector<std::vector<uint8_t>> img = {r1.buf.image(),
							 r2.buf.image()};
		uint32_t done = 0;
		for (const ibv_sge &s : rs) {
			const uint32_t k = std::min(s.length, len - done);
			const bool first = s.addr >= r1.buf.addr() &&
					   s.addr < r1.buf.addr(r1.buf.size());
			const Region &r = first ? r1 : r2;
			std::copy_n(msg.begin() + done, k,
				    img[first ? 0 : 1].begin() +
					    long(s.addr - r.buf.addr()));
			done += k;
		}
		return img;
	};

	// Exactly as long as the scatter list, then shorter (4100 bytes:
	// the last SGE used partly, the rest of it untouched).
	uint64_t id = 1;
	for (uint32_t len : {total, 4100u}) {
		SCOPED_TRACE(testing::Message() << len << " bytes");
		const auto img = expect(len);
		ASSERT_EQ(post_recv(b_.qp.get(), id + 100, rs, 4), 0);
		ibv_sge gs[5];
		std::copy(std::begin(ss), std::end(ss), gs);
		int n = 5;
		if (len != total) {
			// 4100 = 1 + 1023 + 2049 + 3 + 1024
			gs[4].length = 1024;
		}
		ASSERT_EQ(post(a_.qp.get(), {send_wr(id, gs, n)}), 0);
		ASSERT_TRUE(completes(a_.scq.get(),
				      {ok(id, IBV_WC_SEND, a_.qp.get())}));
		ASSERT_TRUE(completes(b_.rcq.get(), {ok(id + 100, IBV_WC_RECV,
							 b_.qp.get(), len)}));
		EXPECT_TRUE(same(r1.buf.data(), img[0].data(), img[0].size(),
				 "first receive MR"));
		EXPECT_TRUE(same(r2.buf.data(), img[1].data(), img[1].size(),
				 "second receive MR"));
		fill(r1.buf.data(), r1.buf.size(), kSentinelSeed);
		fill(r2.buf.data(), r2.buf.size(), kSentinelSeed);
		id++;
	}

	// RDMA WRITE gathers the same way into one remote range ...
	{
		const std::vector<uint8_t> before = r2.buf.image();
		std::vector<uint8_t> want = before;
		std::copy(msg.begin(), msg.end(), want.begin() + 33);
		ASSERT_EQ(post(a_.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_WRITE, ss, 5,
					r2.buf.addr(33), r2.mr->rkey)}),
			  0);
		ASSERT_TRUE(completes(a_.scq.get(), {ok(id, IBV_WC_RDMA_WRITE,
							 a_.qp.get())}));
		EXPECT_TRUE(same(r2.buf.data(), want.data(), want.size(),
				 "RDMA WRITE target"));
		id++;
	}
	// ... and RDMA READ scatters one remote range like a receive.
	{
		// From a third region with its own contents into rs.
		fill(r1.buf.data(), r1.buf.size(), kSentinelSeed);
		Region far(pd_.get(), 16384, kMrAll, 77);
		ASSERT_TRUE(far) << std::strerror(errno);
		msg.assign(far.buf.data() + 5, far.buf.data() + 5 + total);
		const auto img = expect(total);
		ASSERT_EQ(post(a_.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_READ, rs, 4,
					far.buf.addr(5), far.mr->rkey)}),
			  0);
		ASSERT_TRUE(completes(a_.scq.get(),
				      {ok(id, IBV_WC_RDMA_READ, a_.qp.get(),
					  total)}));
		EXPECT_TRUE(same(r1.buf.data(), img[0].data(), img[0].size(),
				 "READ into the first MR"));
		EXPECT_TRUE(same(r2.buf.data(), img[1].data(), img[1].size(),
				 "READ into the second MR"));
	}
	EXPECT_TRUE(quiet(b_.rcq.get()));
}

TEST_P(RcData, RdmaWriteOfEverySize)
{
	// The target starts 64 bytes into the remote MR (remote addresses
	// are virtual addresses, not offsets); 64 bytes either side of the
	// message must stay untouched.
	Region src(pd_.get(), (1u << 20) + 128, kMrAll);
	Region dst(pd_.get(), (1u << 20) + 128, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	uint64_t id = 1;
	for (uint32_t n : kSizes) {
		SCOPED_TRACE(testing::Message() << n << " bytes");
		fill(src.buf.data(), n, n + 1);
		fill(dst.buf.data(), dst.buf.size(), kSentinelSeed);
		std::vector<uint8_t> want = dst.buf.image();
		std::copy_n(src.buf.data(), n, want.begin() + 64);

		ibv_sge s = src.sge(0, n);
		ASSERT_EQ(post(a_.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_WRITE, &s, n ? 1 : 0,
					dst.buf.addr(64), dst.mr->rkey)}),
			  0);
		ASSERT_TRUE(completes(a_.scq.get(), {ok(id, IBV_WC_RDMA_WRITE,
							 a_.qp.get())}));
		ASSERT_TRUE(same(dst.buf.data(), want.data(), want.size(),
				 "remote memory"));
		id++;
	}
	// RDMA WRITE consumes no receive and completes nothing remotely.
	EXPECT_TRUE(quiet(b_.rcq.get()));
	EXPECT_TRUE(quiet(b_.scq.get(), 0ms));
}

TEST_P(RcData, RdmaReadOfEverySize)
{
	Region remote(pd_.get(), (1u << 20) + 128, kMrAll);
	Region local(pd_.get(), (1u << 20) + 128, kMrAll);
	ASSERT_TRUE(remote && local) << std::strerror(errno);

	uint64_t id = 1;
	for (uint32_t n : kSizes) {
		SCOPED_TRACE(testing::Message() << n << " bytes");
		fill(remote.buf.data(), remote.buf.size(), n + 2);
		const std::vector<uint8_t> rbefore = remote.buf.image();
		fill(local.buf.data(), local.buf.size(), kSentinelSeed);
		std::vector<uint8_t> want = local.buf.image();
		std::copy_n(remote.buf.data() + 64, n, want.begin() + 32);

		ibv_sge s = local.sge(32, n);
		ASSERT_EQ(post(a_.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_READ, &s, n ? 1 : 0,
					remote.buf.addr(64), remote.mr->rkey)}),
			  0);
		ASSERT_TRUE(completes(a_.scq.get(), {ok(id, IBV_WC_RDMA_READ,
							 a_.qp.get(), n)}));
		ASSERT_TRUE(same(local.buf.data(), want.data(), want.size(),
				 "local memory"));
		ASSERT_TRUE(same(remote.buf.data(), rbefore.data(),
				 rbefore.size(), "remote memory"));
		id++;
	}
	EXPECT_TRUE(quiet(b_.rcq.get()));
}

INSTANTIATE_TEST_SUITE_P(
	Paths, RcData,
	::testing::Values(Path{"Ipv4Mtu1024", GidKind::Ipv4, IBV_MTU_1024},
			  Path{"Ipv4Mtu4096", GidKind::Ipv4, IBV_MTU_4096},
			  Path{"Ipv6Mtu1024", GidKind::Ipv6, IBV_MTU_1024}),
	[](const ::testing::TestParamInfo<Path> &i) {
		return std::string(i.param.name);
	});

// ---------------------------------------------------------------------
// Send variants.

TEST_F(Rc, InlineSendsCopyTheDataAtPostTime)
{
	End a, b;
	Caps c;
	c.inline_data = 256;
	ASSERT_TRUE(pair(a, b, c));
	const uint32_t max = a.cap.max_inline_data;
	ASSERT_GE(max, 256u);
	Region dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(dst) << std::strerror(errno);
	ibv_sge rs = dst.sge(0, 4096);

	// Inline data comes from unregistered memory: the lkey is not
	// checked (ibv_post_send(3)).  The source is scribbled over as soon
	// as the post returns; the receiver must see what it was then.
	auto check = [&](uint64_t id, std::vector<ibv_send_wr> wr,
			 const std::vector<uint8_t> &msg,
			 std::vector<std::vector<uint8_t>> &srcs,
			 ibv_wc_opcode sop, unsigned sflags,
			 std::optional<uint32_t> imm) {
		fill(dst.buf.data(), 4096, kSentinelSeed);
		std::vector<uint8_t> want = dst.buf.image();
		std::copy(msg.begin(), msg.end(), want.begin());
		ASSERT_EQ(post_recv(b.qp.get(), id + 100, &rs, 1), 0);
		ASSERT_EQ(post(a.qp.get(), wr), 0);
		for (auto &s : srcs)
			std::fill(s.begin(), s.end(), 0xee);
		ASSERT_TRUE(completes(a.scq.get(),
				      {ok(id, sop, a.qp.get(), {}, sflags)}));
		ASSERT_TRUE(completes(b.rcq.get(),
				      {ok(id + 100, IBV_WC_RECV, b.qp.get(),
					  uint32_t(msg.size()),
					  imm ? IBV_WC_WITH_IMM : 0, imm)}));
		ASSERT_TRUE(same(dst.buf.data(), want.data(), 4096,
				 "receive buffer"));
	};

	uint64_t id = 1;
	for (uint32_t n : {1u, 63u, 64u, max}) {
		SCOPED_TRACE(testing::Message() << n << " bytes inline");
		std::vector<std::vector<uint8_t>> srcs(1, std::vector<uint8_t>(n));
		fill(srcs[0].data(), n, 500 + n);
		const std::vector<uint8_t> msg = srcs[0];
		ibv_sge s = {uintptr_t(srcs[0].data()), n, 0};
		check(id, {send_wr(id, &s, 1,
				   IBV_SEND_SIGNALED | IBV_SEND_INLINE)},
		      msg, srcs, IBV_WC_SEND, 0, std::nullopt);
		if (HasFatalFailure())
			return;
		id++;
	}
	{
		SCOPED_TRACE("three SGEs inline, with immediate data");
		std::vector<std::vector<uint8_t>> srcs = {
			std::vector<uint8_t>(5), std::vector<uint8_t>(100),
			std::vector<uint8_t>(max - 105)};
		std::vector<uint8_t> msg;
		ibv_sge s[3];
		for (int i = 0; i < 3; i++) {
			fill(srcs[i].data(), srcs[i].size(), 900 + i);
			msg.insert(msg.end(), srcs[i].begin(), srcs[i].end());
			s[i] = {uintptr_t(srcs[i].data()),
				uint32_t(srcs[i].size()), 0};
		}
		ibv_send_wr wr = send_wr(id, s, 3,
					 IBV_SEND_SIGNALED | IBV_SEND_INLINE,
					 IBV_WR_SEND_WITH_IMM);
		wr.imm_data = htobe32(0x1a2b3c4d);
		check(id, {wr}, msg, srcs, IBV_WC_SEND, IBV_WC_WITH_IMM,
		      0x1a2b3c4d);
		if (HasFatalFailure())
			return;
		id++;
	}
	{
		SCOPED_TRACE("inline RDMA WRITE");
		std::vector<uint8_t> src(max);
		fill(src.data(), max, 1234);
		const std::vector<uint8_t> msg = src;
		fill(dst.buf.data(), 4096, kSentinelSeed);
		std::vector<uint8_t> want = dst.buf.image();
		std::copy(msg.begin(), msg.end(), want.begin() + 1000);
		ibv_sge s = {uintptr_t(src.data()), max, 0};
		ASSERT_EQ(post(a.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_WRITE, &s, 1,
					dst.buf.addr(1000), dst.mr->rkey,
					IBV_SEND_SIGNALED | IBV_SEND_INLINE)}),
			  0);
		std::fill(src.begin(), src.end(), 0xee);
		ASSERT_TRUE(completes(a.scq.get(), {ok(id, IBV_WC_RDMA_WRITE,
							 a.qp.get())}));
		ASSERT_TRUE(same(dst.buf.data(), want.data(), 4096,
				 "RDMA WRITE target"));
		id++;
	}
	{
		SCOPED_TRACE("one byte more than max_inline_data");
		std::vector<uint8_t> src(max + 1);
		ibv_sge s = {uintptr_t(src.data()), max + 1, 0};
		ibv_send_wr *bad = nullptr;
		ibv_send_wr wr = send_wr(id, &s, 1,
					 IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		const int r = post(a.qp.get(), {wr}, &bad);
		EXPECT_EQ(r, EINVAL) << "ibv_post_send returned " << err_str(r);
		EXPECT_NE(bad, nullptr);
		EXPECT_TRUE(quiet(a.scq.get()));
		// The refused WR did not break the QP.
		EXPECT_EQ(query_state(a.qp.get()), IBV_QPS_RTS);
	}
}

TEST_F(Rc, SendWithImmediateData)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));
	Region src(pd_.get(), 8192, kMrAll, 3), dst(pd_.get(), 8192, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	uint64_t id = 1;
	// 0 bytes (ImmDt alone), one packet, and 5000 bytes: the immediate
	// data travels in the last packet of the message.
	for (uint32_t n : {0u, 100u, 5000u}) {
		SCOPED_TRACE(testing::Message() << n << " bytes");
		const uint32_t imm = 0xdeadbe00 + n;
		fill(dst.buf.data(), 8192, kSentinelSeed);
		std::vector<uint8_t> want = dst.buf.image();
		std::copy_n(src.buf.data(), n, want.begin());
		ibv_sge rs = dst.sge(0, 8192), ss = src.sge(0, n);
		ASSERT_EQ(post_recv(b.qp.get(), id + 100, &rs, 1), 0);
		ibv_send_wr wr = send_wr(id, &ss, n ? 1 : 0, IBV_SEND_SIGNALED,
					 IBV_WR_SEND_WITH_IMM);
		wr.imm_data = htobe32(imm);
		ASSERT_EQ(post(a.qp.get(), {wr}), 0);
		ASSERT_TRUE(completes(a.scq.get(), {ok(id, IBV_WC_SEND, a.qp.get(),
							{}, IBV_WC_WITH_IMM)}));
		ASSERT_TRUE(completes(b.rcq.get(),
				      {ok(id + 100, IBV_WC_RECV, b.qp.get(), n,
					  IBV_WC_WITH_IMM, imm)}));
		ASSERT_TRUE(same(dst.buf.data(), want.data(), 8192,
				 "receive buffer"));
		id++;
	}
}

TEST_F(Rc, SolicitedEventOnlyForSolicitedMessages)
{
	// b's receive CQ is armed for solicited completions only: a message
	// without IBV_SEND_SOLICITED completes there without an event, the
	// next one with the flag wakes the channel.
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);
	End a, b;
	ASSERT_TRUE(make_end(a, pd_.get()));
	ASSERT_TRUE(make_end(b, pd_.get(), {}, nullptr, ch.get()));
	ASSERT_TRUE(connect(a.qp.get(), b->qp_num, gid_, gid_index_,
			    with_mtu({})));
	ASSERT_TRUE(connect(b.qp.get(), a->qp_num, gid_, gid_index_,
			    with_mtu({})));

	ASSERT_EQ(post_recv(b.qp.get(), 101, nullptr, 0), 0);
	ASSERT_EQ(post_recv(b.qp.get(), 102, nullptr, 0), 0);
	ASSERT_EQ(post_recv(b.qp.get(), 103, nullptr, 0), 0);
	ASSERT_EQ(ibv_req_notify_cq(b.rcq.get(), 1), 0);

	ASSERT_EQ(post(a.qp.get(), {send_wr(1, nullptr, 0)}), 0);
	ASSERT_TRUE(completes(a.scq.get(), {ok(1, IBV_WC_SEND, a.qp.get())}));
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(101, IBV_WC_RECV, b.qp.get(), 0u)}));
	EXPECT_TRUE(no_cq_event(ch.get())) << "for an unsolicited message";

	ibv_send_wr wr = send_wr(2, nullptr, 0,
				 IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
				 IBV_WR_SEND_WITH_IMM);
	wr.imm_data = htobe32(7);
	ASSERT_EQ(post(a.qp.get(), {wr}), 0);
	ASSERT_TRUE(cq_event(ch.get(), b.rcq.get())) << "solicited message";
	ASSERT_TRUE(completes(b.rcq.get(), {ok(102, IBV_WC_RECV, b.qp.get(),
					       0u, IBV_WC_WITH_IMM, 7u)}));
	ASSERT_TRUE(completes(a.scq.get(), {ok(2, IBV_WC_SEND, a.qp.get(), {},
					       IBV_WC_WITH_IMM)}));

	// Re-armed for any completion, an unsolicited one wakes it too.
	ASSERT_EQ(ibv_req_notify_cq(b.rcq.get(), 0), 0);
	ASSERT_EQ(post(a.qp.get(), {send_wr(3, nullptr, 0)}), 0);
	ASSERT_TRUE(cq_event(ch.get(), b.rcq.get())) << "after arming for all";
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(103, IBV_WC_RECV, b.qp.get(), 0u)}));
	ASSERT_TRUE(completes(a.scq.get(), {ok(3, IBV_WC_SEND, a.qp.get())}));
}

TEST_F(Rc, OnlySignaledSendsComplete)
{
	End a, b;
	ASSERT_TRUE(pair(a, b));
	for (uint64_t i = 1; i <= 6; i++)
		ASSERT_EQ(post_recv(b.qp.get(), 100 + i, nullptr, 0), 0);

	// 1, 2 unsignaled, 3 signaled, 4 unsignaled, 5 signaled.
	std::vector<ibv_send_wr> wrs;
	for (uint64_t i = 1; i <= 5; i++)
		wrs.push_back(send_wr(i, nullptr, 0,
				      i == 3 || i == 5 ? IBV_SEND_SIGNALED : 0));
	ASSERT_EQ(post(a.qp.get(), wrs), 0);
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(101, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(102, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(103, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(104, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(105, IBV_WC_RECV, b.qp.get(), 0u)}));
	ASSERT_TRUE(completes(a.scq.get(), {ok(3, IBV_WC_SEND, a.qp.get()),
					    ok(5, IBV_WC_SEND, a.qp.get())}));
	EXPECT_TRUE(quiet(a.scq.get()));

	// An unsignaled send on its own: nothing, until a signaled one.
	ASSERT_EQ(post(a.qp.get(), {send_wr(6, nullptr, 0, 0)}), 0);
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(106, IBV_WC_RECV, b.qp.get(), 0u)}));
	EXPECT_TRUE(quiet(a.scq.get()));
}

TEST_F(Rc, SqSigAllSignalsEverySend)
{
	End a, b;
	Caps c;
	c.sq_sig_all = 1;
	ASSERT_TRUE(pair(a, b, c));
	for (uint64_t i = 1; i <= 3; i++)
		ASSERT_EQ(post_recv(b.qp.get(), 100 + i, nullptr, 0), 0);
	ASSERT_EQ(post(a.qp.get(), {send_wr(1, nullptr, 0, 0),
				    send_wr(2, nullptr, 0, 0),
				    send_wr(3, nullptr, 0)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(), {ok(1, IBV_WC_SEND, a.qp.get()),
					    ok(2, IBV_WC_SEND, a.qp.get()),
					    ok(3, IBV_WC_SEND, a.qp.get())}));
	ASSERT_TRUE(completes(b.rcq.get(),
			      {ok(101, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(102, IBV_WC_RECV, b.qp.get(), 0u),
			       ok(103, IBV_WC_RECV, b.qp.get(), 0u)}));
}

TEST_F(Rc, CompletionChannelWakesUp)
{
	Channel ch(ibv_create_comp_channel(ctx_.get()));
	ASSERT_TRUE(ch) << std::strerror(errno);
	End a, b;
	ASSERT_TRUE(make_end(a, pd_.get(), {}, ch.get()));
	ASSERT_TRUE(make_end(b, pd_.get()));
	ASSERT_TRUE(connect(a.qp.get(), b->qp_num, gid_, gid_index_,
			    with_mtu({})));
	ASSERT_TRUE(connect(b.qp.get(), a->qp_num, gid_, gid_index_,
			    with_mtu({})));
	Region src(pd_.get(), 4096, kMrAll), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);

	for (uint64_t id = 1; id <= 2; id++) {
		SCOPED_TRACE(id);
		ASSERT_EQ(ibv_req_notify_cq(a.scq.get(), 0), 0);
		EXPECT_TRUE(no_cq_event(ch.get(), 0ms));
		ibv_sge s = src.sge(0, 100);
		ASSERT_EQ(post(a.qp.get(),
			       {rdma_wr(id, IBV_WR_RDMA_WRITE, &s, 1,
					dst.buf.addr(), dst.mr->rkey)}),
			  0);
		ASSERT_TRUE(cq_event(ch.get(), a.scq.get()));
		ASSERT_TRUE(completes(a.scq.get(), {ok(id, IBV_WC_RDMA_WRITE,
							a.qp.get())}));
	}
	// Not re-armed: the next completion raises no event.
	ibv_sge s = src.sge(0, 100);
	ASSERT_EQ(post(a.qp.get(), {rdma_wr(3, IBV_WR_RDMA_WRITE, &s, 1,
					    dst.buf.addr(), dst.mr->rkey)}),
		  0);
	ASSERT_TRUE(completes(a.scq.get(),
			      {ok(3, IBV_WC_RDMA_WRITE, a.qp.get())}));
	EXPECT_TRUE(no_cq_event(ch.get()));
}

} // namespace
} // namespace sroce::test
