// The fixture and helpers of the RC data-path cases (Rc*, part of
// verbs_device_tests), shared by verbs_rc_data_test.cc, verbs_rc_rdma_test.cc,
// verbs_rc_error_test.cc and verbs_rc_flush_test.cc.  Run inside a test-bed
// guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Rc*.*:*/Rc*.*'
// Two RC QPs of the device under test, in this one process, are connected
// to each other through the device's own RoCE v2 GID (same-host loopback),
// and every case checks the work completions exactly (status, opcode,
// byte_len, wc_flags, imm_data, qp_num, in order, each exactly once) and the
// memory on both sides, including what must stay untouched.
//
// The tests expect what the InfiniBand Architecture Specification (IBA,
// vol. 1) and the libibverbs man pages say.  They also run against Debian's
// rdma_rxe (the reference software RoCE); where rxe deviates from the spec a
// comment says so, with what rxe was seen to do.
//
// Conventions the expectations rely on:
// - For a completion with an error status only wr_id, status and qp_num are
//   defined (ibv_poll_cq(3)), so only those are checked.
// - byte_len of a successful requester completion is checked only for RDMA
//   READ and atomics (the data that arrived); ibv_poll_cq(3) defines it for
//   receive completions, and mlx5 leaves it unset for SEND and WRITE.
// - The requester's completion of SEND_WITH_IMM and RDMA_WRITE_WITH_IMM has
//   IBV_WC_WITH_IMM in wc_flags, as mlx5 and rxe report it; its imm_data is
//   not defined.
// - IBV_WC_GRH is not checked on RC receive completions: the IBA places a
//   GRH in the receive buffer only for UD, so on RC the flag says nothing.
//   rxe sets it on every RC receive (wc_flags 0x1 seen on 6.1), upstream
//   mlx5 whenever the CQE reports an L3 header (always, on RoCE), while
//   MLNX_OFED's mlx5 sets it for UD only.  Every other bit is checked.
#ifndef SROCE_TEST_VERBS_RC_FIXTURE_H
#define SROCE_TEST_VERBS_RC_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <endian.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test::rc {

using namespace std::chrono_literals;

// How long "nothing more arrives" is watched for.
inline const auto kQuiet = slow(200ms);
// How long a flush may take once the QP is in the error state.
inline const auto kFlushWait = slow(5s);
// These cases poll with shorter naps than kNap; kept, so that their timing
// does not change.
inline constexpr auto kRcNap = 20us;

// Message sizes: empty, one byte, one short packet, both sides of the
// 1024 and 4096 packet boundaries, many packets, and 1 MiB.
inline constexpr uint32_t kSizes[] = {0,    1,    255,   1024,   1025,
				      4096, 4097, 65536, 1u << 20};
// The pattern of memory nobody may write to.
inline constexpr uint32_t kSentinelSeed = 0x5e5e5e5e;

// ---------------------------------------------------------------------
// Memory with recognizable contents.

// Byte i of the pattern called seed: position dependent, so misplaced,
// shifted or repeated data does not match by accident.
inline uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = uint32_t(i) * 0x9e3779b1u + seed * 0x85ebca6bu +
		     uint32_t(i >> 32);
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return uint8_t(x);
}

inline void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

// got[0, n) == want[0, n); names the first difference and counts them.
inline ::testing::AssertionResult same(const uint8_t *got, const uint8_t *want,
				       size_t n, const std::string &what)
{
	size_t first = n, bad = 0;
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			if (first == n)
				first = i;
			bad++;
		}
	if (!bad)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure()
	       << what << ": " << bad << " of " << n
	       << " bytes differ, first at offset " << first << " (got 0x"
	       << std::hex << int(got[first]) << ", want 0x"
	       << int(want[first]) << std::dec << ")";
}

// Page-aligned memory holding the pattern seed: unlike one byte value, it
// tells misplaced or shifted data from what belongs there.
inline Buffer patterned(size_t len, uint32_t seed = kSentinelSeed)
{
	Buffer b(len);

	if (b.data())
		fill(b.data(), len, seed);
	return b;
}

