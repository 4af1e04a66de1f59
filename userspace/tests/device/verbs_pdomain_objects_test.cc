// Parent domains with the objects verbs_pdomain_test.cc leaves out (part of
// verbs_device_tests; the fixture is in verbs_pdomain_fixture.h):
//   verbs_device_tests --gtest_filter='*PdomainM*:PdomainUd.*'
// - memory windows allocated on a parent domain and bound (type 1 by
//   ibv_bind_mw(), type 2 by an IBV_WR_BIND_MW) through an RC QP made on
//   it, then written and read through their rkeys by a peer on the plain
//   PD; a QP of another PD can neither bind nor reach them;
// - ibv_rereg_mr(IBV_REREG_MR_CHANGE_PD) to and from a parent domain: the
//   MR serves the QPs of the parent domain's PD, and no longer those of the
//   PD it left (the MrRereg fixture, verbs_mr_rereg_fixture.h);
// - a UD QP and address handles on a parent domain exchanging datagrams
//   with a UD QP of the plain PD (the Ud fixture, verbs_ud_fixture.h); an
//   AH of another PD, or of another PD's parent domain, fails the send.
// On sroce an object made through a parent domain is its PD's in the
// kernel, which knows nothing of parent domains (provider.md); libibverbs
// still records the parent domain as the object's pd.
// rdma_rxe's provider has no parent domains: there every case skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test_env.h"
#include "verbs_mr_rereg_fixture.h"
#include "verbs_mw_fixture.h"
#include "verbs_pdomain_fixture.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_ud_fixture.h"
#include "verbs_util.h"

namespace sroce::test::rc {
namespace {

// QP b, made on a parent domain with a TD (no posting lock on sroce), owns
// the memory; QP a, on the plain PD, reaches it with MrRereg's write() and
// read().
class PdomainMr : public WithParentDomains<MrRereg> {
protected:
	void SetUp() override
	{
		WithParentDomains<MrRereg>::SetUp();
		if (HasFatalFailure() || IsSkipped())
			return;
		ASSERT_NO_FATAL_FAILURE(make_td_pdom());
		ASSERT_TRUE(make_end(a_, pd_.get()));
		ASSERT_TRUE(make_end(b_, pdom_.get()));
		EXPECT_EQ(b_->pd, pdom_.get());
		ASSERT_TRUE(join(a_, b_));
	}

	// What was made through the parent domain goes before it
	// (ibv_alloc_parent_domain(3)); MrRereg's b_ and mem_ would outlive
	// it.
	void TearDown() override
	{
		mem_.mr.reset();
		b_.qp.reset();
		WithParentDomains<MrRereg>::TearDown();
	}

	// c, on the plain PD, connected to d, in pd.
	::testing::AssertionResult pair_into(End &c, End &d, ibv_pd *pd)
	{
		::testing::AssertionResult r = make_end(c, pd_.get());
		if (r)
			r = make_end(d, pd);
		if (r)
			r = join(c, d);
		return r;
	}

	// MrRereg's write(), from c instead of a.
	::testing::AssertionResult write_from(End &c, uint64_t id,
					      uint64_t raddr, uint32_t rkey,
					      uint32_t n,
					      ibv_wc_status st = IBV_WC_SUCCESS)
	{
		std::swap(a_, c);
		::testing::AssertionResult r = write(id, raddr, rkey, n, st);
		std::swap(a_, c);
		return r;
	}
};

// ---------------------------------------------------------------------
// Re-registration into and out of a parent domain.

// From another PD to the parent domain: QPs of the parent domain's PD reach
// the MR (b, made on the parent domain), QPs of the PD it left no longer
// do, and that PD can go.
TEST_F(PdomainMr, ChangePdToAParentDomain)
{
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	mem_ = Region(other.get(), kLen, kMrAll, 1);
	ASSERT_TRUE(mem_) << std::strerror(errno);

	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pdom_.get(),
			     nullptr, 0, 0);
	SKIP_IF_UNSUPPORTED("CHANGE_PD");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pdom_.get());
	std::vector<uint8_t> want = mem_.buf.image();
	ASSERT_TRUE(write(1, mem_.buf.addr(0), mem_.mr->rkey, 2048));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 2048, want.begin());
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));

	{
		End c, d;
		ASSERT_TRUE(pair_into(c, d, other.get()));
		EXPECT_TRUE(write_from(c, 2, mem_.buf.addr(4096),
				       mem_.mr->rkey, 64,
				       IBV_WC_REM_ACCESS_ERR));
	}
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
	EXPECT_EQ(ibv_dealloc_pd(other.release()), 0)
		<< "the PD the MR left";
}

