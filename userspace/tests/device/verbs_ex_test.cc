// Extended verbs and asynchronous events of a live RDMA device, run inside a
// test-bed guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Ex*'
// Two RC QPs of the device under test, in this one process, are connected
// to each other through the device's own IPv4 RoCE v2 GID, as in
// verbs_rc_test.cc.  Covered:
// - ExQp: ibv_qp_ex posting (ibv_wr_*) of every supported operation, with
//   the data on both sides and the completions checked; wr_abort and a
//   failed wr_complete leave nothing posted; unsupported operations are
//   refused at creation;
// - ExCq: ibv_create_cq_ex polling reads what ibv_poll_cq reads, on the
//   same ring; unsupported wc_flags are refused;
// - ExAsync: affiliated events through ibv_get_async_event(): an R_Key
//   violation raises IBV_EVENT_QP_ACCESS_ERR and a request the QP does not
//   allow IBV_EVENT_QP_REQ_ERR, both on the responder's QP only;
//   IBV_EVENT_COMM_EST once for a QP in RTR; a CQ overrun raises
//   IBV_EVENT_CQ_ERR; port events of a device on a dummy netdev;
// - ExSqd: RTS -> SQD finishes the messages already started, starts no new
//   one, reports sq_draining and raises IBV_EVENT_SQ_DRAINED when asked to;
//   SQD -> RTS resumes;
// - ExQuery: ibv_query_qp returns every attribute as set, and the error
//   state the device moved a QP to.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

const auto kQuiet = slow(300ms);
constexpr uint64_t kRcOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
constexpr uint64_t kWcFlags =
	IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
	IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
	IBV_WC_EX_WITH_DLID_PATH_BITS;

// Registered memory with a byte pattern.
struct Region {
	Region(ibv_pd *pd, size_t len, uint8_t seed, int access = kMrAll)
		: buf(len)
	{
		for (size_t i = 0; i < len; i++)
			buf[i] = uint8_t(seed + i * 7);
		mr.reset(ibv_reg_mr(pd, buf.data(), len, access));
	}
	uint64_t addr(size_t off = 0) { return uintptr_t(buf.data() + off); }
	std::vector<uint8_t> buf;
	Mr mr;
};

// One completion, whichever way it was read.
struct Wc {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp;
	unsigned wc_flags;
	uint32_t slid;
	uint8_t sl, dlid_path_bits;

	bool operator==(const Wc &) const = default;
};

Wc from_wc(const ibv_wc &w)
{
	return {w.wr_id,  w.status,   w.opcode,	  w.vendor_err, w.byte_len,
		w.imm_data, w.qp_num, w.src_qp, w.wc_flags, w.slid,
		w.sl,	  w.dlid_path_bits};
}

Wc from_cq_ex(ibv_cq_ex *cq)
{
	return {cq->wr_id,
		cq->status,
		ibv_wc_read_opcode(cq),
		ibv_wc_read_vendor_err(cq),
		ibv_wc_read_byte_len(cq),
		ibv_wc_read_imm_data(cq),
		ibv_wc_read_qp_num(cq),
		ibv_wc_read_src_qp(cq),
		ibv_wc_read_wc_flags(cq),
		ibv_wc_read_slid(cq),
		ibv_wc_read_sl(cq),
		ibv_wc_read_dlid_path_bits(cq)};
}

std::string str(const Wc &w)
{
	std::ostringstream o;
	o << "{wr_id " << w.wr_id << ", " << ibv_wc_status_str(w.status)
	  << ", opcode " << int(w.opcode) << ", byte_len " << w.byte_len
	  << ", imm 0x" << std::hex << be32toh(w.imm) << ", wc_flags 0x"
	  << w.wc_flags << std::dec << ", qp_num " << w.qp_num << ", src_qp "
	  << w.src_qp << "}";
	return o.str();
}

// Up to n completions of cq through ibv_poll_cq, within limit.
std::vector<Wc> poll_wcs(ibv_cq *cq, size_t n, Clock::duration limit = kWait)
{
	std::vector<Wc> out;
	const auto deadline = Clock::now() + limit;
	while (out.size() < n && Clock::now() < deadline) {
		ibv_wc wc{};
		const int k = ibv_poll_cq(cq, 1, &wc);
		if (k < 0) {
			ADD_FAILURE() << "ibv_poll_cq: " << k;
			break;
		}
		if (k)
			out.push_back(from_wc(wc));
		else
			std::this_thread::sleep_for(50us);
	}
	return out;
}

