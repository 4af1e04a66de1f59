// Helpers the device tests share, so that each file states only what its
// cases are about: bounded waits for completions and their descriptions in
// failure messages, the device's own IPv4 RoCE v2 GID, QPs of the device
// with their own CQs, connected to each other through it, and memory whose
// every byte is known.
#ifndef SROCE_TESTS_VERBS_UTIL_H
#define SROCE_TESTS_VERBS_UTIL_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"

namespace sroce::test {

using Clock = std::chrono::steady_clock;

// Every wait is bounded.  QEMU TCG guests on a loaded host are slow, so the
// limit is generous (and SROCE_TEST_SLOW multiplies it); it only matters
// when something is broken.
inline const std::chrono::seconds kWait = slow(std::chrono::seconds{30});
// How long a poller sleeps after finding its CQ empty rather than spin: a
// software device needs the guest's CPUs to make the completions.
inline constexpr std::chrono::microseconds kNap{50};

inline constexpr int kRemoteAll = IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC;
inline constexpr int kMrAll = IBV_ACCESS_LOCAL_WRITE | kRemoteAll;

// What a verb returned (an errno, or its negative), for messages.
inline std::string err_str(int r)
{
	return std::to_string(r) + " (" + std::strerror(r < 0 ? -r : r) + ")";
}

// A completion, for failure messages.  imm_data and invalidated_rkey share
// their bits; wc_flags tells which of the two the device meant.
inline std::string wc_str(const ibv_wc &wc)
{
	std::ostringstream o;

	o << "{wr_id " << wc.wr_id << ", " << ibv_wc_status_str(wc.status)
	  << " (" << int(wc.status) << "), opcode " << int(wc.opcode)
	  << ", byte_len " << wc.byte_len << ", wc_flags 0x" << std::hex
	  << wc.wc_flags;
	if (wc.wc_flags & IBV_WC_WITH_INV)
		o << ", invalidated_rkey 0x" << wc.invalidated_rkey;
	else
		o << ", imm_data 0x" << be32toh(wc.imm_data);
	o << std::dec << ", qp_num " << wc.qp_num << ", src_qp " << wc.src_qp
	  << "}";
	return o.str();
}

// Polls until n completions arrived or limit passed; never takes more than
// n, so that extra completions stay in the CQ for a later check to find.
inline std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n,
				  Clock::duration limit = kWait,
				  Clock::duration nap = kNap)
{
	std::vector<ibv_wc> out;
	const auto deadline = Clock::now() + limit;

	while (out.size() < n) {
		ibv_wc wc[16];
		const int k = ibv_poll_cq(
			cq, int(std::min<size_t>(16, n - out.size())), wc);
		if (k < 0) {
			ADD_FAILURE() << "ibv_poll_cq returned " << k;
			break;
		}
		out.insert(out.end(), wc, wc + k);
		if (k == 0) {
			if (Clock::now() > deadline)
				break;
			std::this_thread::sleep_for(nap);
		}
	}
	return out;
}

// The next completion of cq, if one comes within limit.
inline std::optional<ibv_wc> next_wc(ibv_cq *cq, Clock::duration limit = kWait)
{
	const std::vector<ibv_wc> got = poll_n(cq, 1, limit);

	if (got.empty())
		return std::nullopt;
	return got[0];
}

// The next completion of cq has wr_id, status st and, if st is success,
// opcode op (the opcode of an error completion is undefined).
inline ::testing::AssertionResult completes(ibv_cq *cq, uint64_t wr_id,
					    ibv_wc_status st, ibv_wc_opcode op)
{
	const std::optional<ibv_wc> wc = next_wc(cq);

	if (!wc)
		return ::testing::AssertionFailure()
		       << "no completion for wr_id " << wr_id << " ("
		       << ibv_wc_status_str(st) << " expected)";
	if (wc->wr_id != wr_id || wc->status != st ||
	    (st == IBV_WC_SUCCESS && wc->opcode != op))
		return ::testing::AssertionFailure()
		       << wc_str(*wc) << ", want wr_id " << wr_id << " "
		       << ibv_wc_status_str(st) << " opcode " << int(op);
	return ::testing::AssertionSuccess();
}

