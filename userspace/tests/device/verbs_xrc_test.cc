// XRC, the control path (part of verbs_device_tests; the fixture and the
// expectations are in verbs_xrc_fixture.h): XRC domains, anonymous and
// named by a file, shared between two contexts of the device; XRC SRQs and
// their numbers; the XRC QP types and their state transitions; a TGT QP
// created in one context and opened by number in another, receiving into
// that context's SRQ, and living as long as either holds it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fd.h"
#include "verbs_xrc_fixture.h"

namespace sroce::test {
namespace {

using namespace xrc;
using namespace std::chrono_literals;

// A new empty file for an XRC domain, already unlinked: its inode names
// the domain while the descriptor is open.
Fd domain_file()
{
	char path[] = "/tmp/sroce-xrcd-XXXXXX";
	Fd f(mkstemp(path));
	if (f.get() >= 0)
		unlink(path);
	return f;
}

TEST_F(Xrc, DeviceReportsXrc)
{
	EXPECT_TRUE(dev_.device_cap_flags & IBV_DEVICE_XRC);
	// XRC rides on the SRQs; the device has some.
	EXPECT_GT(dev_.max_srq, 0);
}

TEST_F(Xrc, DomainsOpenAndClose)
{
	const auto before = debugfs_counts();
	{
		// Anonymous domains (fd -1): each a new one.
		Xrcd a, b;
		ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, a), 0);
		ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, b), 0);
		EXPECT_NE(a.get(), b.get());

		// A domain named by a file: it must be created (O_CREAT)
		// before it can be opened, only once with O_EXCL, and then
		// opened again without O_CREAT (ib_core: EAGAIN, EINVAL).
		Fd f = domain_file();
		ASSERT_GE(f.get(), 0) << std::strerror(errno);
		Xrcd c, d, e;
		EXPECT_EQ(open_xrcd(ctx_.get(), f.get(), 0, c), EAGAIN);
		ASSERT_EQ(open_xrcd(ctx_.get(), f.get(), O_CREAT, c), 0);
		EXPECT_EQ(open_xrcd(ctx_.get(), f.get(), O_CREAT | O_EXCL, d),
			  EINVAL);
		ASSERT_EQ(open_xrcd(ctx_.get(), f.get(), 0, e), 0);
		// A descriptor that is not open: EBADF.
		Fd g(dup(f.get()));
		ASSERT_GE(g.get(), 0);
		const int closed = g.get();
		g.reset();
		EXPECT_EQ(open_xrcd(ctx_.get(), closed, O_CREAT, d), EBADF);

		EXPECT_EQ(ibv_close_xrcd(e.release()), 0);
		EXPECT_EQ(ibv_close_xrcd(c.release()), 0);
		EXPECT_EQ(ibv_close_xrcd(a.release()), 0);
	}
	EXPECT_EQ(debugfs_counts(), before) << "every object count back";
}

TEST_F(Xrc, DomainInUseRefusesToClose)
{
	Xrcd x;
	ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, x), 0);
	{
		XrcSrq s;
		ASSERT_EQ(create_srq(ctx_.get(),
				     xrc_srq_attr(x.get(), rcq_.get(),
						  pd_.get(), 8),
				     s),
			  0);
		EXPECT_EQ(ibv_close_xrcd(x.get()), EBUSY) << "its XRC SRQ";
	}
	{
		Qp t = make_tgt(ctx_.get(), x.get());
		ASSERT_TRUE(t) << std::strerror(errno);
		EXPECT_EQ(ibv_close_xrcd(x.get()), EBUSY) << "its TGT QP";
	}
	EXPECT_EQ(ibv_close_xrcd(x.release()), 0);
}