// A successful completion of opcode op for wr_id on qp.
::testing::AssertionResult is_ok(const Wc &w, uint64_t wr_id, ibv_wc_opcode op,
				 const ibv_qp *qp)
{
	if (w.wr_id == wr_id && w.status == IBV_WC_SUCCESS && w.opcode == op &&
	    w.qp_num == qp->qp_num)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure()
	       << str(w) << ", want wr_id " << wr_id << " opcode " << int(op)
	       << " on QP " << qp->qp_num;
}

// One asynchronous event, with what it names.
struct Event {
	ibv_event_type type;
	const void *element;	// the QP, CQ or nullptr (port events)
	int port;
};

// Every asynchronous event of ctx within d, acknowledged.
std::vector<Event> events(ibv_context *ctx, Clock::duration d)
{
	std::vector<Event> out;
	const auto deadline = Clock::now() + d;
	for (;;) {
		const auto left = std::chrono::duration_cast<
			std::chrono::milliseconds>(deadline - Clock::now());
		if (left.count() <= 0)
			break;
		pollfd pfd = {ctx->async_fd, POLLIN, 0};
		if (poll(&pfd, 1, int(left.count())) <= 0)
			break;
		ibv_async_event ev{};
		if (ibv_get_async_event(ctx, &ev)) {
			ADD_FAILURE() << "ibv_get_async_event: "
				      << std::strerror(errno);
			break;
		}
		Event e{ev.event_type, nullptr, 0};
		switch (ev.event_type) {
		case IBV_EVENT_CQ_ERR:
			e.element = ev.element.cq;
			break;
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			e.port = ev.element.port_num;
			break;
		case IBV_EVENT_DEVICE_FATAL:
			break;
		default:
			e.element = ev.element.qp;
			break;
		}
		ibv_ack_async_event(&ev);
		out.push_back(e);
	}
	return out;
}

// The events of ctx within d are exactly want (type and element), in order.
::testing::AssertionResult events_are(ibv_context *ctx,
				      const std::vector<Event> &want,
				      Clock::duration d = slow(2s))
{
	const std::vector<Event> got = events(ctx, d);
	std::ostringstream o;
	for (const Event &e : got)
		o << " " << ibv_event_type_str(e.type) << "@" << e.element;
	if (got.size() != want.size())
		return ::testing::AssertionFailure()
		       << got.size() << " events:" << o.str() << "; want "
		       << want.size();
	for (size_t i = 0; i < got.size(); i++)
		if (got[i].type != want[i].type ||
		    got[i].element != want[i].element)
			return ::testing::AssertionFailure()
			       << "event " << i << " of:" << o.str()
			       << "; want " << ibv_event_type_str(want[i].type)
			       << "@" << want[i].element;
	return ::testing::AssertionSuccess();
}

class Ex : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string name;
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_, &name));
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		gid_index_ = ipv4_gid(ctx_.get(), gid_);
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID on " << name;
		// Events left over from earlier tests are not ours.
		events(ctx_.get(), 0ms);
	}

	Cq cq(int cqe = 64)
	{
		return Cq(ibv_create_cq(ctx_.get(), cqe, nullptr, nullptr, 0));
	}

	// An RC QP; with ops, an extended one (ibv_qp_to_qp_ex works).
	Qp qp(ibv_cq *scq, ibv_cq *rcq, uint64_t ops = 0, uint32_t inl = 64)
	{
		ibv_qp_init_attr_ex a{};
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = 32;
		a.cap.max_recv_wr = 32;
		a.cap.max_send_sge = 4;
		a.cap.max_recv_sge = 4;
		a.cap.max_inline_data = inl;
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd_.get();
		if (ops) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = ops;
		}
		return Qp(ibv_create_qp_ex(ctx_.get(), &a));
	}

	// a and b to RTS, each sending to the other.
	::testing::AssertionResult connect(ibv_qp *a, ibv_qp *b,
					   int access_b = kRemoteAll)
	{
		::testing::AssertionResult r = to_init(a);
		if (r)
			r = to_init(b, {.access = access_b});
		if (r)
			r = to_rtr(a, b->qp_num, gid_, gid_index_);
		if (r)
			r = to_rtr(b, a->qp_num, gid_, gid_index_);
		if (r)
			r = to_rts(a);
		if (r)
			r = to_rts(b);
		return r;
	}

	static int post_recv(ibv_qp *q, uint64_t id, ibv_sge sge)
	{
		ibv_recv_wr wr{};
		ibv_recv_wr *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return ibv_post_recv(q, &wr, &bad);
	}

	// One WR of one SGE through ibv_post_send: a SEND (imm: the immediate
	// data of SEND_WITH_IMM) or an RDMA WRITE to raddr under rkey.
	static int post_send(ibv_qp *q, uint64_t id, ibv_wr_opcode op,
			     ibv_sge sge, unsigned flags, uint64_t raddr = 0,
			     uint32_t rkey = 0, __be32 imm = 0)
	{
		ibv_send_wr wr{};
		ibv_send_wr *bad = nullptr;
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = flags;
		wr.imm_data = imm;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		return ibv_post_send(q, &wr, &bad);
	}

	static ibv_qp_state state(ibv_qp *q)
	{
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		if (ibv_query_qp(q, &a, IBV_QP_STATE, &ia))
			return ibv_qp_state(-1);
		return a.qp_state;
	}

	Context ctx_;
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
};

