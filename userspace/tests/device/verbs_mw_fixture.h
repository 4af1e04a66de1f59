// The memory-window fixtures shared by verbs_mw_test.cc and
// verbs_mw_life_test.cc: two RC QPs of the device under test connected to
// each other through its own RoCE v2 GID; QP "b" owns the memory and its
// windows (a type 2 window is bound through b), QP "a" is the remote peer
// that reads, writes and invalidates through the windows' rkeys.  The
// parent-domain cases (verbs_pdomain_objects_test.cc) bind with the same
// helpers.
#ifndef SROCE_TEST_VERBS_MW_FIXTURE_H
#define SROCE_TEST_VERBS_MW_FIXTURE_H

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {

// Which window type a case uses.
enum class Type { One, Two };

inline const char *type_name(Type t)
{
	return t == Type::One ? "Type1" : "Type2";
}

// sroce advertises both window types: asserted there (name is the
// device's), and a reason to skip the case only on another driver.  Call
// it under ASSERT_NO_FATAL_FAILURE and check IsSkipped() after it.
inline void require_windows(const ibv_device_attr &dev, const std::string &name)
{
	const unsigned need = IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	if ((unsigned(dev.device_cap_flags) & need) == need)
		return;
	ASSERT_FALSE(testing_sroce())
		<< name << " (sroce) does not advertise "
		<< "IBV_DEVICE_MEM_WINDOW and _TYPE_2B";
	GTEST_SKIP() << not_sroce("type 1 and 2B windows");
}

// Posts a bind of mw on qp: ibv_bind_mw() for type 1 (the window's rkey
// changes), an IBV_WR_BIND_MW with the next key byte for type 2 (and
// mw->rkey is updated as the man page tells applications to).  Returns the
// errno of the post.
inline int post_bind(ibv_qp *qp, ibv_mw *mw, ibv_mr *mr, uint64_t addr,
		     uint64_t len, unsigned access, uint64_t wr_id = 7,
		     unsigned flags = IBV_SEND_SIGNALED)
{
	ibv_mw_bind_info info{};
	info.mr = mr;
	info.addr = addr;
	info.length = len;
	info.mw_access_flags = access;
	if (mw->type == IBV_MW_TYPE_1) {
		ibv_mw_bind b{};
		b.wr_id = wr_id;
		b.send_flags = flags;
		b.bind_info = info;
		return ibv_bind_mw(qp, mw, &b);
	}
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = info;
	const int r = ibv_post_send(qp, &wr, &bad);
	if (!r)
		mw->rkey = wr.bind_mw.rkey;
	return r;
}

class MwTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string name;
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_, &name));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		ASSERT_NO_FATAL_FAILURE(require_windows(dev_, name));
		if (IsSkipped())
			return;
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		gid_index_ = ipv4_gid(ctx_.get(), gid_,
				      std::getenv("SROCE_IP4"));
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID on " << name;
		ASSERT_TRUE(pair(a_, b_));
	}

	// Small queues, with the extended send API where MwsEx wants it.
	Caps caps() const
	{
		return {.send_wr = 32,
			.recv_wr = 32,
			.sge = 2,
			.cqe = 64,
			.send_ops = ex_qps_ ? kExOps : 0};
	}

	::testing::AssertionResult pair(End &x, End &y)
	{
		::testing::AssertionResult r = make_end(x, pd_.get(), caps());
		if (r)
			r = make_end(y, pd_.get(), caps());
		if (r)
			r = connect(x.qp.get(), y->qp_num, gid_, gid_index_);
		if (r)
			r = connect(y.qp.get(), x->qp_num, gid_, gid_index_);
		return r;
	}

	Mw alloc(Type t)
	{
		return Mw(ibv_alloc_mw(pd_.get(), t == Type::One ?
							  IBV_MW_TYPE_1 :
							  IBV_MW_TYPE_2));
	}

	// Binds through b and checks the completion.
	::testing::AssertionResult bind(ibv_mw *mw, ibv_mr *mr, uint64_t addr,
					uint64_t len, unsigned access)
	{
		const int r = post_bind(b_.qp.get(), mw, mr, addr, len, access);
		if (r)
			return ::testing::AssertionFailure()
			       << "posting the bind: " << std::strerror(r);
		return completes(b_.scq.get(), 7, IBV_WC_SUCCESS,
				 IBV_WC_BIND_MW);
	}

	// An RDMA WRITE, READ (len bytes) or FETCH_AND_ADD (8 bytes) from a,
	// through rkey at raddr, using the local MR lmr at laddr.
	int post_rdma(ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
		      ibv_mr *lmr, uint64_t laddr, uint32_t len,
		      uint64_t wr_id = 1, uint64_t add = 0)
	{
		ibv_sge sge{laddr, len, lmr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = wr_id;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = len ? &sge : nullptr;
		wr.num_sge = len ? 1 : 0;
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = raddr;
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = add;
		} else {
			wr.wr.rdma.remote_addr = raddr;
			wr.wr.rdma.rkey = rkey;
		}
		return ibv_post_send(a_.qp.get(), &wr, &bad);
	}

	// As post_rdma(), then the requester's completion must have status st.
	::testing::AssertionResult rdma(ibv_wr_opcode op, uint32_t rkey,
					uint64_t raddr, ibv_mr *lmr,
					uint64_t laddr, uint32_t len,
					ibv_wc_status st, uint64_t add = 0)
	{
		const int r = post_rdma(op, rkey, raddr, lmr, laddr, len, 1, add);
		if (r)
			return ::testing::AssertionFailure()
			       << "ibv_post_send: " << std::strerror(r);
		const ibv_wc_opcode wop =
			op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
			op == IBV_WR_RDMA_READ	? IBV_WC_RDMA_READ :
						  IBV_WC_FETCH_ADD;
		return completes(a_.scq.get(), 1, st, wop);
	}

	// A LOCAL_INV of key posted on qp; the completion must have status st.
	::testing::AssertionResult local_inv(ibv_qp *qp, ibv_cq *cq, uint32_t key,
					     ibv_wc_status st,
					     unsigned flags = IBV_SEND_SIGNALED)
	{
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = 9;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = flags;
		wr.invalidate_rkey = key;
		const int r = ibv_post_send(qp, &wr, &bad);
		if (r)
			return ::testing::AssertionFailure()
			       << "ibv_post_send: " << std::strerror(r);
		return completes(cq, 9, st, IBV_WC_LOCAL_INV);
	}

	// a sends len bytes with SEND_WITH_INV of key into a receive of b.
	int send_inv(uint32_t key, ibv_mr *lmr, uint64_t laddr, uint32_t len,
		     ibv_mr *rmr, uint64_t raddr)
	{
		ibv_sge rsge{raddr, len, rmr->lkey};
		ibv_recv_wr rwr{}, *rbad = nullptr;
		rwr.wr_id = 20;
		rwr.sg_list = &rsge;
		rwr.num_sge = 1;
		int r = ibv_post_recv(b_.qp.get(), &rwr, &rbad);
		if (r)
			return r;
		ibv_sge sge{laddr, len, lmr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = 21;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.invalidate_rkey = key;
		return ibv_post_send(a_.qp.get(), &wr, &bad);
	}

public:
	// For bind_and_exit(), which runs in a child process.
	bool connect_to(ibv_qp *qp, uint32_t dest)
	{
		return connect(qp, dest, gid_, gid_index_);
	}

protected:
	// The QPs' extended send API (ibv_wr_*()) with the memory operations.
	static constexpr uint64_t kExOps =
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
		IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
		IBV_QP_EX_WITH_SEND_WITH_INV;
	bool ex_qps_ = false;
	// The members go in reverse: windows before MRs, QPs before the PD.
	Context ctx_;
	ibv_device_attr dev_{};
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
	End a_, b_;
};