// The index of the device's first IPv4-mapped RoCE v2 GID, or -1; the GID
// goes to gid.  The tests connect QPs of this one device to each other
// through it.  With ip4 (SROCE_IP4, where the test bed sets it) only the GID
// of that address will do: the netdev may have more than one.
inline int ipv4_gid(ibv_context *ctx, ibv_gid &gid, const char *ip4 = nullptr)
{
	static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0,
					  0, 0, 0, 0, 0xff, 0xff};
	in_addr want{};
	const bool have_want = ip4 && inet_pton(AF_INET, ip4, &want) == 1;
	ibv_port_attr port{};

	if (ibv_query_port(ctx, 1, &port))
		return -1;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		ibv_gid_entry e{};
		if (ibv_query_gid_ex(ctx, 1, uint32_t(i), &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    std::memcmp(e.gid.raw, v4map, 12))
			continue;
		if (have_want && std::memcmp(e.gid.raw + 12, &want, 4))
			continue;
		gid = e.gid;
		return i;
	}
	return -1;
}

// Opens the device under test with a PD and its IPv4 RoCE v2 GID (see
// ipv4_gid()), the set-up of the fixtures whose QPs talk to each other
// through the device's own address; a fatal failure if one is missing.
inline void open_with_ipv4_gid(Context &ctx, Pd &pd, ibv_gid &gid,
			       int &gid_index, std::string *name = nullptr)
{
	std::string dev;

	ASSERT_NO_FATAL_FAILURE(open_test_device(ctx, &dev));
	if (name)
		*name = dev;
	pd.reset(ibv_alloc_pd(ctx.get()));
	ASSERT_TRUE(pd) << std::strerror(errno);
	gid_index = ipv4_gid(ctx.get(), gid);
	ASSERT_GE(gid_index, 0) << "no IPv4 RoCE v2 GID on " << dev;
}

// The index of port 1's RoCE v2 GID equal to want, or -1.
inline int roce_v2_gid_index(ibv_context *ctx, const ibv_gid &want)
{
	ibv_port_attr port{};

	if (ibv_query_port(ctx, 1, &port))
		return -1;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		ibv_gid_entry e{};
		if (!ibv_query_gid_ex(ctx, 1, uint32_t(i), &e, 0) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !std::memcmp(e.gid.raw, want.raw, sizeof(want.raw)))
			return i;
	}
	return -1;
}

// The GID of an IPv4 ("a.b.c.d", IPv4-mapped) or IPv6 address; false if
// ip is neither.
inline bool gid_of_ip(const std::string &ip, ibv_gid &gid)
{
	in_addr a4{};

	gid = {};
	if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) {
		gid.raw[10] = gid.raw[11] = 0xff;
		std::memcpy(gid.raw + 12, &a4, 4);
		return true;
	}
	return inet_pton(AF_INET6, ip.c_str(), gid.raw) == 1;
}

// The index of the RoCE v2 GID of address ip, once it is in the GID table
// (ib_core adds a new address's GID a moment after the netdev has it),
// or -1 if it is not there within limit.
inline int wait_gid_index(ibv_context *ctx, const std::string &ip,
			  Clock::duration limit = kWait)
{
	const auto deadline = Clock::now() + limit;
	ibv_gid gid;

	if (!gid_of_ip(ip, gid))
		return -1;
	for (;;) {
		const int i = roce_v2_gid_index(ctx, gid);
		if (i >= 0 || Clock::now() > deadline)
			return i;
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
}

// How connect() takes a QP from RESET to RTS.  The defaults are the RC
// cases'; a UC QP takes only what UC has of them.
struct Link {
	ibv_mtu mtu = IBV_MTU_1024;
	int access = kRemoteAll;
	// 4.096 us * 2^18 = 1.07 s: a TCG guest may stall for a while, and
	// nothing is lost on the loopback.
	uint8_t timeout = 18;
	uint8_t retry_cnt = 7;
	uint8_t rnr_retry = 7;		// 7: retry for ever
	uint8_t min_rnr_timer = 12;	// 0.64 ms
	uint8_t max_rd_atomic = 4;
	uint8_t max_dest_rd_atomic = 4;
	uint32_t sq_psn = 0x100, rq_psn = 0x100;
};

// The QP's state as ibv_query_qp() reports it, or ibv_qp_state(-1), which
// equals no state, if the query fails.
inline ibv_qp_state query_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return ibv_qp_state(-1);
	return a.qp_state;
}

// A QP state's name as the verbs spell it, for messages.
inline const char *state_name(ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "UNKNOWN";
	}
}