// ---------------------------------------------------------------------
// ibv_qp_ex

using ExQp = Ex;

TEST_F(ExQp, UnsupportedSendOpsAreRefusedAtCreation)
{
	Cq c = cq();
	ASSERT_TRUE(c);
	// (the memory operations are accepted: verbs_mw_test.cc, MwsEx)
	for (uint64_t op : {uint64_t(IBV_QP_EX_WITH_TSO),
			    uint64_t(IBV_QP_EX_WITH_ATOMIC_WRITE)}) {
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
	for (uint64_t f : {uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP),
			   uint64_t(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK),
			   uint64_t(IBV_WC_EX_WITH_CVLAN),
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
		// IBV_WC_GRH on RC says nothing (see verbs_rc_test.cc).
		got[i].wc_flags &= ~unsigned(IBV_WC_GRH);
		EXPECT_EQ(got[i], want[i])
			<< i << ": " << str(got[i]) << " vs " << str(want[i]);
	}
	// Consumed exactly once.
	EXPECT_EQ(ibv_start_poll(rcq.get(), &pa), ENOENT);
	EXPECT_TRUE(poll_wcs(rcq_base, 1, kQuiet).empty());
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());	// unsignaled
}

// ---------------------------------------------------------------------
// Asynchronous events

using ExAsync = Ex;

TEST_F(ExAsync, RkeyViolationRaisesAccessErrOnTheResponderOnly)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 64, src.mr->lkey}, IBV_SEND_SIGNALED,
			    dst.addr(), dst.mr->rkey ^ 0x5a5a0000),
		  0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].status, IBV_WC_REM_ACCESS_ERR) << str(s[0]);

	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_QP_ACCESS_ERR, b.get(), 0}}));
	EXPECT_EQ(state(b.get()), IBV_QPS_ERR);
	EXPECT_EQ(state(a.get()), IBV_QPS_ERR);
}

TEST_F(ExAsync, RequestTheQpDoesNotAllowRaisesReqErr)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	// b allows RDMA READ only.
	ASSERT_TRUE(connect(a.get(), b.get(), IBV_ACCESS_REMOTE_READ));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 8, src.mr->lkey}, IBV_SEND_SIGNALED,
			    dst.addr(), dst.mr->rkey),
		  0);
	const std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].status, IBV_WC_REM_INV_REQ_ERR) << str(s[0]);

	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_QP_REQ_ERR, b.get(), 0}}));
	EXPECT_EQ(state(b.get()), IBV_QPS_ERR);
}