// From the parent domain to another PD: a QP of that PD reaches the MR, the
// parent domain's QP b no longer does.
TEST_F(PdomainMr, ChangePdFromAParentDomain)
{
	mem_ = Region(pdom_.get(), kLen, kMrAll, 1);
	ASSERT_TRUE(mem_) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pdom_.get());
	std::vector<uint8_t> want = mem_.buf.image();
	const Buffer nine = patterned(kLen, 9);
	ASSERT_TRUE(write(1, mem_.buf.addr(0), mem_.mr->rkey, 1000));
	std::copy_n(nine.data(), 1000, want.begin());

	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD,
			     other.get(), nullptr, 0, 0);
	SKIP_IF_UNSUPPORTED("CHANGE_PD");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, other.get());
	{
		End c, d;
		ASSERT_TRUE(pair_into(c, d, other.get()));
		ASSERT_TRUE(write_from(c, 2, mem_.buf.addr(4096),
				       mem_.mr->rkey, 3000));
		std::copy_n(nine.data(), 3000, want.begin() + 4096);
	}
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
	ASSERT_TRUE(write(3, mem_.buf.addr(0), mem_.mr->rkey, 64,
			  IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
	mem_.mr.reset();
	EXPECT_EQ(ibv_dealloc_pd(other.release()), 0);
}

// A parent domain and its PD are one PD to the device: moving an MR
// between them changes only its ibv_pd, not its keys (sroce: no
// re-registration at all), and b reaches it under the same key throughout.
TEST_F(PdomainMr, ChangePdBetweenAParentDomainAndItsPdKeepsTheKeys)
{
	mem_ = Region(pd_.get(), kLen, kMrAll, 1);
	ASSERT_TRUE(mem_) << std::strerror(errno);
	const uint32_t lkey = mem_.mr->lkey, rkey = mem_.mr->rkey;

	const int r0 = rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pdom_.get(),
			     nullptr, 0, 0);
	SKIP_IF_UNSUPPORTED("CHANGE_PD");
	ASSERT_EQ(r0, 0) << std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pdom_.get());
	if (testing_sroce()) {
		EXPECT_EQ(mem_.mr->lkey, lkey);
		EXPECT_EQ(mem_.mr->rkey, rkey);
	}
	ASSERT_TRUE(write(1, mem_.buf.addr(0), mem_.mr->rkey, 100));

	ASSERT_EQ(rereg(mem_.mr.get(), IBV_REREG_MR_CHANGE_PD, pd_.get(),
			nullptr, 0, 0), 0)
		<< std::strerror(errno);
	EXPECT_EQ(mem_.mr->pd, pd_.get());
	if (testing_sroce()) {
		EXPECT_EQ(mem_.mr->rkey, rkey);
	}
	ASSERT_TRUE(write(2, mem_.buf.addr(100), mem_.mr->rkey, 100));
	std::vector<uint8_t> want = patterned(kLen, 1).image();
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 100, want.begin());
	std::copy_n(nine.data(), 100, want.begin() + 100);
	EXPECT_TRUE(same(mem_.buf.data(), want.data(), kLen, "region"));
}

// ---------------------------------------------------------------------
// Memory windows of a parent domain.

// b's memory is registered on the parent domain (with MW_BIND), and the
// windows, allocated on the parent domain, cover its bytes
// [kWinOff, kWinOff + kWinLen).
class PdomainMw : public PdomainMr {
protected:
	static constexpr uint64_t kWinOff = 1024;
	static constexpr uint32_t kWinLen = 4096;

	void SetUp() override
	{
		PdomainMr::SetUp();
		if (HasFatalFailure() || IsSkipped())
			return;
		ASSERT_NO_FATAL_FAILURE(require_windows(
			dev_, ibv_get_device_name(ctx_->device)));
		if (IsSkipped())
			return;
		mem_ = Region(pdom_.get(), kLen,
			      kMrAll | IBV_ACCESS_MW_BIND, 1);
		ASSERT_TRUE(mem_) << std::strerror(errno);
		image_ = mem_.buf.image();
	}

