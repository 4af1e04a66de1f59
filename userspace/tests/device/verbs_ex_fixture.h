// The fixture of the extended-verbs cases (Ex*, part of verbs_device_tests),
// shared by verbs_ex_test.cc (ExQp, ExCq), verbs_ex_async_test.cc (ExAsync),
// verbs_ex_state_test.cc (ExSqd, ExQuery) and verbs_cq_timestamp_test.cc
// (CqTimestamp).  Run inside a test-bed guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Ex*'
// Two RC QPs of the device under test, in this one process, are connected
// to each other through the device's own IPv4 RoCE v2 GID, as in
// verbs_rc_fixture.h.  Covered:
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
#ifndef SROCE_TEST_VERBS_EX_FIXTURE_H
#define SROCE_TEST_VERBS_EX_FIXTURE_H

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

namespace sroce::test::ex {

using namespace std::chrono_literals;

inline const auto kQuiet = slow(300ms);
inline constexpr uint64_t kRcOps =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
inline constexpr uint64_t kWcFlags =
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

inline Wc from_wc(const ibv_wc &w)
{
	return {w.wr_id,  w.status,   w.opcode,	  w.vendor_err, w.byte_len,
		w.imm_data, w.qp_num, w.src_qp, w.wc_flags, w.slid,
		w.sl,	  w.dlid_path_bits};
}

inline Wc from_cq_ex(ibv_cq_ex *cq)
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

inline std::string str(const Wc &w)
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
inline std::vector<Wc> poll_wcs(ibv_cq *cq, size_t n, Clock::duration limit = kWait)
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
inline ::testing::AssertionResult is_ok(const Wc &w, uint64_t wr_id, ibv_wc_opcode op,
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

// The asynchronous events of ctx, acknowledged, that keep accepts: all of
// them within d, or, once n (at least 1) have come, those of a further
// kQuiet.  A wait for a known number of events thus ends a quiet spell
// after the last of them instead of at d (the full d was most of the
// ExAsync and ExSqd cases' time, four times more on the debug kernel); an
// event beyond the n still shows within that spell, as any event of a case
// that expects none does within its whole d.
template <class Keep>
std::vector<Event> events_upto(ibv_context *ctx, size_t n, Clock::duration d,
			       Keep keep)
{
	std::vector<Event> out;
	auto deadline = Clock::now() + d;
	bool quiet = false;

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
		if (!keep(e))
			continue;
		out.push_back(e);
		if (!quiet && out.size() >= n) {
			quiet = true;
			deadline = Clock::now() + kQuiet;
		}
	}
	return out;
}

// Every asynchronous event of ctx within d, acknowledged.
inline std::vector<Event> events(ibv_context *ctx, Clock::duration d)
{
	return events_upto(ctx, SIZE_MAX, d, [](const Event &) { return true; });
}

// The events of ctx are exactly want (type and element), in order: those
// within d, or within kQuiet of the last of want (events_upto).
inline ::testing::AssertionResult events_are(ibv_context *ctx,
					     const std::vector<Event> &want,
					     Clock::duration d = slow(2s))
{
	const std::vector<Event> got = events_upto(
		ctx, want.empty() ? SIZE_MAX : want.size(), d,
		[](const Event &) { return true; });
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
		ASSERT_NO_FATAL_FAILURE(
			open_with_ipv4_gid(ctx_, pd_, gid_, gid_index_));
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

	Context ctx_;
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
};

} // namespace sroce::test::ex

#endif