TEST_F(ExAsync, CommEstOnceWhenAQpInRtrReceives)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	// a in RTS, b only in RTR: b receives but does not send.
	ASSERT_TRUE(to_init(a.get()));
	ASSERT_TRUE(to_init(b.get()));
	ASSERT_TRUE(to_rtr(a.get(), b->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rtr(b.get(), a->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(a.get()));
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));

	Region src(pd_.get(), 64, 1), dst(pd_.get(), 256, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	for (uint64_t i = 0; i < 2; i++) {
		ASSERT_EQ(post_recv(b.get(), i,
				    {dst.addr(64 * i), 64, dst.mr->lkey}),
			  0);
		ASSERT_EQ(post_send(a.get(), i, IBV_WR_SEND,
				    {src.addr(), 16, src.mr->lkey},
				    IBV_SEND_SIGNALED),
			  0);
		const std::vector<Wc> s = poll_wcs(scq.get(), 1);
		ASSERT_EQ(s.size(), 1u);
		EXPECT_TRUE(is_ok(s[0], i, IBV_WC_SEND, a.get()));
	}
	EXPECT_EQ(poll_wcs(rcq.get(), 2).size(), 2u);
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_COMM_EST, b.get(), 0}}));

	// Once in RTS, more traffic raises nothing.
	ASSERT_TRUE(to_rts(b.get()));
	ASSERT_EQ(post_recv(b.get(), 3, {dst.addr(128), 64, dst.mr->lkey}), 0);
	ASSERT_EQ(post_send(a.get(), 3, IBV_WR_SEND,
			    {src.addr(), 16, src.mr->lkey}, 0),
		  0);
	EXPECT_EQ(poll_wcs(rcq.get(), 1).size(), 1u);
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
}

// A CQ that overflows is in error (CQ_ERR); the QP whose completion was
// lost cannot report it by a completion and is fatal (QP_FATAL).
TEST_F(ExAsync, CqOverrunRaisesCqErrAndQpFatal)
{
	Cq scq = cq(), rcq = cq(1);
	ASSERT_TRUE(scq && rcq);
	const int cap = rcq->cqe;
	ASSERT_GE(cap, 1);
	ASSERT_LT(cap, 32) << "receive CQ too large to overrun with 32 WRs";
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 64, 2);
	ASSERT_TRUE(src.mr && dst.mr);

	for (int i = 0; i <= cap; i++) {
		ASSERT_EQ(post_recv(b.get(), uint64_t(i),
				    {dst.addr(), 64, dst.mr->lkey}),
			  0);
		ASSERT_EQ(post_send(a.get(), uint64_t(i), IBV_WR_SEND,
				    {src.addr(), 8, src.mr->lkey}, 0),
			  0);
	}
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_CQ_ERR, rcq.get(), 0},
				{IBV_EVENT_QP_FATAL, b.get(), 0}},
			       slow(5s)));
	EXPECT_EQ(state(b.get()), IBV_QPS_ERR);
}

// Port events reach ibv_get_async_event.  The device under test keeps its
// netdev; this one gets an sroce device of its own on a dummy netdev.
TEST_F(ExAsync, PortEventsFollowTheNetdev)
{
	const std::string nd = "sxev0", dev = "sroce_ev0";
	auto sh = [](const std::string &c) {
		return std::system((c + " >/dev/null 2>&1").c_str());
	};
	sh("rdma link delete " + dev);
	sh("ip link del " + nd);
	if (sh("ip link add " + nd + " type dummy"))
		GTEST_SKIP() << "cannot create a dummy netdev (ip link add "
			     << nd << " type dummy failed)";
	struct Cleanup {
		std::function<int(const std::string &)> sh;
		std::string nd, dev;
		~Cleanup()
		{
			sh("rdma link delete " + dev);
			sh("ip link del " + nd);
		}
	} cleanup{sh, nd, dev};
	ASSERT_EQ(sh("ip link set " + nd + " up"), 0);
	ASSERT_EQ(sh("rdma link add " + dev + " type sroce netdev " + nd), 0);
	Context c = open_device(dev);
	ASSERT_TRUE(c) << "cannot open " << dev;
	ibv_port_attr p{};
	const auto deadline = Clock::now() + kWait;
	while (ibv_query_port(c.get(), 1, &p) == 0 &&
	       p.state != IBV_PORT_ACTIVE && Clock::now() < deadline)
		std::this_thread::sleep_for(10ms);
	ASSERT_EQ(p.state, IBV_PORT_ACTIVE);
	events(c.get(), slow(200ms));

	// The netdev's IPv6 link-local address comes and goes with it, so
	// GID_CHANGE events may come too; only the port events count here.
	auto port_events = [&c]() {
		std::vector<Event> out;
		for (const Event &e : events(c.get(), slow(3s)))
			if (e.type != IBV_EVENT_GID_CHANGE)
				out.push_back(e);
		return out;
	};
	ASSERT_EQ(sh("ip link set " + nd + " down"), 0);
	std::vector<Event> e = port_events();
	ASSERT_EQ(e.size(), 1u);
	EXPECT_EQ(e[0].type, IBV_EVENT_PORT_ERR);
	EXPECT_EQ(e[0].port, 1);
	ASSERT_EQ(ibv_query_port(c.get(), 1, &p), 0);
	EXPECT_EQ(p.state, IBV_PORT_DOWN);

	ASSERT_EQ(sh("ip link set " + nd + " up"), 0);
	e = port_events();
	ASSERT_EQ(e.size(), 1u);
	EXPECT_EQ(e[0].type, IBV_EVENT_PORT_ACTIVE);
	EXPECT_EQ(e[0].port, 1);
}

