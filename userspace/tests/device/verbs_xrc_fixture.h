// The fixture of the XRC cases (Xrc*, part of verbs_device_tests), shared by
// verbs_xrc_test.cc (domains, XRC SRQs, XRC QPs, a domain shared between
// contexts), verbs_xrc_data_test.cc (the data path) and
// verbs_xrc_error_test.cc (what the target refuses).  Run inside a test-bed
// guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Xrc*'
// XRC initiator QPs (IBV_QPT_XRC_SEND, "INI") of the device under test send,
// through the device's own IPv4 RoCE v2 GID (same-host loopback, as in
// verbs_rc_fixture.h), to XRC target QPs (IBV_QPT_XRC_RECV, "TGT") of the
// same device; every request names the XRC SRQ it is for
// (wr.qp_type.xrc.remote_srqn, or ibv_wr_set_xrc_srqn() on an ibv_qp_ex),
// which must be of the TGT's XRC domain.  Receive completions appear on the
// CQ given when that SRQ was created, with the TGT's QP number.  Each case
// checks the completions exactly (rc::completes(): status, opcode, byte_len,
// wc_flags, imm_data, qp_num, order, each once) and every byte of the memory
// involved, including what must stay untouched.
//
// The expectations are those of the IBA's XRC transport (vol. 1: every XRC
// request carries an XRCETH naming an SRQ, which must be an XRC SRQ of the
// TGT's domain, or the request is invalid; that SRQ's PD is the one the
// request's R_Keys are checked against; its CQ gets the receive
// completions) and of the libibverbs man pages (ibv_open_xrcd(3),
// ibv_create_srq_ex(3), ibv_get_srq_num(3), ibv_create_qp_ex(3),
// ibv_open_qp(3), ibv_wr_post(3)); the attribute masks of the state
// transitions are ib_core's (ib_modify_qp_is_ok()), which sroce applies:
//   INI  RESET->INIT  P_Key index, port, access flags
//        INIT->RTR    AV, path MTU, dest QPN (the TGT's), RQ PSN; no
//                     responder attributes (it has no receive side)
//        RTR->RTS     as RC: timeout, retry counts, SQ PSN, max_rd_atomic
//   TGT  RESET->INIT  P_Key index, port, access flags
//        INIT->RTR    as RC: AV, path MTU, dest QPN (the INI's), RQ PSN,
//                     max_dest_rd_atomic, min_rnr_timer
//        RTR->RTS     timeout and SQ PSN (not needed to receive)
// A TGT receives in RTR; ibv_xsrq_pingpong moves it on to RTS, which
// Xrc.QpTypesTakeTheirOwnAttributes checks works too.
#ifndef SROCE_TEST_VERBS_XRC_FIXTURE_H
#define SROCE_TEST_VERBS_XRC_FIXTURE_H

#include <gtest/gtest.h>

#include <endian.h>
#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_rc_fixture.h"
#include "verbs_util.h"