	Mw window(Type t)
	{
		return Mw(ibv_alloc_mw(pdom_.get(), t == Type::One ?
							    IBV_MW_TYPE_1 :
							    IBV_MW_TYPE_2));
	}

	uint64_t win(uint64_t off = 0) const
	{
		return mem_.buf.addr(kWinOff + off);
	}

	// Binds mw over the window's bytes of r with every remote right
	// through e's QP; the completion has status st.
	::testing::AssertionResult bind(End &e, ibv_mw *mw, const Region &r,
					ibv_wc_status st = IBV_WC_SUCCESS)
	{
		const int ret = post_bind(e.qp.get(), mw, r.mr.get(),
					  r.buf.addr(kWinOff), kWinLen,
					  kRemoteAll);
		if (ret)
			return ::testing::AssertionFailure()
			       << "posting the bind: " << err_str(ret);
		if (st == IBV_WC_SUCCESS)
			return completes(e.scq.get(),
					 {ok(7, IBV_WC_BIND_MW, e.qp.get())});
		return completes(e.scq.get(), {err(7, st, e.qp.get())});
	}

	// b's memory holds what the accesses so far put there, no more.
	::testing::AssertionResult as_written() const
	{
		return same(mem_.buf.data(), image_.data(), kLen,
			    "b's memory");
	}

	// Records a successful write() of n bytes at window offset off.
	void wrote(uint64_t off, uint32_t n)
	{
		const Buffer nine = patterned(kLen, 9);
		std::copy_n(nine.data(), n, image_.begin() + kWinOff + off);
	}

	std::vector<uint8_t> image_;
};

class PdomainMwTypes : public PdomainMw,
		       public ::testing::WithParamInterface<Type> {};