// ---------------------------------------------------------------------
// SQD: the send queue drains, IBV_EVENT_SQ_DRAINED, and back to RTS

using ExSqd = Ex;

::testing::AssertionResult to_sqd(ibv_qp *q, bool notify)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = notify;
	const int r = ibv_modify_qp(q, &a,
				    IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
	if (r)
		return ::testing::AssertionFailure()
		       << "RTS->SQD: " << std::strerror(r);
	return ::testing::AssertionSuccess();
}

::testing::AssertionResult draining(ibv_qp *q, int want)
{
	ibv_qp_attr g{};
	ibv_qp_init_attr gi{};
	if (ibv_query_qp(q, &g, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, &gi))
		return ::testing::AssertionFailure() << "ibv_query_qp failed";
	if (g.qp_state != IBV_QPS_SQD || g.sq_draining != want)
		return ::testing::AssertionFailure()
		       << "state " << int(g.qp_state) << ", sq_draining "
		       << int(g.sq_draining) << "; want SQD, " << want;
	return ::testing::AssertionSuccess();
}

TEST_F(ExSqd, AnIdleSendQueueIsDrainedAtOnce)
{
	Cq c = cq();
	ASSERT_TRUE(c);
	Qp a = qp(c.get(), c.get()), b = qp(c.get(), c.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));

	ASSERT_TRUE(to_sqd(a.get(), true));
	EXPECT_TRUE(events_are(ctx_.get(),
			       {{IBV_EVENT_SQ_DRAINED, a.get(), 0}}));
	EXPECT_TRUE(draining(a.get(), 0));
	// en_sqd_async_notify cannot be queried from userspace: the uverbs
	// QUERY_QP response (struct ib_uverbs_query_qp_resp) has no field for
	// it, and libibverbs 44 leaves the caller's value alone.

	// Without en_sqd_async_notify, no event.
	ASSERT_TRUE(to_sqd(b.get(), false));
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
	EXPECT_TRUE(draining(b.get(), 0));
}