namespace sroce::test::xrc {

using namespace std::chrono_literals;

// Memory with recognizable contents and the checks of completions, as the
// RC cases have them.
using rc::completes;
using rc::err;
using rc::fill;
using rc::kSentinelSeed;
using rc::ok;
using rc::pat;
using rc::patterned;
using rc::quiet;
using rc::Region;
using rc::same;
using rc::Want;

// Everything an INI sends in these cases, for the extended send API.
inline constexpr uint64_t kIniOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

// How an INI posts: ibv_post_send() with wr.qp_type.xrc.remote_srqn (the
// INI created with the PD alone, which libibverbs turns into
// ibv_create_qp()), or the extended send API with ibv_wr_set_xrc_srqn()
// (the INI created by ibv_create_qp_ex() with kIniOps).
enum class Api { PostSend, WrEx };

inline void PrintTo(Api a, std::ostream *os)
{
	*os << (a == Api::PostSend ? "PostSend" : "WrEx");
}

inline std::string api_name(const ::testing::TestParamInfo<Api> &i)
{
	return i.param == Api::PostSend ? "PostSend" : "WrEx";
}

// ---------------------------------------------------------------------
// Objects.

// An XRC domain of ctx for file descriptor fd (-1: none) with oflags
// (O_CREAT, O_EXCL) into out; 0 or the errno.
inline int open_xrcd(ibv_context *ctx, int fd, int oflags, Xrcd &out)
{
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = oflags;
	errno = 0;
	out.reset(ibv_open_xrcd(ctx, &a));
	if (out)
		return 0;
	return errno ? errno : -1;
}

// The attributes of an XRC SRQ of xrcd whose receive completions go to cq
// and whose memory is pd's (every comp_mask bit an XRC SRQ needs).
inline ibv_srq_init_attr_ex xrc_srq_attr(ibv_xrcd *xrcd, ibv_cq *cq,
					 ibv_pd *pd, uint32_t max_wr,
					 uint32_t max_sge = 1)
{
	ibv_srq_init_attr_ex a{};
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_XRC;
	a.xrcd = xrcd;
	a.cq = cq;
	a.pd = pd;
	a.attr.max_wr = max_wr;
	a.attr.max_sge = max_sge;
	return a;
}

// An SRQ of ctx made from a into out; 0 or the errno.
inline int create_srq(ibv_context *ctx, ibv_srq_init_attr_ex a, XrcSrq &out)
{
	errno = 0;
	out.reset(ibv_create_srq_ex(ctx, &a));
	if (out)
		return 0;
	return errno ? errno : -1;
}

// The number of XRC SRQ s (a failure, and 0, if it has none).
inline uint32_t srq_num(ibv_srq *s)
{
	uint32_t n = 0;
	const int r = ibv_get_srq_num(s, &n);
	EXPECT_EQ(r, 0) << "ibv_get_srq_num: " << err_str(r);
	return n;
}

// An XRC INI QP of pd, completing its sends on scq; with ops, the
// extended send API for them (ibv_create_qp_ex() proper, else
// libibverbs' ibv_create_qp() path).  Empty, errno set, on failure.
inline Qp make_ini(ibv_pd *pd, ibv_cq *scq, uint64_t ops = 0,
		   uint32_t send_wr = 64, ibv_qp_cap *granted = nullptr)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_SEND;
	a.send_cq = scq;
	a.cap.max_send_wr = send_wr;
	a.cap.max_send_sge = 4;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = ops;
	}
	Qp qp(ibv_create_qp_ex(pd->context, &a));
	if (qp && granted)
		*granted = a.cap;
	return qp;
}

// An XRC TGT QP of ctx in xrcd (no PD, no CQ, no queue of its own).
inline Qp make_tgt(ibv_context *ctx, ibv_xrcd *xrcd)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = xrcd;
	return Qp(ibv_create_qp_ex(ctx, &a));
}

// TGT QP qpn of xrcd, opened through ctx (ibv_open_qp(3)) into out; 0 or
// the errno.  The handle is destroyed with ibv_destroy_qp() like any QP.
inline int open_tgt(ibv_context *ctx, ibv_xrcd *xrcd, uint32_t qpn, Qp &out)
{
	ibv_qp_open_attr a{};
	a.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		      IBV_QP_OPEN_ATTR_TYPE;
	a.qp_num = qpn;
	a.xrcd = xrcd;
	a.qp_type = IBV_QPT_XRC_RECV;
	errno = 0;
	out.reset(ibv_open_qp(ctx, &a));
	if (out)
		return 0;
	return errno ? errno : -1;
}

// ---------------------------------------------------------------------
// Connecting.

// An INI's INIT->RTR: the RC attributes without the responder's.
inline ::testing::AssertionResult ini_to_rtr(ibv_qp *qp, uint32_t tgt_qpn,
					     const ibv_gid &dgid,
					     int sgid_index, const Link &l)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = l.mtu;
	a.dest_qp_num = tgt_qpn;
	a.rq_psn = l.rq_psn;
	a.ah_attr = ah_attr(dgid, sgid_index);
	return modify(qp, a,
		      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
		      "INI INIT->RTR");
}

// An INI from RESET to RTS, sending to TGT tgt_qpn at dgid.  Its access
// flags (required by RESET->INIT) are 0: it answers no request.
inline ::testing::AssertionResult connect_ini(ibv_qp *qp, uint32_t tgt_qpn,
					      const ibv_gid &dgid,
					      int sgid_index, Link l = {})
{
	l.access = 0;
	::testing::AssertionResult r = to_init(qp, l);
	if (r)
		r = ini_to_rtr(qp, tgt_qpn, dgid, sgid_index, l);
	if (r)
		r = to_rts(qp, l);
	return r;
}