// A buffer and its registration; the MR goes first.
struct Region {
	Region() = default;
	Region(ibv_pd *pd, size_t len, int access,
	       uint32_t seed = kSentinelSeed)
		: buf(patterned(len, seed))
	{
		if (buf.data())
			mr.reset(ibv_reg_mr(pd, buf.data(), std::max<size_t>(len, 1),
					    access));
	}
	explicit operator bool() const { return bool(mr); }
	ibv_sge sge(size_t off, uint32_t len) const
	{
		return {buf.addr(off), len, mr->lkey};
	}

	Buffer buf;
	Mr mr;
};

// ---------------------------------------------------------------------
// Work completions.

// What a completion must say.  byte_len and imm_data are checked when set;
// for an error status only wr_id, status and qp_num are defined.
struct Want {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t qp_num;
	std::optional<uint32_t> byte_len = std::nullopt;
	unsigned wc_flags = 0;
	std::optional<uint32_t> imm = std::nullopt;	// host order
};

inline Want ok(uint64_t wr_id, ibv_wc_opcode op, const ibv_qp *qp,
	       std::optional<uint32_t> len = std::nullopt, unsigned flags = 0,
	       std::optional<uint32_t> imm = std::nullopt)
{
	return {wr_id, IBV_WC_SUCCESS, op, qp->qp_num, len, flags, imm};
}

inline Want err(uint64_t wr_id, ibv_wc_status st, const ibv_qp *qp)
{
	return {wr_id, st, IBV_WC_SEND, qp->qp_num};
}

inline ::testing::AssertionResult matches(const ibv_wc &wc, const Want &w)
{
	std::ostringstream why;
	if (wc.wr_id != w.wr_id)
		why << " wr_id (want " << w.wr_id << ")";
	if (wc.status != w.status)
		why << " status (want " << ibv_wc_status_str(w.status) << ")";
	if (wc.qp_num != w.qp_num)
		why << " qp_num (want " << w.qp_num << ")";
	if (w.status == IBV_WC_SUCCESS && wc.status == IBV_WC_SUCCESS) {
		if (wc.opcode != w.opcode)
			why << " opcode (want " << int(w.opcode) << ")";
		if (w.byte_len && wc.byte_len != *w.byte_len)
			why << " byte_len (want " << *w.byte_len << ")";
		const unsigned ignore =
			wc.opcode & IBV_WC_RECV ? unsigned(IBV_WC_GRH) : 0u;
		if ((wc.wc_flags & ~ignore) != w.wc_flags)
			why << " wc_flags (want 0x" << std::hex << w.wc_flags
			    << std::dec << ")";
		if (w.imm && be32toh(wc.imm_data) != *w.imm)
			why << " imm_data (want 0x" << std::hex << *w.imm
			    << std::dec << ")";
	}
	if (why.str().empty())
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << wc_str(wc) << ": wrong"
					     << why.str();
}

// The next completions of cq are exactly want, in this order.
inline ::testing::AssertionResult completes(ibv_cq *cq, const std::vector<Want> &want,
					    Clock::duration limit = kWait)
{
	const std::vector<ibv_wc> got = poll_n(cq, want.size(), limit, kRcNap);
	for (size_t i = 0; i < got.size(); i++) {
		::testing::AssertionResult r = matches(got[i], want[i]);
		if (!r)
			return ::testing::AssertionFailure()
			       << "completion " << i << " of " << want.size()
			       << ": " << r.message();
	}
	if (got.size() < want.size())
		return ::testing::AssertionFailure()
		       << "only " << got.size() << " of " << want.size()
		       << " completions within "
		       << std::chrono::duration_cast<std::chrono::seconds>(limit)
				  .count()
		       << " s (next expected: wr_id " << want[got.size()].wr_id
		       << ", " << ibv_wc_status_str(want[got.size()].status)
		       << ")";
	return ::testing::AssertionSuccess();
}