// The QP reaches state st within limit.  A QP is in the error state by
// the time its error completion can be polled; the grace period allows for
// an implementation that moves it right after posting the CQE.
inline ::testing::AssertionResult
reaches(ibv_qp *qp, ibv_qp_state st,
	Clock::duration limit = slow(std::chrono::seconds{2}))
{
	const auto deadline = Clock::now() + limit;
	ibv_qp_state now;

	while ((now = query_state(qp)) != st && Clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds{1});
	if (now == st)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure()
	       << "QP " << qp->qp_num << " is in state " << state_name(now)
	       << ", not " << state_name(st);
}

inline ::testing::AssertionResult modify(ibv_qp *qp, ibv_qp_attr &a, int mask,
					 const char *what)
{
	const int r = ibv_modify_qp(qp, &a, mask);

	if (r)
		return ::testing::AssertionFailure()
		       << what << ": " << err_str(r);
	return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult to_init(ibv_qp *qp, const Link &l = {})
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = unsigned(l.access);
	return modify(qp, a,
		      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS,
		      "RESET->INIT");
}

// The address of dgid, from the GID at sgid_index of port 1.
inline ibv_ah_attr ah_attr(const ibv_gid &dgid, int sgid_index)
{
	ibv_ah_attr a{};

	a.is_global = 1;
	a.grh.dgid = dgid;
	a.grh.sgid_index = uint8_t(sgid_index);
	a.grh.hop_limit = 64;
	a.port_num = 1;
	return a;
}