// A TGT from RESET to RTR, answering INI ini_qpn at dgid with l.access.
inline ::testing::AssertionResult connect_tgt(ibv_qp *qp, uint32_t ini_qpn,
					      const ibv_gid &dgid,
					      int sgid_index, const Link &l = {})
{
	::testing::AssertionResult r = to_init(qp, l);
	if (r)
		r = to_rtr(qp, ini_qpn, dgid, sgid_index, l);
	return r;
}

// An INI with its send CQ, connected to a TGT (the QPs go before the CQ).
struct Conn {
	Cq scq;
	Qp ini, tgt;
};

// ---------------------------------------------------------------------
// Work requests.

// One request of an INI, posted either way (post()).
struct XWr {
	uint64_t id = 0;
	ibv_wr_opcode op = IBV_WR_SEND;
	uint32_t srqn = 0;		// the XRC SRQ it names
	std::vector<ibv_sge> sge;
	uint64_t raddr = 0;
	uint32_t rkey = 0;
	uint64_t compare_add = 0, swap = 0;
	uint32_t imm = 0;		// host order, for the _WITH_IMM ones
	unsigned flags = IBV_SEND_SIGNALED;
};

inline XWr xsend(uint64_t id, uint32_t srqn, std::vector<ibv_sge> sge,
		 std::optional<uint32_t> imm = std::nullopt)
{
	XWr w;
	w.id = id;
	w.op = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	w.srqn = srqn;
	w.sge = std::move(sge);
	w.imm = imm.value_or(0);
	return w;
}

inline XWr xrdma(uint64_t id, ibv_wr_opcode op, uint32_t srqn,
		 std::vector<ibv_sge> sge, uint64_t raddr, uint32_t rkey,
		 uint32_t imm = 0)
{
	XWr w;
	w.id = id;
	w.op = op;
	w.srqn = srqn;
	w.sge = std::move(sge);
	w.raddr = raddr;
	w.rkey = rkey;
	w.imm = imm;
	return w;
}

inline XWr xatomic(uint64_t id, ibv_wr_opcode op, uint32_t srqn, ibv_sge sge,
		   uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		   uint64_t swap = 0)
{
	XWr w = xrdma(id, op, srqn, {sge}, raddr, rkey);
	w.compare_add = compare_add;
	w.swap = swap;
	return w;
}

inline bool is_atomic(ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// Posts wrs on INI qp, all in one call (one ibv_post_send() chain, or one
// ibv_wr_start() ... ibv_wr_complete() batch); 0 or the errno.
inline int post(ibv_qp *qp, Api api, std::vector<XWr> wrs)
{
	if (api == Api::PostSend) {
		std::vector<ibv_send_wr> v(wrs.size());
		for (size_t i = 0; i < wrs.size(); i++) {
			XWr &w = wrs[i];
			ibv_send_wr &s = v[i];
			s.wr_id = w.id;
			s.next = i + 1 < v.size() ? &v[i + 1] : nullptr;
			s.sg_list = w.sge.empty() ? nullptr : w.sge.data();
			s.num_sge = int(w.sge.size());
			s.opcode = w.op;
			s.send_flags = w.flags;
			s.imm_data = htobe32(w.imm);
			s.qp_type.xrc.remote_srqn = w.srqn;
			if (is_atomic(w.op)) {
				s.wr.atomic.remote_addr = w.raddr;
				s.wr.atomic.rkey = w.rkey;
				s.wr.atomic.compare_add = w.compare_add;
				s.wr.atomic.swap = w.swap;
			} else {
				s.wr.rdma.remote_addr = w.raddr;
				s.wr.rdma.rkey = w.rkey;
			}
		}
		ibv_send_wr *bad = nullptr;
		return ibv_post_send(qp, v.data(), &bad);
	}

	ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	if (!x) {
		ADD_FAILURE() << "QP " << qp->qp_num << " has no ibv_qp_ex";
		return EINVAL;
	}
	ibv_wr_start(x);
	for (const XWr &w : wrs) {
		x->wr_id = w.id;
		x->wr_flags = w.flags;
		switch (w.op) {
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(x, htobe32(w.imm));
			break;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, w.rkey, w.raddr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(x, w.rkey, w.raddr,
					      htobe32(w.imm));
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, w.rkey, w.raddr);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, w.rkey, w.raddr,
					      w.compare_add, w.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, w.rkey, w.raddr,
						w.compare_add);
			break;
		default:
			ADD_FAILURE() << "test bug: opcode " << int(w.op);
			ibv_wr_abort(x);
			return EINVAL;
		}
		ibv_wr_set_xrc_srqn(x, w.srqn);
		if (w.sge.size() == 1)
			ibv_wr_set_sge(x, w.sge[0].lkey, w.sge[0].addr,
				       w.sge[0].length);
		else if (!w.sge.empty())
			ibv_wr_set_sge_list(x, w.sge.size(), w.sge.data());
	}
	return ibv_wr_complete(x);
}