// Bound through b, the parent domain's QP: a, on the plain PD, WRITEs and
// READs through the window's rkey, and not past its end.
TEST_P(PdomainMwTypes, BoundThroughItsQpServesThePeer)
{
	Mw mw = window(GetParam());
	ASSERT_TRUE(mw) << "ibv_alloc_mw: " << std::strerror(errno);
	EXPECT_EQ(mw->pd, pdom_.get());
	ASSERT_TRUE(bind(b_, mw.get(), mem_));
	EXPECT_NE(mw->rkey, mem_.mr->rkey);

	ASSERT_TRUE(write(1, win(100), mw->rkey, 3000));
	wrote(100, 3000);
	EXPECT_TRUE(as_written());
	Region back(pd_.get(), kLen, kMrAll);
	ASSERT_TRUE(back) << std::strerror(errno);
	ASSERT_TRUE(read(2, back, win(), mw->rkey, kWinLen));
	EXPECT_TRUE(same(back.buf.data(), image_.data() + kWinOff, kWinLen,
			 "READ of the window"));

	ASSERT_TRUE(write(3, win(kWinLen - 16), mw->rkey, 32,
			  IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(as_written());
}

// Bound through a QP of another PD: libibverbs lets it through (it checks
// only the MR's ibv_pd against the window's), the device completes it with
// MW_BIND_ERR, and the window stays unbound.
TEST_P(PdomainMwTypes, QpOfAnotherPdCannotBindIt)
{
	Mw mw = window(GetParam());
	ASSERT_TRUE(mw) << "ibv_alloc_mw: " << std::strerror(errno);
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	End c, d;
	ASSERT_TRUE(pair_into(c, d, other.get()));
	EXPECT_TRUE(bind(d, mw.get(), mem_, IBV_WC_MW_BIND_ERR));

	ASSERT_TRUE(write(1, win(), mw->rkey, 16, IBV_WC_REM_ACCESS_ERR));
	EXPECT_TRUE(as_written());
}

// Bound through b, reached through a responder QP of another PD: refused,
// while a, whose responder is b, still gets through.
TEST_P(PdomainMwTypes, QpOfAnotherPdCannotReachIt)
{
	Mw mw = window(GetParam());
	ASSERT_TRUE(mw) << "ibv_alloc_mw: " << std::strerror(errno);
	ASSERT_TRUE(bind(b_, mw.get(), mem_));
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	{
		End c, d;
		ASSERT_TRUE(pair_into(c, d, other.get()));
		EXPECT_TRUE(write_from(c, 1, win(), mw->rkey, 64,
				       IBV_WC_REM_ACCESS_ERR));
	}
	EXPECT_TRUE(as_written());
	ASSERT_TRUE(write(2, win(), mw->rkey, 64));
	wrote(0, 64);
	EXPECT_TRUE(as_written());
}

// Reached through a responder QP made on the plain PD: a type 1 window is
// its PD's, so the parent domain's reaches it there; a type 2 window is the
// QP's it was bound through (b) and refuses every other.
TEST_P(PdomainMwTypes, QpOfThePlainPdReachesOnlyAType1Window)
{
	Mw mw = window(GetParam());
	ASSERT_TRUE(mw) << "ibv_alloc_mw: " << std::strerror(errno);
	ASSERT_TRUE(bind(b_, mw.get(), mem_));
	End c, d;
	ASSERT_TRUE(pair_into(c, d, pd_.get()));
	if (GetParam() == Type::One) {
		ASSERT_TRUE(write_from(c, 1, win(8), mw->rkey, 512));
		wrote(8, 512);
	} else {
		ASSERT_TRUE(write_from(c, 1, win(8), mw->rkey, 512,
				       IBV_WC_REM_ACCESS_ERR));
	}
	EXPECT_TRUE(as_written());
}

INSTANTIATE_TEST_SUITE_P(Pdomain, PdomainMwTypes,
			 ::testing::Values(Type::One, Type::Two),
			 [](const ::testing::TestParamInfo<Type> &i) {
				 return std::string(type_name(i.param));
			 });

// A window of the parent domain over an MR registered on the plain PD:
// the device sees one PD, and binds a type 2 window posted as a work
// request; ibv_bind_mw() compares the ibv_pd pointers before posting a
// type 1 bind and refuses it (EPERM, ibv_bind_mw(3)), nothing posted.
TEST_F(PdomainMw, MrOfThePlainPd)
{
	Region plain(pd_.get(), kLen, kMrAll | IBV_ACCESS_MW_BIND, 2);
	ASSERT_TRUE(plain) << std::strerror(errno);
	Mw one = window(Type::One), two = window(Type::Two);
	ASSERT_TRUE(one && two) << "ibv_alloc_mw: " << std::strerror(errno);

	EXPECT_EQ(post_bind(b_.qp.get(), one.get(), plain.mr.get(),
			    plain.buf.addr(kWinOff), kWinLen, kRemoteAll),
		  EPERM);
	EXPECT_TRUE(quiet(b_.scq.get()));

	ASSERT_TRUE(bind(b_, two.get(), plain));
	std::vector<uint8_t> want = plain.buf.image();
	ASSERT_TRUE(write(1, plain.buf.addr(kWinOff), two->rkey, 256));
	const Buffer nine = patterned(kLen, 9);
	std::copy_n(nine.data(), 256, want.begin() + kWinOff);
	EXPECT_TRUE(same(plain.buf.data(), want.data(), kLen, "plain region"));
}

} // namespace
} // namespace sroce::test::rc

namespace sroce::test::ud {
namespace {

// UD QP a and the fixture's AH made on a parent domain with a TD; QP b on
// the plain PD.
class PdomainUd : public WithParentDomains<Ud> {
protected:
	void SetUp() override
	{
		WithParentDomains<Ud>::SetUp();
		if (HasFatalFailure() || IsSkipped())
			return;
		ASSERT_NO_FATAL_FAILURE(make_td_pdom());
		a_ = ud_qp(pdom_.get());
		ASSERT_TRUE(a_) << std::strerror(errno);
		ah_ = make_ah(pdom_.get(), gid_);
		ASSERT_TRUE(ah_) << "ibv_create_ah: " << std::strerror(errno);
	}

	// Ud's QPs and AH may be the parent domain's: they go before it.
	void TearDown() override
	{
		a_.reset();
		b_.reset();
		ah_.reset();
		WithParentDomains<Ud>::TearDown();
	}