TEST_F(Xrc, SrqsHaveDistinctNumbers)
{
	const long srqs = debugfs_count("srqs");
	Xrcd other;
	ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, other), 0);
	XrcSrq b, c;
	ASSERT_EQ(create_srq(ctx_.get(),
			     xrc_srq_attr(xrcd_.get(), rcq_.get(), pd_.get(), 5,
					  3),
			     b),
		  0);
	ASSERT_EQ(create_srq(ctx_.get(),
			     xrc_srq_attr(other.get(), rcq_.get(), pd_.get(),
					  8),
			     c),
		  0);
	EXPECT_EQ(debugfs_count("srqs"), srqs + 2);
	const uint32_t nb = srq_num(b.get()), nc = srq_num(c.get());
	EXPECT_NE(nb, 0u);
	EXPECT_NE(nc, 0u);
	EXPECT_NE(nb, srqn_);
	EXPECT_NE(nc, srqn_);
	EXPECT_NE(nb, nc);
	EXPECT_LT(nb, 1u << 24) << "an SRQ number has 24 bits";
	EXPECT_LT(nc, 1u << 24);
	// ibv_get_srq_num() keeps returning the same number.
	EXPECT_EQ(srq_num(b.get()), nb);

	// Query and capacity as for a basic SRQ.
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(b.get(), &q), 0);
	EXPECT_GE(q.max_wr, 5u);
	EXPECT_GE(q.max_sge, 3u);
	EXPECT_EQ(q.srq_limit, 0u);
	Region mem(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(mem) << std::strerror(errno);
	for (uint32_t i = 0; i < q.max_wr; i++)
		ASSERT_EQ(post_srq(b.get(), i, mem.sge(0, 64)), 0) << i;
	EXPECT_EQ(post_srq(b.get(), 99, mem.sge(0, 64)), ENOMEM);

	b.reset();
	c.reset();
	EXPECT_EQ(debugfs_count("srqs"), srqs);
}

TEST_F(Xrc, SrqNeedsItsDomainCqAndPd)
{
	const long srqs = debugfs_count("srqs");
	const ibv_srq_init_attr_ex good =
		xrc_srq_attr(xrcd_.get(), rcq_.get(), pd_.get(), 8);
	XrcSrq s;
	// The pointers stay valid: only the comp_mask leaves them out, as
	// libibverbs reads it (ibv_cmd_create_srq_ex(): EINVAL).
	for (uint32_t bit : {uint32_t(IBV_SRQ_INIT_ATTR_XRCD),
			     uint32_t(IBV_SRQ_INIT_ATTR_CQ),
			     uint32_t(IBV_SRQ_INIT_ATTR_PD)}) {
		ibv_srq_init_attr_ex a = good;
		a.comp_mask &= ~bit;
		EXPECT_EQ(create_srq(ctx_.get(), a, s), EINVAL)
			<< "comp_mask without 0x" << std::hex << bit;
	}
	// Capacities are checked as for a basic SRQ.
	ibv_srq_init_attr_ex a = good;
	a.attr.max_wr = 0;
	EXPECT_EQ(create_srq(ctx_.get(), a, s), EINVAL) << "max_wr 0";
	a.attr.max_wr = uint32_t(dev_.max_srq_wr) + 1;
	EXPECT_EQ(create_srq(ctx_.get(), a, s), EINVAL) << "max_wr too large";
	a = good;
	a.attr.max_sge = uint32_t(dev_.max_srq_sge) + 1;
	EXPECT_EQ(create_srq(ctx_.get(), a, s), EINVAL) << "max_sge too large";
	EXPECT_EQ(debugfs_count("srqs"), srqs) << "nothing made";
	// And the good one works.
	EXPECT_EQ(create_srq(ctx_.get(), good, s), 0);
}

