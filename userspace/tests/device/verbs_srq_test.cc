// Shared receive queues of a live RDMA device, run inside a test-bed guest
// as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Srq*.*'
// RC QPs of the device under test, in this one process, are connected to
// each other through the device's own IPv4 RoCE v2 GID (same-host
// loopback), as in verbs_rc_test.cc; the receiving QPs take their receive
// WQEs from one SRQ.  Every receive completion is checked exactly: wr_id
// (each WQE consumed once), status, opcode, byte_len, qp_num and the data
// that landed in the WQE's buffer.
//
// The expectations are those of the IBA (vol. 1, 10.2.9 and 11.6.3) and the
// libibverbs man pages: an SRQ's WQEs belong to the SRQ until a QP takes
// one; a QP in the error state flushes only what it took and raises
// IBV_EVENT_QP_LAST_WQE_REACHED; the SRQ limit event fires once per arming.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_env.h"
#include "verbs_raii.h"
#include "verbs_util.h"

namespace sroce::test {
namespace {

using namespace std::chrono_literals;

// How long "nothing more arrives" is watched for.
const auto kQuiet = slow(300ms);
// How the senders and receivers are connected: RNR retried for ever, as in
// the RC cases, but with no remote access nor RDMA READ or atomic
// resources, since only SENDs go through the SRQ.
constexpr Link kLink = {.access = 0,
			.max_rd_atomic = 0,
			.max_dest_rd_atomic = 0,
			.sq_psn = 0x10,
			.rq_psn = 0x10};

// Byte i of the message called seed: position dependent.
uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = uint32_t(i) * 0x9e3779b1u + seed * 0x85ebca6bu;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 13;
	return uint8_t(x);
}

// Sentinel-filled, registered memory; the MR goes before the buffer.
class Region {
public:
	Region(ibv_pd *pd, size_t len) : buf_(len)
	{
		if (buf_.data())
			mr_.reset(ibv_reg_mr(pd, buf_.data(), len,
					     IBV_ACCESS_LOCAL_WRITE));
	}
	explicit operator bool() const { return bool(mr_); }
	uint8_t *at(size_t off) const { return buf_.data() + off; }
	ibv_sge sge(size_t off, uint32_t len) const
	{
		return {buf_.addr(off), len, mr_->lkey};
	}

private:
	Buffer buf_;
	Mr mr_;
};

::testing::AssertionResult quiet(ibv_cq *cq, Clock::duration d = kQuiet)
{
	const std::vector<ibv_wc> got = poll_n(cq, 1, d);
	if (got.empty())
		return ::testing::AssertionSuccess();
	return ::testing::AssertionFailure() << "unexpected completion "
					     << wc_str(got[0]);
}

// The next async event about one of our objects within limit, acknowledged
// (port and GID events of the device are skipped).  The element pointers
// stay comparable after the acknowledgement.
std::optional<ibv_async_event> next_event(ibv_context *ctx,
					  Clock::duration limit)
{
	const auto deadline = Clock::now() + limit;

	for (;;) {
		const auto left = std::chrono::duration_cast<
			std::chrono::milliseconds>(deadline - Clock::now());
		pollfd pfd = {ctx->async_fd, POLLIN, 0};
		if (left.count() <= 0 ||
		    poll(&pfd, 1, int(left.count())) <= 0)
			return std::nullopt;
		ibv_async_event ev{};
		if (ibv_get_async_event(ctx, &ev))
			return std::nullopt;
		const ibv_async_event copy = ev;
		ibv_ack_async_event(&ev);
		switch (copy.event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			continue;
		default:
			return copy;
		}
	}
}

std::string event_str(const std::optional<ibv_async_event> &ev)
{
	return ev ? ibv_event_type_str(ev->event_type) : "no event";
}

// One sender QP with its send CQ, connected to one receiving QP; the QP
// goes before its CQ.
struct Sender {
	Cq scq;
	Qp qp;
};

class Srqs : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(open_test_device(ctx_));
		ASSERT_EQ(ibv_query_device(ctx_.get(), &dev_), 0);
		pd_.reset(ibv_alloc_pd(ctx_.get()));
		ASSERT_TRUE(pd_) << std::strerror(errno);
		rcq_.reset(ibv_create_cq(ctx_.get(), 1024, nullptr, nullptr, 0));
		ASSERT_TRUE(rcq_) << std::strerror(errno);
	}

	void TearDown() override
	{
		// QPs before the SRQ they use, then the SRQ, before the CQs.
		receivers_.clear();
		senders_.clear();
		srq_.reset();
	}

	// An SRQ of max_wr WQEs of max_sge SGEs; 0 or the errno.
	int make_srq(uint32_t max_wr, uint32_t max_sge = 1,
		     ibv_srq_attr *granted = nullptr)
	{
		ibv_srq_init_attr a{};
		a.attr.max_wr = max_wr;
		a.attr.max_sge = max_sge;
		errno = 0;
		srq_.reset(ibv_create_srq(pd_.get(), &a));
		if (!srq_)
			return errno ? errno : -1;
		if (granted)
			*granted = a.attr;
		return 0;
	}

	// An RC QP; receiving ones use the SRQ and the shared receive CQ.
	Qp make_qp(ibv_cq *scq, bool on_srq, ibv_qp_cap *cap = nullptr)
	{
		ibv_qp_init_attr a{};
		a.send_cq = scq;
		a.recv_cq = on_srq ? rcq_.get() : scq;
		a.srq = on_srq ? srq_.get() : nullptr;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = 64;
		a.cap.max_recv_wr = on_srq ? 0 : 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		Qp qp(ibv_create_qp(pd_.get(), &a));
		if (qp && cap)
			*cap = a.cap;
		return qp;
	}

	// n receiving QPs on the SRQ, each connected to a sender of its own.
	void make_pairs(size_t n)
	{
		gid_index_ = ipv4_gid(ctx_.get(), gid_);
		ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";
		for (size_t i = 0; i < n; i++) {
			Sender s;
			s.scq.reset(ibv_create_cq(ctx_.get(), 256, nullptr,
						  nullptr, 0));
			ASSERT_TRUE(s.scq) << std::strerror(errno);
			s.qp = make_qp(s.scq.get(), false);
			ASSERT_TRUE(s.qp) << std::strerror(errno);
			Qp r = make_qp(s.scq.get(), true);
			ASSERT_TRUE(r) << std::strerror(errno);
			ASSERT_TRUE(connect(s.qp.get(), r->qp_num, gid_,
					    gid_index_, kLink));
			ASSERT_TRUE(connect(r.get(), s.qp->qp_num, gid_,
					    gid_index_, kLink));
			senders_.push_back(std::move(s));
			receivers_.push_back(std::move(r));
		}
	}

	// One receive WR; 0 or the errno, and whether bad_wr named it.
	int post_srq(uint64_t id, ibv_sge *sg, int n, bool *bad_is_it = nullptr)
	{
		ibv_recv_wr wr{};
		wr.wr_id = id;
		wr.sg_list = n ? sg : nullptr;
		wr.num_sge = n;
		ibv_recv_wr *b = nullptr;
		const int r = ibv_post_srq_recv(srq_.get(), &wr, &b);
		if (bad_is_it)
			*bad_is_it = b == &wr;
		return r;
	}

	int send(size_t sender, uint64_t id, ibv_sge *sg)
	{
		ibv_send_wr wr{};
		wr.wr_id = id;
		wr.sg_list = sg->length ? sg : nullptr;
		wr.num_sge = sg->length ? 1 : 0;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		ibv_send_wr *bad = nullptr;
		return ibv_post_send(senders_[sender].qp.get(), &wr, &bad);
	}

	// Every sender's n sends completed successfully.
	::testing::AssertionResult sends_done(size_t sender, size_t n)
	{
		const auto got = poll_n(senders_[sender].scq.get(), n);
		for (const ibv_wc &wc : got)
			if (wc.status != IBV_WC_SUCCESS ||
			    wc.opcode != IBV_WC_SEND)
				return ::testing::AssertionFailure()
				       << "sender " << sender << ": "
				       << wc_str(wc);
		if (got.size() != n)
			return ::testing::AssertionFailure()
			       << "sender " << sender << ": " << got.size()
			       << " of " << n << " send completions";
		return ::testing::AssertionSuccess();
	}

	::testing::AssertionResult srq_event(ibv_srq *srq)
	{
		const auto ev = next_event(ctx_.get(), slow(10s));
		if (!ev || ev->event_type != IBV_EVENT_SRQ_LIMIT_REACHED)
			return ::testing::AssertionFailure()
			       << "want SRQ_LIMIT_REACHED, got "
			       << event_str(ev);
		if (ev->element.srq != srq)
			return ::testing::AssertionFailure()
			       << "limit event for another SRQ";
		return ::testing::AssertionSuccess();
	}

	::testing::AssertionResult no_event(Clock::duration d = kQuiet)
	{
		const auto ev = next_event(ctx_.get(), d);
		if (!ev)
			return ::testing::AssertionSuccess();
		return ::testing::AssertionFailure()
		       << "unexpected event " << event_str(ev);
	}

	uint32_t srq_limit()
	{
		ibv_srq_attr a{};
		EXPECT_EQ(ibv_query_srq(srq_.get(), &a), 0);
		return a.srq_limit;
	}

	Context ctx_;
	ibv_device_attr dev_{};
	Pd pd_;
	Cq rcq_;
	Srq srq_;
	std::vector<Sender> senders_;
	std::vector<Qp> receivers_;
	ibv_gid gid_{};
	int gid_index_ = -1;
};