	// A UD QP in pd, in RTS; empty on failure.
	Qp ud_qp(ibv_pd *pd)
	{
		Qp qp = make_qp(IBV_QPT_UD, 16, pd);
		if (qp && !ud_ready(qp.get()))
			qp.reset();
		return qp;
	}
};

// Datagrams both ways between the parent domain's UD QP and the plain PD's,
// through AHs of either: to the device they are all of one PD.
TEST_F(PdomainUd, ExchangesDatagramsWithAQpOfThePlainPd)
{
	EXPECT_EQ(a_->pd, pdom_.get());
	EXPECT_EQ(ah_->pd, pdom_.get());
	for (const uint32_t len : {0u, 1u, 1000u, port_mtu()})
		ASSERT_NO_FATAL_FAILURE(exchange(len)) << len << " bytes";
	ASSERT_NO_FATAL_FAILURE(exchange(64, IBV_WR_SEND_WITH_IMM));

	ah_ = make_ah(pd_.get(), gid_);
	ASSERT_TRUE(ah_) << "ibv_create_ah: " << std::strerror(errno);
	ASSERT_NO_FATAL_FAILURE(exchange(500)) << "through the plain PD's AH";

	std::swap(a_, b_);
	ah_ = make_ah(pdom_.get(), gid_);
	ASSERT_TRUE(ah_) << "ibv_create_ah: " << std::strerror(errno);
	ASSERT_NO_FATAL_FAILURE(exchange(700))
		<< "from the plain PD's QP to the parent domain's";
}

// An AH of another PD from the parent domain's QP, and an AH of another
// PD's parent domain from the plain PD's QP, fail the send (sroce:
// LOC_QP_OP_ERR, as for an AH of another plain PD) and deliver nothing to
// a receiver waiting with a posted receive; the parent domain's own AH
// then reaches it.
TEST_F(PdomainUd, AddressHandleOfAnotherPdFails)
{
	Pd other(ibv_alloc_pd(ctx_.get()));
	ASSERT_TRUE(other) << std::strerror(errno);
	ParentDomain pother = pdom(nullptr, nullptr, other.get());
	ASSERT_TRUE(pother) << std::strerror(errno);
	Ah foreign = make_ah(other.get(), gid_);
	Ah foreign_pdom = make_ah(pother.get(), gid_);
	ASSERT_TRUE(foreign && foreign_pdom) << std::strerror(errno);
	Qp r = ud_qp(pd_.get());
	ASSERT_TRUE(r) << std::strerror(errno);
	Region src(pd_.get(), 8, 0x77), dst(pd_.get(), kGrh + 8, 0xee);
	ASSERT_EQ(post_recv(r.get(), 9, dst.sge(0, kGrh + 8)), 0);

	const std::pair<ibv_qp *, ibv_ah *> sends[] = {
		{a_.get(), foreign.get()}, {b_.get(), foreign_pdom.get()}};
	uint64_t id = 1;
	for (const auto &[qp, ah] : sends) {
		ASSERT_EQ(post_ud(qp, id, src.sge(0, 8), ah, r->qp_num, kQkey),
			  0);
		const auto s = next_wc(scq_.get());
		ASSERT_TRUE(s) << "no send completion";
		EXPECT_EQ(s->wr_id, id);
		if (testing_sroce()) {
			EXPECT_EQ(s->status, IBV_WC_LOC_QP_OP_ERR)
				<< wc_str(*s);
		} else {
			EXPECT_NE(s->status, IBV_WC_SUCCESS) << wc_str(*s);
		}
		id++;
	}
	EXPECT_FALSE(next_wc(rcq_.get(), kQuiet)) << "a datagram arrived";

	// a and b are in the error state now: a new QP of the parent domain
	Qp sender = ud_qp(pdom_.get());
	ASSERT_TRUE(sender) << std::strerror(errno);
	ASSERT_EQ(post_ud(sender.get(), id, src.sge(0, 8), ah_.get(),
			  r->qp_num, kQkey),
		  0);
	const auto sent = next_wc(scq_.get());
	ASSERT_TRUE(sent) << "no send completion";
	EXPECT_EQ(sent->status, IBV_WC_SUCCESS) << wc_str(*sent);
	const auto got = next_wc(rcq_.get());
	ASSERT_TRUE(got) << "no receive completion";
	EXPECT_EQ(got->status, IBV_WC_SUCCESS) << wc_str(*got);
	EXPECT_EQ(got->wr_id, 9u);
	EXPECT_EQ(got->src_qp, sender->qp_num);
	EXPECT_EQ(got->byte_len, kGrh + 8);
	EXPECT_TRUE(all_are(dst.mem.data() + kGrh, 8, 0x77, "payload"));
}

} // namespace
} // namespace sroce::test::ud