TEST_F(Xrc, QpTypesTakeTheirOwnAttributes)
{
	const long qps = debugfs_count("qps");
	Cq scq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(scq) << std::strerror(errno);
	// Both ways of making an INI: the PD alone (ibv_create_qp()) and
	// the extended send API (ibv_create_qp_ex()).
	Qp ini = make_ini(pd_.get(), scq.get());
	ASSERT_TRUE(ini) << std::strerror(errno);
	Qp inix = make_ini(pd_.get(), scq.get(), kIniOps);
	ASSERT_TRUE(inix) << std::strerror(errno);
	Qp tgt = make_tgt(ctx_.get(), xrcd_.get());
	ASSERT_TRUE(tgt) << std::strerror(errno);
	EXPECT_EQ(ini->qp_type, IBV_QPT_XRC_SEND);
	EXPECT_EQ(inix->qp_type, IBV_QPT_XRC_SEND);
	EXPECT_EQ(tgt->qp_type, IBV_QPT_XRC_RECV);
	EXPECT_NE(ibv_qp_to_qp_ex(inix.get()), nullptr);
	EXPECT_EQ(debugfs_count("qps"), qps + 3);
	EXPECT_EQ(query_state(ini.get()), IBV_QPS_RESET);
	EXPECT_EQ(query_state(tgt.get()), IBV_QPS_RESET);

	// The TGT: INIT, RTR as an RC responder, then RTS with a timeout
	// and an SQ PSN, as ibv_xsrq_pingpong does.
	Link l;
	ASSERT_TRUE(connect_tgt(tgt.get(), ini->qp_num, gid_, gid_index_, l));
	EXPECT_EQ(query_state(tgt.get()), IBV_QPS_RTR);
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.sq_psn = 0x42;
	ASSERT_TRUE(modify(tgt.get(), a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
			   "TGT RTR->RTS"));
	EXPECT_EQ(query_state(tgt.get()), IBV_QPS_RTS);

	// The INI: a requester only.  (ib_core's uverbs drops the responder
	// attributes of an INI's modify, so there is nothing to refuse.)
	l.access = 0;
	ASSERT_TRUE(to_init(ini.get(), l));
	ASSERT_TRUE(ini_to_rtr(ini.get(), tgt->qp_num, gid_, gid_index_, l));
	ASSERT_TRUE(to_rts(ini.get(), l));
	EXPECT_EQ(query_state(ini.get()), IBV_QPS_RTS);

	// Neither has a receive queue, and the TGT no send queue: a queue a
	// QP has not got refuses every WR with EINVAL, as the RQ of a QP on
	// an SRQ does (sroce's provider; mlx5 says ENOMEM, a queue of no
	// slots).
	ibv_recv_wr rwr{}, *rbad = nullptr;
	EXPECT_EQ(ibv_post_recv(ini.get(), &rwr, &rbad), EINVAL) << "INI";
	EXPECT_EQ(rbad, &rwr);
	rbad = nullptr;
	EXPECT_EQ(ibv_post_recv(tgt.get(), &rwr, &rbad), EINVAL) << "TGT";
	EXPECT_EQ(rbad, &rwr);
	ibv_send_wr swr{}, *sbad = nullptr;
	swr.opcode = IBV_WR_SEND;
	EXPECT_EQ(ibv_post_send(tgt.get(), &swr, &sbad), EINVAL) << "TGT";
	EXPECT_EQ(sbad, &swr);

	// The pair carries a message, the TGT in RTS.
	Region src(pd_.get(), 4096, kMrAll, 1), dst(pd_.get(), 4096, kMrAll);
	ASSERT_TRUE(src && dst) << std::strerror(errno);
	ASSERT_EQ(post_srq(srq_.get(), 7, dst.sge(0, 4096)), 0);
	ASSERT_EQ(post(ini.get(), Api::PostSend,
		       {xsend(1, srqn_, {src.sge(0, 3000)})}),
		  0);
	EXPECT_TRUE(completes(scq.get(), {ok(1, IBV_WC_SEND, ini.get())}));
	EXPECT_TRUE(completes(rcq_.get(),
			      {ok(7, IBV_WC_RECV, tgt.get(), 3000u)}));
	std::vector<uint8_t> want = patterned(4096).image();
	std::copy_n(src.buf.data(), 3000, want.begin());
	EXPECT_TRUE(same(dst.buf.data(), want.data(), 4096, "receive buffer"));

	ini.reset();
	inix.reset();
	tgt.reset();
	EXPECT_EQ(debugfs_count("qps"), qps);
}