// ---------------------------------------------------------------------
// Control path.

TEST_F(Srqs, DeviceReportsSrqLimits)
{
	EXPECT_GT(dev_.max_srq, 0);
	EXPECT_GT(dev_.max_srq_wr, 0);
	EXPECT_GT(dev_.max_srq_sge, 0);
}

TEST_F(Srqs, CreateRoundsUpAndQueryReportsTheGrantedAttributes)
{
	const long before = debugfs_count("srqs");
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(5, 3, &g), 0);
	EXPECT_GE(g.max_wr, 5u);
	EXPECT_GE(g.max_sge, 3u);
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq_.get(), &q), 0);
	EXPECT_EQ(q.max_wr, g.max_wr);
	EXPECT_EQ(q.max_sge, g.max_sge);
	EXPECT_EQ(q.srq_limit, 0u) << "a new SRQ is not armed";
	// The module's live-SRQ count, where debugfs shows it.
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("srqs"), before + 1);
	}
	srq_.reset();
	if (before >= 0) {
		EXPECT_EQ(debugfs_count("srqs"), before);
	}
}

TEST_F(Srqs, CreateRefusesAttributesBeyondTheLimits)
{
	EXPECT_EQ(make_srq(0), EINVAL);
	EXPECT_EQ(make_srq(uint32_t(dev_.max_srq_wr) + 1), EINVAL);
	EXPECT_EQ(make_srq(4, uint32_t(dev_.max_srq_sge) + 1), EINVAL);
	// The largest legal one.
	EXPECT_EQ(make_srq(uint32_t(dev_.max_srq_wr),
			   uint32_t(dev_.max_srq_sge)),
		  0);
}