// No completion arrives on cq for a while.
inline ::testing::AssertionResult quiet(ibv_cq *cq, Clock::duration d = kQuiet)
{
	const std::vector<ibv_wc> got = poll_n(cq, 1, d, kRcNap);
	if (got.empty())
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "unexpected completion "
					     << wc_str(got[0]);
}

// Waits for a completion event on ch and acknowledges it; it must be for cq.
inline ::testing::AssertionResult cq_event(ibv_comp_channel *ch, ibv_cq *cq,
					   Clock::duration limit = kWait)
{
	pollfd pfd = {ch->fd, POLLIN, 0};
	const int ms = int(
		std::chrono::duration_cast<std::chrono::milliseconds>(limit)
			.count());
	const int r = poll(&pfd, 1, ms);
	if (r < 0)
		return ::testing::AssertionFailure()
		       << "poll: " << std::strerror(errno);
	if (r == 0)
		return ::testing::AssertionFailure()
		       << "no completion event within " << ms << " ms";
	ibv_cq *ev_cq = nullptr;
	void *ev_ctx = nullptr;
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return ::testing::AssertionFailure()
		       << "ibv_get_cq_event: " << std::strerror(errno);
	ibv_ack_cq_events(ev_cq, 1);
	if (ev_cq != cq)
		return ::testing::AssertionFailure() << "event for another CQ";
	return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult no_cq_event(ibv_comp_channel *ch,
					      std::chrono::milliseconds d = slow(200ms))
{
	pollfd pfd = {ch->fd, POLLIN, 0};
	const int r = poll(&pfd, 1, int(d.count()));
	if (r == 0)
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure()
	       << (r < 0 ? "poll failed" : "unexpected completion event");
}

// ---------------------------------------------------------------------
// Work requests.

inline ibv_send_wr send_wr(uint64_t id, ibv_sge *sg, int n, int flags = IBV_SEND_SIGNALED,
			   ibv_wr_opcode op = IBV_WR_SEND)
{
	ibv_send_wr wr{};
	wr.wr_id = id;
	wr.sg_list = n ? sg : nullptr;
	wr.num_sge = n;
	wr.opcode = op;
	wr.send_flags = unsigned(flags);
	return wr;
}

inline ibv_send_wr rdma_wr(uint64_t id, ibv_wr_opcode op, ibv_sge *sg, int n,
			   uint64_t raddr, uint32_t rkey, int flags = IBV_SEND_SIGNALED)
{
	ibv_send_wr wr = send_wr(id, sg, n, flags, op);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

inline ibv_send_wr atomic_wr(uint64_t id, ibv_wr_opcode op, ibv_sge *sg,
			     uint64_t raddr, uint32_t rkey, uint64_t compare_add,
			     uint64_t swap)
{
	ibv_send_wr wr = send_wr(id, sg, 1, IBV_SEND_SIGNALED, op);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

// Posts a chain of send WRs (linked here); 0 or an errno.
inline int post(ibv_qp *qp, std::vector<ibv_send_wr> wrs, ibv_send_wr **bad = nullptr)
{
	for (size_t i = 0; i + 1 < wrs.size(); i++)
		wrs[i].next = &wrs[i + 1];
	ibv_send_wr *b = nullptr;
	const int r = ibv_post_send(qp, wrs.data(), &b);
	if (bad)
		*bad = b;
	return r;
}

inline int post_recv(ibv_qp *qp, uint64_t id, ibv_sge *sg, int n)
{
	ibv_recv_wr wr{};
	wr.wr_id = id;
	wr.sg_list = n ? sg : nullptr;
	wr.num_sge = n;
	ibv_recv_wr *bad = nullptr;
	return ibv_post_recv(qp, &wr, &bad);
}

// ---------------------------------------------------------------------
// The netdev's MTU, raised for a path MTU of 4096 and restored afterwards.

class NetdevMtu {
public:
	NetdevMtu() = default;
	NetdevMtu(const NetdevMtu &) = delete;
	NetdevMtu &operator=(const NetdevMtu &) = delete;
	~NetdevMtu() { restore(); }

	// Puts the old MTU back; true if there was one to put back.
	bool restore()
	{
		if (old_ <= 0)
			return false;
		set(old_);
		old_ = 0;
		return true;
	}

	// Raises the MTU of ifindex to at least mtu; 0 or an errno.
	int raise(unsigned ifindex, int mtu)
	{
		char name[IF_NAMESIZE] = {};
		if (!if_indextoname(ifindex, name))
			return errno;
		name_ = name;
		const int cur = get();
		if (cur < 0)
			return errno;
		if (cur >= mtu)
			return 0;
		if (set(mtu))
			return errno;
		old_ = cur;
		return 0;
	}
	const std::string &name() const { return name_; }

private:
	int ioc(unsigned long req, ifreq &r) const
	{
		const int fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			return -1;
		const int ret = ioctl(fd, req, &r);
		const int e = errno;
		close(fd);
		errno = e;
		return ret;
	}
	ifreq req() const
	{
		ifreq r{};
		std::strncpy(r.ifr_name, name_.c_str(), IF_NAMESIZE - 1);
		return r;
	}
	int get() const
	{
		ifreq r = req();
		return ioc(SIOCGIFMTU, r) ? -1 : r.ifr_mtu;
	}
	int set(int mtu) const
	{
		ifreq r = req();
		r.ifr_mtu = mtu;
		return ioc(SIOCSIFMTU, r);
	}

	std::string name_;
	int old_ = 0;
};

// ---------------------------------------------------------------------
// The fixture: a device, a PD, a GID, and QPs with their own CQs.

enum class GidKind { Ipv4, Ipv6 };

class Rc : public ::testing::Test {
protected:
	void SetUp() override { SetUpDevice(GidKind::Ipv4, IBV_MTU_1024); }

	// A raised netdev MTU goes back, and the port follows before the
	// next test looks at it.
	void TearDown() override
	{
		if (!mtu_.restore())
			return;
		const auto deadline = Clock::now() + kWait;
		ibv_port_attr p{};
		while (ibv_query_port(ctx_.get(), 1, &p) == 0 &&
		       p.active_mtu != active_mtu_ && Clock::now() < deadline)
			std::this_thread::sleep_for(10ms);
		EXPECT_EQ(p.active_mtu, active_mtu_)
			<< "port MTU after restoring the netdev's";
	}

	// Opens the device, allocates a PD and picks the GID to connect
	// through; raises the netdev MTU if the path MTU needs it.
	void SetUpDevice(GidKind kind, ibv_mtu mtu)
	{
		std::string name;
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_, &name));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port_), 0);
		active_mtu_ = port_.active_mtu;
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);

		gid_index_ = find_gid(kind);
		// sroce makes a GID of every global address of its netdev
		// (the test bed gives it one): missing is a failure there.
		if (gid_index_ < 0 && kind == GidKind::Ipv6) {
			ASSERT_FALSE(testing_sroce())
				<< "no global IPv6 RoCE v2 GID on " << name;
			GTEST_SKIP() << not_sroce("global IPv6 RoCE v2 GID");
		}
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID on " << name;
		link_.mtu = mtu;
		if (port_.active_mtu < mtu) {
			ASSERT_NO_FATAL_FAILURE(raise_mtu(mtu));
		}
	}

	// The RoCE v2 GID of SROCE_IP4/SROCE_IP6 if set, else the first
	// IPv4-mapped one (Ipv4) or the first global IPv6 one (Ipv6).
	int find_gid(GidKind kind)
	{
		const char *want_env = std::getenv(
			kind == GidKind::Ipv4 ? "SROCE_IP4" : "SROCE_IP6");
		ibv_gid want{};
		bool have_want = false;
		if (want_env && *want_env) {
			if (kind == GidKind::Ipv4) {
				want.raw[10] = want.raw[11] = 0xff;
				have_want = inet_pton(AF_INET, want_env,
						      want.raw + 12) == 1;
			} else {
				have_want = inet_pton(AF_INET6, want_env,
						      want.raw) == 1;
			}
		}
		static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0,
						  0, 0, 0, 0, 0xff, 0xff};
		int first = -1;
		for (int i = 0; i < port_.gid_tbl_len; i++) {
			ibv_gid_entry e{};
			if (ibv_query_gid_ex(ctx_.get(), 1, uint32_t(i), &e, 0) ||
			    e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			const bool v4 = !std::memcmp(e.gid.raw, v4map, 12);
			const bool ll = e.gid.raw[0] == 0xfe &&
					(e.gid.raw[1] & 0xc0) == 0x80;
			if (kind == GidKind::Ipv4 ? !v4 : (v4 || ll))
				continue;
			if (have_want &&
			    !std::memcmp(e.gid.raw, want.raw, 16)) {
				first = i;
				break;
			}
			if (first < 0)
				first = i;
		}
		if (first >= 0) {
			ibv_gid_entry e{};
			ibv_query_gid_ex(ctx_.get(), 1, uint32_t(first), &e, 0);
			gid_ = e.gid;
			ifindex_ = e.ndev_ifindex;
		}
		return first;
	}

	void raise_mtu(ibv_mtu mtu)
	{
		// RoCE v2 headers over IPv6 take 78 bytes (Eth 14, IPv6 40,
		// UDP 8, BTH 12, ICRC 4) plus RETH/AETH/ImmDt: 4096 + 200.
		const int r = mtu_.raise(ifindex_, 4096 + 200);
		// The test bed's virtio-net takes it; sroce's port MTU
		// 4096 must then be reachable.
		if (r) {
			ASSERT_FALSE(testing_sroce())
				<< "path MTU " << 128 * (1 << mtu)
				<< " needs a netdev MTU of 4296, and netdev "
				<< ifindex_ << " refuses: " << std::strerror(r);
			GTEST_SKIP() << "path MTU " << 128 * (1 << mtu)
				     << " needs a netdev MTU of 4296, and "
				     << "netdev " << ifindex_ << " refuses: "
				     << std::strerror(r);
		}
		const auto deadline = Clock::now() + kWait;
		for (;;) {
			ASSERT_EQ(ibv_query_port(ctx_.get(), 1, &port_), 0);
			if (port_.active_mtu >= mtu &&
			    port_.state == IBV_PORT_ACTIVE)
				break;
			ASSERT_LT(Clock::now(), deadline)
				<< "port active_mtu stays " << port_.active_mtu
				<< " after raising the MTU of " << mtu_.name();
			std::this_thread::sleep_for(10ms);
		}
	}

	// a and b connected to each other; a is the requester in the tests.
	::testing::AssertionResult pair(End &a, End &b, const Caps &c = {},
					const Link &la = {}, const Link &lb = {})
	{
		::testing::AssertionResult r = make_end(a, pd_.get(), c);
		if (r)
			r = make_end(b, pd_.get(), c);
		if (r)
			r = join(a, b, la, lb);
		return r;
	}

	// a and b, made already (in any PD), connected to each other.
	::testing::AssertionResult join(End &a, End &b, const Link &la = {},
					const Link &lb = {})
	{
		::testing::AssertionResult r =
			connect(a.qp.get(), b->qp_num, gid_, gid_index_,
				with_mtu(la));
		if (r)
			r = connect(b.qp.get(), a->qp_num, gid_, gid_index_,
				    with_mtu(lb));
		return r;
	}

	Link with_mtu(Link l) const
	{
		l.mtu = link_.mtu;
		return l;
	}

	Context ctx_;
	ibv_device_attr dev_{};
	ibv_port_attr port_{};
	Pd pd_;
	ibv_gid gid_{};
	int gid_index_ = -1;
	unsigned ifindex_ = 0;
	NetdevMtu mtu_;
	ibv_mtu active_mtu_ = IBV_MTU_1024;
	Link link_;
};

} // namespace sroce::test::rc

#endif