// A second context of the device opens the same file's domain: a TGT QP
// created in the first is opened by number in the second (ibv_open_qp),
// connected through the second's handle, and delivers into an SRQ of the
// second context; the real QP lives while either context holds it.
TEST_F(Xrc, ContextsShareADomainThroughAFile)
{
	const auto before = debugfs_counts();
	{
		Fd f = domain_file();
		ASSERT_GE(f.get(), 0) << std::strerror(errno);
		Context ctx2 = open_device(test_device_name());
		ASSERT_TRUE(ctx2);
		Pd pd2(ibv_alloc_pd(ctx2.get()));
		Cq cq2(ibv_create_cq(ctx2.get(), 64, nullptr, nullptr, 0));
		ASSERT_TRUE(pd2 && cq2) << std::strerror(errno);
		Xrcd x1, x2;
		ASSERT_EQ(open_xrcd(ctx_.get(), f.get(), O_CREAT, x1), 0);
		// Found, not created: the second context need not create.
		ASSERT_EQ(open_xrcd(ctx2.get(), f.get(), 0, x2), 0);
		XrcSrq s2;
		ASSERT_EQ(create_srq(ctx2.get(),
				     xrc_srq_attr(x2.get(), cq2.get(),
						  pd2.get(), 16),
				     s2),
			  0);
		const uint32_t n2 = srq_num(s2.get());

		Cq scq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
		ASSERT_TRUE(scq) << std::strerror(errno);
		Qp ini = make_ini(pd_.get(), scq.get());
		ASSERT_TRUE(ini) << std::strerror(errno);

		const long qps = debugfs_count("qps");
		Qp t1 = make_tgt(ctx_.get(), x1.get());
		ASSERT_TRUE(t1) << std::strerror(errno);
		Qp t2;
		ASSERT_EQ(open_tgt(ctx2.get(), x2.get(), t1->qp_num, t2), 0);
		EXPECT_EQ(t2->qp_num, t1->qp_num);
		EXPECT_EQ(t2->qp_type, IBV_QPT_XRC_RECV);
		EXPECT_EQ(debugfs_count("qps"), qps + 1) << "one QP, two handles";
		// The opened handle moves the QP; the creator's sees it.
		ASSERT_TRUE(connect_tgt(t2.get(), ini->qp_num, gid_,
					gid_index_));
		EXPECT_EQ(query_state(t1.get()), IBV_QPS_RTR);
		ASSERT_TRUE(connect_ini(ini.get(), t1->qp_num, gid_,
					gid_index_));

		Region src(pd_.get(), 8192, kMrAll, 3);
		Region dst(pd2.get(), 2 * 8192, kMrAll);
		ASSERT_TRUE(src && dst) << std::strerror(errno);
		ASSERT_EQ(post_srq(s2.get(), 20, dst.sge(0, 8192)), 0);
		ASSERT_EQ(post_srq(s2.get(), 21, dst.sge(8192, 8192)), 0);
		std::vector<uint8_t> want = dst.buf.image();
		ASSERT_EQ(post(ini.get(), Api::PostSend,
			       {xsend(1, n2, {src.sge(0, 5000)}, 0xabc)}),
			  0);
		EXPECT_TRUE(completes(scq.get(),
				      {ok(1, IBV_WC_SEND, ini.get(), {},
					  IBV_WC_WITH_IMM)}));
		EXPECT_TRUE(completes(cq2.get(),
				      {ok(20, IBV_WC_RECV, t1.get(), 5000u,
					  IBV_WC_WITH_IMM, 0xabcu)}));
		std::copy_n(src.buf.data(), 5000, want.begin());

		// The creator lets go; the second context still holds it.
		t1.reset();
		EXPECT_EQ(debugfs_count("qps"), qps + 1);
		ASSERT_EQ(post(ini.get(), Api::PostSend,
			       {xsend(2, n2, {src.sge(100, 8000)})}),
			  0);
		EXPECT_TRUE(completes(scq.get(),
				      {ok(2, IBV_WC_SEND, ini.get())}));
		EXPECT_TRUE(completes(cq2.get(),
				      {ok(21, IBV_WC_RECV, t2.get(), 8000u)}));
		std::copy_n(src.buf.data() + 100, 8000, want.begin() + 8192);
		EXPECT_TRUE(same(dst.buf.data(), want.data(), want.size(),
				 "the second context's receive buffers"));
		EXPECT_TRUE(quiet(rcq_.get(), 0ms)) << "not the fixture's SRQ";

		t2.reset();
		EXPECT_EQ(debugfs_count("qps"), qps) << "the last handle went";
		ini.reset();
	}
	EXPECT_EQ(debugfs_counts(), before) << "every object count back";
}

TEST_F(Xrc, OpenQpNeedsATgtOfItsDomain)
{
	Cq scq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(scq) << std::strerror(errno);
	Qp ini = make_ini(pd_.get(), scq.get());
	Qp tgt = make_tgt(ctx_.get(), xrcd_.get());
	ASSERT_TRUE(ini && tgt) << std::strerror(errno);
	Xrcd other;
	ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, other), 0);

	// Through the same context and its own domain: fine.
	Qp same_ctx, q;
	EXPECT_EQ(open_tgt(ctx_.get(), xrcd_.get(), tgt->qp_num, same_ctx), 0);
	EXPECT_EQ(same_ctx ? same_ctx->qp_num : 0, tgt->qp_num);
	// Another domain, an INI's number, a number nothing has (ib_core's
	// ib_open_qp(): EINVAL).
	EXPECT_EQ(open_tgt(ctx_.get(), other.get(), tgt->qp_num, q), EINVAL)
		<< "a TGT of another domain";
	EXPECT_EQ(open_tgt(ctx_.get(), xrcd_.get(), ini->qp_num, q), EINVAL)
		<< "an INI";
	EXPECT_EQ(open_tgt(ctx_.get(), xrcd_.get(), 0xabcdef, q), EINVAL)
		<< "no such QP";
	EXPECT_FALSE(q);
}

} // namespace
} // namespace sroce::test