TEST_F(Srqs, XrcSrqIsNotSupported)
{
	ibv_srq_init_attr_ex a{};
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	a.pd = pd_.get();
	a.srq_type = IBV_SRQT_XRC;
	a.attr.max_wr = 4;
	a.attr.max_sge = 1;
	errno = 0;
	Srq s(ibv_create_srq_ex(ctx_.get(), &a));
	EXPECT_FALSE(s);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(Srqs, ModifyArmsTheLimitAndRefusesBadAttributes)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ibv_srq_attr a{};

	a.srq_limit = g.max_wr + 1;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), EINVAL);
	EXPECT_EQ(srq_limit(), 0u);
	// Resizing is not implemented.
	a = {};
	a.max_wr = g.max_wr * 2;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_MAX_WR),
		  EOPNOTSUPP);
	a = {};
	a.srq_limit = g.max_wr;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(srq_limit(), g.max_wr);
	a.srq_limit = 3;
	EXPECT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(srq_limit(), 3u);
	// Nothing was resized on the way.
	ibv_srq_attr q{};
	ASSERT_EQ(ibv_query_srq(srq_.get(), &q), 0);
	EXPECT_EQ(q.max_wr, g.max_wr);
}

TEST_F(Srqs, PostingBeyondCapacityFailsWithEnomem)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(16, 2, &g), 0);
	Region mem(pd_.get(), 4096);
	ASSERT_TRUE(mem) << std::strerror(errno);
	ibv_sge sg[3] = {mem.sge(0, 8), mem.sge(8, 8), mem.sge(16, 8)};

	for (uint32_t i = 0; i < g.max_wr; i++)
		ASSERT_EQ(post_srq(i, sg, 2), 0) << "WQE " << i;
	bool bad_is_it = false;
	EXPECT_EQ(post_srq(99, sg, 1, &bad_is_it), ENOMEM);
	EXPECT_TRUE(bad_is_it) << "bad_wr names the WR that did not fit";
	// More SGEs than granted is refused whatever the room.
	srq_.reset();
	ASSERT_EQ(make_srq(4, 1, &g), 0);
	EXPECT_EQ(post_srq(1, sg, int(g.max_sge) + 1), EINVAL);
}