// UC has no acknowledgements, hence no RNR NAKs and no RDMA READ or atomic
// responses: its RTR and RTS take none of the attributes for those, and
// ib_core refuses them.
inline ::testing::AssertionResult to_rtr(ibv_qp *qp, uint32_t dest_qpn,
					 const ibv_gid &dgid, int sgid_index,
					 const Link &l = {})
{
	ibv_qp_attr a{};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = l.mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = l.rq_psn;
	if (qp->qp_type != IBV_QPT_UC) {
		a.max_dest_rd_atomic = l.max_dest_rd_atomic;
		a.min_rnr_timer = l.min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	a.ah_attr = ah_attr(dgid, sgid_index);
	return modify(qp, a, mask, "INIT->RTR");
}

inline ::testing::AssertionResult to_rts(ibv_qp *qp, const Link &l = {})
{
	ibv_qp_attr a{};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = l.sq_psn;
	if (qp->qp_type != IBV_QPT_UC) {
		a.timeout = l.timeout;
		a.retry_cnt = l.retry_cnt;
		a.rnr_retry = l.rnr_retry;
		a.max_rd_atomic = l.max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return modify(qp, a, mask, "RTR->RTS");
}

// An RC or UC qp from RESET to RTS, sending to dest_qpn at dgid (the
// device's own GID, in these tests) from the GID at sgid_index.
inline ::testing::AssertionResult connect(ibv_qp *qp, uint32_t dest_qpn,
					  const ibv_gid &dgid, int sgid_index,
					  const Link &l = {})
{
	::testing::AssertionResult r = to_init(qp, l);

	if (r)
		r = to_rtr(qp, dest_qpn, dgid, sgid_index, l);
	if (r)
		r = to_rts(qp, l);
	return r;
}

// A UD qp from RESET to RTS with qkey, port 1, P_Key index 0; a UD QP's
// RTR takes nothing but the state.
inline ::testing::AssertionResult ud_to_rts(ibv_qp *qp, uint32_t qkey,
					    uint32_t sq_psn = 0)
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	::testing::AssertionResult r =
		modify(qp, a,
		       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_QKEY,
		       "RESET->INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	if (r)
		r = modify(qp, a, IBV_QP_STATE, "INIT->RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	if (r)
		r = modify(qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTR->RTS");
	return r;
}

// Capacities of an End's QP and CQs; with send_ops, the QP offers the
// extended send API (ibv_wr_*()) for those operations.
struct Caps {
	uint32_t send_wr = 64, recv_wr = 64, sge = 8, inline_data = 0;
	int sq_sig_all = 0;
	int cqe = 256;
	uint64_t send_ops = 0;
};

// One end of a connection: an RC QP with its own send and receive CQs (the
// QP goes before its CQs).
struct End {
	Cq scq, rcq;
	Qp qp;
	ibv_qp_cap cap{};	// as granted
	ibv_qp *operator->() const { return qp.get(); }
};

// e's CQs (on completion channels, if given) and its QP in pd.
inline ::testing::AssertionResult make_end(End &e, ibv_pd *pd,
					   const Caps &c = {},
					   ibv_comp_channel *sch = nullptr,
					   ibv_comp_channel *rch = nullptr)
{
	e.scq.reset(ibv_create_cq(pd->context, c.cqe, nullptr, sch, 0));
	e.rcq.reset(ibv_create_cq(pd->context, c.cqe, nullptr, rch, 0));
	if (!e.scq || !e.rcq)
		return ::testing::AssertionFailure()
		       << "ibv_create_cq: " << std::strerror(errno);
	ibv_qp_init_attr_ex a{};
	a.send_cq = e.scq.get();
	a.recv_cq = e.rcq.get();
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = c.sq_sig_all;
	a.cap.max_send_wr = c.send_wr;
	a.cap.max_recv_wr = c.recv_wr;
	a.cap.max_send_sge = c.sge;
	a.cap.max_recv_sge = c.sge;
	a.cap.max_inline_data = c.inline_data;
	// With nothing but the PD, ibv_create_qp_ex() is ibv_create_qp().
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (c.send_ops) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = c.send_ops;
	}
	e.qp.reset(ibv_create_qp_ex(pd->context, &a));
	if (!e.qp)
		return ::testing::AssertionFailure()
		       << "ibv_create_qp: " << std::strerror(errno);
	e.cap = a.cap;
	return ::testing::AssertionSuccess();
}

inline constexpr size_t kPage = 4096;
// What memory nobody may write to holds.
inline constexpr uint8_t kSentinel = 0x5e;

// Page-aligned memory filled with one byte value (freed on destruction).
class Buffer {
public:
	Buffer() = default;
	explicit Buffer(size_t len, uint8_t fill = kSentinel)
		: len_(len),
		  mem_(static_cast<uint8_t *>(std::aligned_alloc(
			  kPage, (std::max<size_t>(len, 1) + kPage - 1) &
					 ~(kPage - 1))))
	{
		if (mem_)
			std::memset(mem_.get(), fill, len);
	}
	uint8_t *data() const { return mem_.get(); }
	size_t size() const { return len_; }
	uint64_t addr(size_t off = 0) const
	{
		return reinterpret_cast<uintptr_t>(mem_.get()) + off;
	}
	// A copy of the contents, to build the expected image from.
	std::vector<uint8_t> image() const
	{
		return {mem_.get(), mem_.get() + len_};
	}

private:
	struct Free {
		void operator()(uint8_t *p) const { std::free(p); }
	};
	size_t len_ = 0;
	std::unique_ptr<uint8_t[], Free> mem_;
};

// Every byte of [p, p + n) is v.
inline ::testing::AssertionResult all_are(const uint8_t *p, size_t n,
					  uint8_t v, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == v)
			continue;
		// one stream: AssertionResult formats each << on its own,
		// so std::hex would not reach the values
		std::ostringstream o;
		o << what << ": byte " << i << " is 0x" << std::hex
		  << int(p[i]) << ", want 0x" << int(v);
		return ::testing::AssertionFailure() << o.str();
	}
	return ::testing::AssertionSuccess();
}

// One receive work request of one SGE.
inline int post_recv(ibv_qp *qp, uint64_t id, ibv_sge sge)
{
	ibv_recv_wr wr{}, *bad = nullptr;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

// One send work request of one SGE through ibv_post_send: a SEND (imm: the
// immediate data of SEND_WITH_IMM) or an RDMA WRITE to raddr under rkey.
inline int post_send(ibv_qp *qp, uint64_t id, ibv_wr_opcode op, ibv_sge sge,
		     unsigned int flags, uint64_t raddr = 0, uint32_t rkey = 0,
		     __be32 imm = 0)
{
	ibv_send_wr wr{}, *bad = nullptr;

	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

// Waits until hw_counter(name) - before reaches at least want, or kWait.
// Returns the last difference seen.
inline long wait_delta(const std::string &name, long before, long want)
{
	const auto deadline = Clock::now() + kWait;
	long d = hw_counter(name) - before;

	while (d < want && Clock::now() < deadline) {
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		d = hw_counter(name) - before;
	}
	return d;
}

} // namespace sroce::test

#endif