// A message started before SQD completes (once its peer answers); a
// message posted after it waits for RTS.
TEST_F(ExSqd, StartedMessagesFinishAndNewOnesWaitForRts)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), scq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	Region src(pd_.get(), 64, 1), dst(pd_.get(), 512, 2);
	ASSERT_TRUE(src.mr && dst.mr);
	auto send = [&](uint64_t id) {
		return post_send(a.get(), id, IBV_WR_SEND,
				 {src.addr(), 16, src.mr->lkey},
				 IBV_SEND_SIGNALED);
	};

	// a in RTS, b still in INIT: b drops a's packets (counted as
	// qp_state drops), so a's SEND is started and stays unacknowledged
	// (the transport timer resends it) for as long as b stays in INIT.
	ASSERT_TRUE(to_init(a.get()));
	ASSERT_TRUE(to_init(b.get()));
	ASSERT_TRUE(to_rtr(a.get(), b->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(a.get()));
	const long before = rx_drops("qp_state");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";
	ASSERT_EQ(send(1), 0);
	const auto deadline = Clock::now() + kWait;
	while (rx_drops("qp_state") == before && Clock::now() < deadline)
		std::this_thread::sleep_for(1ms);
	ASSERT_GT(rx_drops("qp_state"), before) << "the SEND never left";

	ASSERT_TRUE(to_sqd(a.get(), true));
	EXPECT_TRUE(draining(a.get(), 1));
	ASSERT_EQ(send(2), 0);	// accepted in SQD, not started
	EXPECT_TRUE(events_are(ctx_.get(), {}, kQuiet));
	EXPECT_TRUE(draining(a.get(), 1));

	// b comes up; a's next retransmission gets through.
	for (uint64_t i = 0; i < 2; i++)
		ASSERT_EQ(post_recv(b.get(), 10 + i,
				    {dst.addr(64 * i), 64, dst.mr->lkey}),
			  0);
	ASSERT_TRUE(to_rtr(b.get(), a->qp_num, gid_, gid_index_));
	ASSERT_TRUE(to_rts(b.get()));
	std::vector<Wc> s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 1, IBV_WC_SEND, a.get()));
	// b may have been in RTR still when the SEND came (COMM_EST).
	std::vector<Event> ev;
	for (const Event &e : events(ctx_.get(), slow(3s)))
		if (e.type != IBV_EVENT_COMM_EST || e.element != b.get())
			ev.push_back(e);
	ASSERT_EQ(ev.size(), 1u);
	EXPECT_EQ(ev[0].type, IBV_EVENT_SQ_DRAINED);
	EXPECT_EQ(ev[0].element, a.get());
	EXPECT_TRUE(draining(a.get(), 0));
	// WR 2 waits in the SQ.
	EXPECT_TRUE(poll_wcs(scq.get(), 1, kQuiet).empty());
	EXPECT_EQ(poll_wcs(rcq.get(), 2, kQuiet).size(), 1u);

	ibv_qp_attr rts{};
	rts.qp_state = IBV_QPS_RTS;
	ASSERT_TRUE(modify(a.get(), rts, IBV_QP_STATE, "SQD->RTS"));
	s = poll_wcs(scq.get(), 1);
	ASSERT_EQ(s.size(), 1u);
	EXPECT_TRUE(is_ok(s[0], 2, IBV_WC_SEND, a.get()));
	EXPECT_EQ(poll_wcs(rcq.get(), 1).size(), 1u);
}

// ---------------------------------------------------------------------
// ibv_query_qp

using ExQuery = Ex;