// The arena the windows expose: 4 pages of b's memory, all in one MR with
// every right (and MW_BIND); windows cover the middle two pages.  a has
// its own page to write from and read into.
class Mws : public MwTest {
protected:
	void SetUp() override
	{
		MwTest::SetUp();
		if (IsSkipped() || HasFatalFailure())
			return;
		mr_.reset(ibv_reg_mr(pd_.get(), arena_.data(), arena_.size(),
				     IBV_ACCESS_LOCAL_WRITE | kRemoteAll |
					     IBV_ACCESS_MW_BIND));
		ASSERT_TRUE(mr_) << std::strerror(errno);
		lmr_.reset(ibv_reg_mr(pd_.get(), local_.data(), local_.size(),
				      IBV_ACCESS_LOCAL_WRITE));
		ASSERT_TRUE(lmr_) << std::strerror(errno);
	}

	uint64_t win() const { return arena_.addr(kPage); }
	static constexpr uint64_t kWinLen = 2 * kPage;

	// The write of a refused access must not have landed anywhere.
	::testing::AssertionResult arena_untouched() const
	{
		return all_are(arena_.data(), arena_.size(), kSentinel,
			       "b's memory");
	}

	Buffer arena_{4 * kPage};
	Buffer local_{kPage, 0xa1};
	Mr mr_, lmr_;
};

} // namespace sroce::test

#endif