// One receive WQE of one SGE on an SRQ; 0 or the errno.
inline int post_srq(ibv_srq *srq, uint64_t id, ibv_sge sge)
{
	ibv_recv_wr wr{};
	wr.wr_id = id;
	wr.sg_list = sge.length ? &sge : nullptr;
	wr.num_sge = sge.length ? 1 : 0;
	ibv_recv_wr *bad = nullptr;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

// ---------------------------------------------------------------------
// The fixture: a device, a PD, the GID to connect through, one XRC domain
// with one XRC SRQ (its completions on rcq_), and connections made on
// demand.  Declared so that they go in the right order: connections, then
// SRQs, then the domain, then the CQs and the PD.

class Xrc : public ::testing::Test {
protected:
	static constexpr uint32_t kSrqWr = 256;

	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		if (!(dev_.device_cap_flags & IBV_DEVICE_XRC)) {
			ASSERT_FALSE(testing_sroce())
				<< "sroce does not report IBV_DEVICE_XRC";
			GTEST_SKIP() << not_sroce("XRC (IBV_DEVICE_XRC)");
		}
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		gid_index_ = ipv4_gid(ctx_.get(), gid_, std::getenv("SROCE_IP4"));
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";
		rcq_.reset(ibv_create_cq(ctx_.get(), 1024, nullptr, nullptr, 0));
		ASSERT_TRUE(rcq_) << std::strerror(errno);
		ASSERT_EQ(open_xrcd(ctx_.get(), -1, O_CREAT, xrcd_), 0);
		ASSERT_EQ(create_srq(ctx_.get(),
				     xrc_srq_attr(xrcd_.get(), rcq_.get(),
						  pd_.get(), kSrqWr, 2),
				     srq_),
			  0);
		srqn_ = srq_num(srq_.get());
		ASSERT_NE(srqn_, 0u);
	}

	// c: an INI of pd_ (with ops: the extended send API) connected to a
	// TGT of xrcd (default: xrcd_) and back, with l (l.access: the
	// TGT's remote access).
	::testing::AssertionResult connect(Conn &c, const Link &l = {},
					   uint64_t ops = 0,
					   ibv_xrcd *xrcd = nullptr)
	{
		c.scq.reset(ibv_create_cq(ctx_.get(), 256, nullptr, nullptr, 0));
		if (!c.scq)
			return ::testing::AssertionFailure()
			       << "ibv_create_cq: " << std::strerror(errno);
		c.ini = make_ini(pd_.get(), c.scq.get(), ops);
		if (!c.ini)
			return ::testing::AssertionFailure()
			       << "XRC INI QP: " << std::strerror(errno);
		c.tgt = make_tgt(ctx_.get(), xrcd ? xrcd : xrcd_.get());
		if (!c.tgt)
			return ::testing::AssertionFailure()
			       << "XRC TGT QP: " << std::strerror(errno);
		::testing::AssertionResult r = connect_tgt(
			c.tgt.get(), c.ini->qp_num, gid_, gid_index_, l);
		if (r)
			r = connect_ini(c.ini.get(), c.tgt->qp_num, gid_,
					gid_index_, l);
		return r;
	}

	// The same, the INI posting through api.
	::testing::AssertionResult connect(Conn &c, Api api, const Link &l = {})
	{
		return connect(c, l, api == Api::WrEx ? kIniOps : 0);
	}

	Context ctx_;
	ibv_device_attr dev_{};
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
	Cq rcq_;
	Xrcd xrcd_;
	XrcSrq srq_;
	uint32_t srqn_ = 0;
};

} // namespace sroce::test::xrc

#endif