TEST_F(ExQuery, EveryAttributeRoundTrips)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	ibv_qp_init_attr ia{};
	ia.send_cq = scq.get();
	ia.recv_cq = rcq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap = {16, 8, 3, 2, 100};
	Qp q(ibv_create_qp(pd_.get(), &ia));
	ASSERT_TRUE(q) << std::strerror(errno);
	const ibv_qp_cap cap = ia.cap;	// as granted

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS,
			   "INIT"));
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_512;
	a.dest_qp_num = 0xabcde;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 3;
	a.min_rnr_timer = 9;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid_;
	a.ah_attr.grh.sgid_index = uint8_t(gid_index_);
	// ib_core replaces a RoCE address vector's hop limit with its route's
	// (rdma_addr_find_l2_eth_by_grh()), so only that value round-trips.
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 0x28;
	a.ah_attr.grh.flow_label = 0x12345;
	a.ah_attr.sl = 0;
	a.ah_attr.port_num = 1;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER,
			   "RTR"));
	const ibv_ah_attr ah = a.ah_attr;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 5;
	a.rnr_retry = 3;
	a.sq_psn = 0x654321;
	a.max_rd_atomic = 2;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC,
			   "RTS"));

	ibv_qp_attr g{};
	ibv_qp_init_attr gi{};
	const int all = IBV_QP_STATE | IBV_QP_CUR_STATE |
			IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
			IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
			IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_ALT_PATH |
			IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE |
			IBV_QP_CAP | IBV_QP_DEST_QPN;
	ASSERT_EQ(ibv_query_qp(q.get(), &g, all, &gi), 0);
	EXPECT_EQ(g.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(g.cur_qp_state, IBV_QPS_RTS);
	// (en_sqd_async_notify has no field in the uverbs response: ExSqd.)
	EXPECT_EQ(g.sq_draining, 0);
	EXPECT_EQ(g.qp_access_flags,
		  unsigned(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
	EXPECT_EQ(g.pkey_index, 0);
	EXPECT_EQ(g.port_num, 1);
	EXPECT_EQ(g.path_mtu, IBV_MTU_512);
	EXPECT_EQ(g.dest_qp_num, 0xabcdeu);
	EXPECT_EQ(g.rq_psn, 0x123456u);
	EXPECT_EQ(g.sq_psn, 0x654321u);
	EXPECT_EQ(g.max_dest_rd_atomic, 3);
	EXPECT_EQ(g.max_rd_atomic, 2);
	EXPECT_EQ(g.min_rnr_timer, 9);
	EXPECT_EQ(g.timeout, 14);
	EXPECT_EQ(g.retry_cnt, 5);
	EXPECT_EQ(g.rnr_retry, 3);
	EXPECT_EQ(g.path_mig_state, IBV_MIG_MIGRATED);
	EXPECT_EQ(g.cap.max_send_wr, cap.max_send_wr);
	EXPECT_EQ(g.cap.max_recv_wr, cap.max_recv_wr);
	EXPECT_EQ(g.cap.max_send_sge, cap.max_send_sge);
	EXPECT_EQ(g.cap.max_recv_sge, cap.max_recv_sge);
	EXPECT_EQ(g.cap.max_inline_data, cap.max_inline_data);
	EXPECT_EQ(g.ah_attr.is_global, 1);
	EXPECT_EQ(0, std::memcmp(g.ah_attr.grh.dgid.raw, ah.grh.dgid.raw, 16));
	EXPECT_EQ(g.ah_attr.grh.sgid_index, ah.grh.sgid_index);
	EXPECT_EQ(g.ah_attr.grh.hop_limit, 64);
	EXPECT_EQ(g.ah_attr.grh.traffic_class, 0x28);
	EXPECT_EQ(g.ah_attr.grh.flow_label, 0x12345u);
	EXPECT_EQ(g.ah_attr.sl, 0);
	EXPECT_EQ(g.ah_attr.port_num, 1);
	EXPECT_EQ(gi.send_cq, scq.get());
	EXPECT_EQ(gi.recv_cq, rcq.get());
	EXPECT_EQ(gi.qp_type, IBV_QPT_RC);
	EXPECT_EQ(gi.sq_sig_all, 1);
	EXPECT_EQ(gi.cap.max_send_wr, cap.max_send_wr);
	EXPECT_EQ(gi.cap.max_inline_data, cap.max_inline_data);

	// A second modify changes only what it names.
	a = {};
	a.min_rnr_timer = 20;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	ASSERT_TRUE(modify(q.get(), a,
			   IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS,
			   "RTS->RTS"));
	g = {};
	ASSERT_EQ(ibv_query_qp(q.get(), &g, all, &gi), 0);
	EXPECT_EQ(g.min_rnr_timer, 20);
	EXPECT_EQ(g.qp_access_flags, unsigned(IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(g.timeout, 14);
	EXPECT_EQ(g.retry_cnt, 5);
	EXPECT_EQ(g.ah_attr.grh.flow_label, 0x12345u);
}

// The device moves a QP to the error state on its own; the query says so,
// and libibverbs' copy of the state follows.
TEST_F(ExQuery, ReportsTheErrorStateTheDeviceChose)
{
	Cq scq = cq(), rcq = cq();
	ASSERT_TRUE(scq && rcq);
	Qp a = qp(scq.get(), rcq.get()), b = qp(scq.get(), rcq.get());
	ASSERT_TRUE(a && b);
	ASSERT_TRUE(connect(a.get(), b.get()));
	Region src(pd_.get(), 64, 1);
	ASSERT_TRUE(src.mr);
	ASSERT_EQ(post_send(a.get(), 1, IBV_WR_RDMA_WRITE,
			    {src.addr(), 8, src.mr->lkey}, IBV_SEND_SIGNALED,
			    0x1000, 0x42),
		  0);
	ASSERT_EQ(poll_wcs(scq.get(), 1).size(), 1u);
	events(ctx_.get(), kQuiet);

	for (ibv_qp *q : {a.get(), b.get()}) {
		SCOPED_TRACE(q->qp_num);
		ibv_qp_attr g{};
		ibv_qp_init_attr gi{};
		ASSERT_EQ(ibv_query_qp(q, &g, IBV_QP_STATE | IBV_QP_CUR_STATE,
				       &gi),
			  0);
		EXPECT_EQ(g.qp_state, IBV_QPS_ERR);
		EXPECT_EQ(g.cur_qp_state, IBV_QPS_ERR);
		EXPECT_EQ(q->state, IBV_QPS_ERR);
		// ERR -> RESET is the way back.
		ibv_qp_attr r{};
		r.qp_state = IBV_QPS_RESET;
		EXPECT_TRUE(modify(q, r, IBV_QP_STATE, "ERR->RESET"));
	}
}

} // namespace
} // namespace sroce::test