TEST_F(Srqs, QpWithAnSrqHasNoReceiveQueue)
{
	ASSERT_EQ(make_srq(8), 0);
	Cq cq(ibv_create_cq(ctx_.get(), 16, nullptr, nullptr, 0));
	ASSERT_TRUE(cq) << std::strerror(errno);
	ibv_qp_cap cap{};
	Qp qp = make_qp(cq.get(), true, &cap);
	ASSERT_TRUE(qp) << std::strerror(errno);
	EXPECT_EQ(cap.max_recv_wr, 0u);
	EXPECT_EQ(cap.max_recv_sge, 0u);

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	ASSERT_TRUE(modify(qp.get(), a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS,
			   "RESET->INIT"));
	ibv_recv_wr wr{};
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(ibv_post_recv(qp.get(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);

	// The SRQ cannot go while a QP uses it, and can once it is gone.
	EXPECT_EQ(ibv_destroy_srq(srq_.get()), EBUSY);
	qp.reset();
	EXPECT_EQ(ibv_destroy_srq(srq_.release()), 0);
}

// ---------------------------------------------------------------------
// Data path.

// Message seq of a sender: its length and contents.
uint32_t msg_len(size_t sender, uint32_t seq)
{
	return (uint32_t(sender) * 977u + seq * 331u) % 3000u;
}

uint32_t msg_seed(size_t sender, uint32_t seq)
{
	return uint32_t(sender) << 16 | seq;
}

// Receive buffers: one kSlot-byte area per SRQ WQE, named by its wr_id.
constexpr uint32_t kSlot = 4096;

// Checks the receive completions of the senders' messages, in whatever
// order the QPs took the WQEs: per QP in sending order (RC), each posted
// wr_id completing once per posting, the data in that wr_id's buffer.
class RecvChecker {
public:
	RecvChecker(const std::vector<Qp> &receivers, const Region &bufs)
		: bufs_(bufs)
	{
		for (size_t i = 0; i < receivers.size(); i++)
			sender_of_[receivers[i]->qp_num] = i;
	}

	// wr_id was posted to the SRQ (again).
	void posted(uint64_t wr_id)
	{
		EXPECT_TRUE(outstanding_.insert(wr_id).second)
			<< "test bug: wr_id " << wr_id << " posted twice";
	}

	::testing::AssertionResult check(const ibv_wc &wc)
	{
		auto s = sender_of_.find(wc.qp_num);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    s == sender_of_.end())
			return ::testing::AssertionFailure()
			       << "bad receive completion " << wc_str(wc);
		if (!outstanding_.erase(wc.wr_id))
			return ::testing::AssertionFailure()
			       << wc_str(wc) << ": wr_id completed twice "
			       << "or never posted";
		const uint32_t seq = next_[s->second]++;
		const uint32_t len = msg_len(s->second, seq);
		if (wc.byte_len != len)
			return ::testing::AssertionFailure()
			       << wc_str(wc) << ": message " << seq
			       << " of sender " << s->second << " has " << len
			       << " bytes";
		const uint8_t *p = bufs_.at(wc.wr_id * kSlot);
		for (uint32_t i = 0; i < kSlot; i++) {
			const uint8_t want =
				i < len ? pat(msg_seed(s->second, seq), i)
					: kSentinel;
			if (p[i] != want)
				return ::testing::AssertionFailure()
				       << wc_str(wc) << ": byte " << i
				       << " of the buffer is wrong";
		}
		std::memset(bufs_.at(wc.wr_id * kSlot), kSentinel, kSlot);
		return ::testing::AssertionSuccess();
	}

	uint32_t received(size_t sender) const
	{
		auto it = next_.find(sender);
		return it == next_.end() ? 0 : it->second;
	}

private:
	const Region &bufs_;
	std::map<uint32_t, size_t> sender_of_;
	std::map<size_t, uint32_t> next_;
	std::set<uint64_t> outstanding_;
};

// Fills message seq of a sender into its area of src.
ibv_sge stage(const Region &src, size_t sender, uint32_t seq)
{
	const uint32_t len = msg_len(sender, seq);
	uint8_t *p = src.at(sender * kSlot);
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(msg_seed(sender, seq), i);
	return src.sge(sender * kSlot, len);
}

TEST_F(Srqs, SeveralQpsReceiveThroughOneSrq)
{
	constexpr size_t kQps = 3;
	constexpr uint32_t kEach = 12;
	ASSERT_EQ(make_srq(kQps * kEach), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(kQps));
	Region bufs(pd_.get(), kQps * kEach * kSlot);
	ASSERT_TRUE(bufs) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < kQps * kEach; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	// One message at a time per sender (its source area is reused), the
	// senders interleaved so that the QPs take WQEs alternately.
	Region src(pd_.get(), kQps * kSlot);
	ASSERT_TRUE(src) << std::strerror(errno);
	for (uint32_t seq = 0; seq < kEach; seq++) {
		for (size_t s = 0; s < kQps; s++) {
			ibv_sge sg = stage(src, s, seq);
			ASSERT_EQ(send(s, seq, &sg), 0);
		}
		for (size_t s = 0; s < kQps; s++)
			ASSERT_TRUE(sends_done(s, 1));
	}
	const auto got = poll_n(rcq_.get(), kQps * kEach);
	ASSERT_EQ(got.size(), kQps * kEach);
	for (const ibv_wc &wc : got)
		ASSERT_TRUE(rx.check(wc));
	for (size_t s = 0; s < kQps; s++)
		EXPECT_EQ(rx.received(s), kEach) << "sender " << s;
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, ManyMessagesThroughASmallSrqWithRefills)
{
	// Many more messages than the SRQ holds: the receivers meet an empty
	// SRQ (RNR, retried for ever) and the WQEs are refilled as they
	// complete, while the receiving QPs' engines take them concurrently.
	constexpr size_t kQps = 3;
	constexpr uint32_t kEach = 100;
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(kQps));
	const uint32_t slots = g.max_wr;
	Region bufs(pd_.get(), size_t(slots) * kSlot);
	Region src(pd_.get(), kQps * kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < slots; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	std::vector<uint32_t> sent(kQps, 0);
	size_t total = 0;
	const auto deadline = Clock::now() + 4 * kWait;
	while (total < kQps * kEach && Clock::now() < deadline) {
		for (size_t s = 0; s < kQps; s++) {
			if (sent[s] == kEach || sent[s] != rx.received(s))
				continue;
			ibv_sge sg = stage(src, s, sent[s]);
			ASSERT_EQ(send(s, sent[s], &sg), 0);
			sent[s]++;
		}
		ibv_wc wc[8];
		const int k = ibv_poll_cq(rcq_.get(), 8, wc);
		ASSERT_GE(k, 0);
		for (int i = 0; i < k; i++) {
			ASSERT_TRUE(rx.check(wc[i]));
			// The used WQE goes back with the same wr_id.
			ibv_sge sg = bufs.sge(wc[i].wr_id * kSlot, kSlot);
			ASSERT_EQ(post_srq(wc[i].wr_id, &sg, 1), 0);
			rx.posted(wc[i].wr_id);
		}
		total += size_t(k);
		if (!k)
			std::this_thread::sleep_for(50us);
	}
	ASSERT_EQ(total, kQps * kEach);
	for (size_t s = 0; s < kQps; s++)
		EXPECT_TRUE(sends_done(s, kEach));
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, LimitEventFiresOnceUntilRearmed)
{
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(8, 1, &g), 0);
	ASSERT_EQ(g.max_wr, 8u) << "the test assumes an exact capacity";
	ASSERT_NO_FATAL_FAILURE(make_pairs(1));
	Region bufs(pd_.get(), size_t(g.max_wr) * kSlot);
	Region src(pd_.get(), kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	uint32_t seq = 0, next_id = 0;
	auto post_n = [&](uint32_t n) {
		for (uint32_t i = 0; i < n; i++, next_id++) {
			ibv_sge sg = bufs.sge((next_id % g.max_wr) * kSlot,
					      kSlot);
			ASSERT_EQ(post_srq(next_id % g.max_wr, &sg, 1), 0);
			rx.posted(next_id % g.max_wr);
		}
	};
	auto deliver = [&](uint32_t n) {
		for (uint32_t i = 0; i < n; i++, seq++) {
			ibv_sge sg = stage(src, 0, seq);
			ASSERT_EQ(send(0, seq, &sg), 0);
			ASSERT_TRUE(sends_done(0, 1));
			const auto wc = poll_n(rcq_.get(), 1);
			ASSERT_EQ(wc.size(), 1u);
			ASSERT_TRUE(rx.check(wc[0]));
		}
	};

	post_n(8);
	ibv_srq_attr a{};
	a.srq_limit = 4;
	ASSERT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	// 4 taken, 4 left: not below the limit.
	ASSERT_NO_FATAL_FAILURE(deliver(4));
	EXPECT_TRUE(no_event());
	EXPECT_EQ(srq_limit(), 4u) << "still armed";
	// The fifth leaves 3: one event, and the SRQ is disarmed.
	ASSERT_NO_FATAL_FAILURE(deliver(1));
	EXPECT_TRUE(srq_event(srq_.get()));
	EXPECT_EQ(srq_limit(), 0u) << "disarmed by the event";
	ASSERT_NO_FATAL_FAILURE(deliver(2));
	EXPECT_TRUE(no_event()) << "no second event without re-arming";

	// Refill to 8 and re-arm: the same again.
	post_n(7);
	a.srq_limit = 4;
	ASSERT_EQ(ibv_modify_srq(srq_.get(), &a, IBV_SRQ_LIMIT), 0);
	ASSERT_NO_FATAL_FAILURE(deliver(4));
	EXPECT_TRUE(no_event());
	ASSERT_NO_FATAL_FAILURE(deliver(1));
	EXPECT_TRUE(srq_event(srq_.get()));
	EXPECT_TRUE(no_event());
}

TEST_F(Srqs, ErrorStateLeavesTheSrqsWqesForTheOtherQps)
{
	ASSERT_EQ(make_srq(8), 0);
	ASSERT_NO_FATAL_FAILURE(make_pairs(2));
	Region bufs(pd_.get(), 8 * kSlot);
	Region src(pd_.get(), 2 * kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	RecvChecker rx(receivers_, bufs);
	for (uint32_t i = 0; i < 4; i++) {
		ibv_sge sg = bufs.sge(i * kSlot, kSlot);
		ASSERT_EQ(post_srq(i, &sg, 1), 0);
		rx.posted(i);
	}

	// The first receiver goes to the error state: LAST_WQE_REACHED for
	// it, and no flush of the SRQ's WQEs, which are not its own.
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	ASSERT_TRUE(modify(receivers_[0].get(), a, IBV_QP_STATE, "->ERR"));
	const auto ev = next_event(ctx_.get(), slow(10s));
	ASSERT_TRUE(ev && ev->event_type == IBV_EVENT_QP_LAST_WQE_REACHED)
		<< "want QP_LAST_WQE_REACHED, got " << event_str(ev);
	EXPECT_EQ(ev->element.qp, receivers_[0].get());
	EXPECT_TRUE(quiet(rcq_.get()));
	EXPECT_TRUE(no_event()) << "LAST_WQE_REACHED once";

	// All four WQEs are still there for the second receiver, in order.
	for (uint32_t seq = 0; seq < 4; seq++) {
		ibv_sge sg = stage(src, 1, seq);
		ASSERT_EQ(send(1, seq, &sg), 0);
		ASSERT_TRUE(sends_done(1, 1));
		const auto wc = poll_n(rcq_.get(), 1);
		ASSERT_EQ(wc.size(), 1u);
		EXPECT_EQ(wc[0].wr_id, seq);
		ASSERT_TRUE(rx.check(wc[0]));
	}
	EXPECT_TRUE(quiet(rcq_.get()));
}

TEST_F(Srqs, UdQpsReceiveDatagramsThroughTheSrq)
{
	// Datagrams carry the 40-byte GRH area before the payload.
	constexpr uint32_t kGrh = 40, kQkey = 0x1234;
	ibv_srq_attr g{};
	ASSERT_EQ(make_srq(4, 1, &g), 0);
	ASSERT_EQ(g.max_wr, 4u) << "the test assumes an exact capacity";
	gid_index_ = ipv4_gid(ctx_.get(), gid_);
	ASSERT_GE(gid_index_, 0) << "no IPv4 RoCE v2 GID";

	auto ud_qp = [&](ibv_cq *cq, bool on_srq) {
		// receivers outlive this test's CQ (TearDown destroys them)
		ibv_qp_init_attr a{};
		a.send_cq = on_srq ? rcq_.get() : cq;
		a.recv_cq = on_srq ? rcq_.get() : cq;
		a.srq = on_srq ? srq_.get() : nullptr;
		a.qp_type = IBV_QPT_UD;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = on_srq ? 0 : 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		Qp qp(ibv_create_qp(pd_.get(), &a));
		if (!qp)
			return qp;
		ibv_qp_attr m{};
		m.qp_state = IBV_QPS_INIT;
		m.port_num = 1;
		m.qkey = kQkey;
		if (ibv_modify_qp(qp.get(), &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						   IBV_QP_PORT | IBV_QP_QKEY))
			return Qp();
		m = {};
		m.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp.get(), &m, IBV_QP_STATE))
			return Qp();
		m.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(qp.get(), &m, IBV_QP_STATE | IBV_QP_SQ_PSN))
			return Qp();
		return qp;
	};
	Cq scq(ibv_create_cq(ctx_.get(), 64, nullptr, nullptr, 0));
	ASSERT_TRUE(scq) << std::strerror(errno);
	Qp tx = ud_qp(scq.get(), false);
	ASSERT_TRUE(tx) << std::strerror(errno);
	for (int i = 0; i < 2; i++) {
		receivers_.push_back(ud_qp(scq.get(), true));
		ASSERT_TRUE(receivers_.back()) << std::strerror(errno);
	}
	ibv_ah_attr aa = ah_attr(gid_, gid_index_);
	Ah ah(ibv_create_ah(pd_.get(), &aa));
	ASSERT_TRUE(ah) << "ibv_create_ah: " << std::strerror(errno);

	Region bufs(pd_.get(), 8 * kSlot), src(pd_.get(), kSlot);
	ASSERT_TRUE(bufs && src) << std::strerror(errno);
	uint64_t next_id = 0;
	auto post_one = [&] {
		ibv_sge sg = bufs.sge((next_id % 8) * kSlot, kSlot);
		return post_srq(next_id++, &sg, 1);
	};
	// A datagram of len bytes (seed seq) to receiver r.
	auto datagram = [&](size_t r, uint32_t seq, uint32_t len) {
		for (uint32_t i = 0; i < len; i++)
			src.at(0)[i] = pat(seq, i);
		ibv_sge sg = src.sge(0, len);
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = seq;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah.get();
		wr.wr.ud.remote_qpn = receivers_[r]->qp_num;
		wr.wr.ud.remote_qkey = kQkey;
		if (ibv_post_send(tx.get(), &wr, &bad))
			return ::testing::AssertionFailure() << "post_send";
		const auto wc = poll_n(scq.get(), 1);
		if (wc.size() != 1 || wc[0].status != IBV_WC_SUCCESS)
			return ::testing::AssertionFailure()
			       << "no send completion";
		return ::testing::AssertionSuccess();
	};
	auto received = [&](size_t r, uint64_t id, uint32_t seq, uint32_t len) {
		const auto wc = poll_n(rcq_.get(), 1);
		if (wc.size() != 1)
			return ::testing::AssertionFailure()
			       << "no receive completion";
		const ibv_wc &w = wc[0];
		if (w.status != IBV_WC_SUCCESS || w.opcode != IBV_WC_RECV ||
		    w.wr_id != id || w.byte_len != kGrh + len ||
		    w.qp_num != receivers_[r]->qp_num ||
		    w.src_qp != tx->qp_num)
			return ::testing::AssertionFailure()
			       << wc_str(w) << ", src_qp " << w.src_qp
			       << ": want wr_id " << id << ", byte_len "
			       << kGrh + len << ", qp_num "
			       << receivers_[r]->qp_num << ", src_qp "
			       << tx->qp_num;
		const uint8_t *p = bufs.at((id % 8) * kSlot) + kGrh;
		for (uint32_t i = 0; i < len; i++)
			if (p[i] != pat(seq, i))
				return ::testing::AssertionFailure()
				       << "byte " << i << " of the payload";
		return ::testing::AssertionSuccess();
	};

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(post_one(), 0);
	// The SRQ's WQEs in order, whichever QP receives.
	ASSERT_TRUE(datagram(0, 1, 100));
	ASSERT_TRUE(received(0, 0, 1, 100));
	ASSERT_TRUE(datagram(1, 2, 1000));
	ASSERT_TRUE(received(1, 1, 2, 1000));
	ASSERT_TRUE(datagram(0, 3, 0));
	ASSERT_TRUE(received(0, 2, 3, 0));

	// An empty SRQ drops the datagram (counted), and the QP carries on.
	const long drops = rx_drops("no_recv_wqe");
	ASSERT_TRUE(datagram(1, 4, 10));
	EXPECT_TRUE(quiet(rcq_.get()));
	if (drops >= 0) {
		EXPECT_EQ(rx_drops("no_recv_wqe"), drops + 1);
	}
	ASSERT_EQ(post_one(), 0);
	ASSERT_TRUE(datagram(1, 5, 20));
	ASSERT_TRUE(received(1, 3, 5, 20));
	EXPECT_TRUE(quiet(rcq_.get()));
}

} // namespace
} // namespace sroce::test
