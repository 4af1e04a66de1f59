// The fixture of the shared receive queue cases (Srqs.*, part of
// verbs_device_tests), shared by verbs_srq_test.cc (control path) and
// verbs_srq_data_test.cc (data path).  Run inside a test-bed guest as root:
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='Srq*.*'
// RC QPs of the device under test, in this one process, are connected to
// each other through the device's own IPv4 RoCE v2 GID (same-host
// loopback), as in verbs_rc_fixture.h; the receiving QPs take their receive
// WQEs from one SRQ.  Every receive completion is checked exactly: wr_id
// (each WQE consumed once), status, opcode, byte_len, qp_num and the data
// that landed in the WQE's buffer.
//
// The expectations are those of the IBA (vol. 1, 10.2.9 and 11.6.3) and the
// libibverbs man pages: an SRQ's WQEs belong to the SRQ until a QP takes
// one; a QP in the error state flushes only what it took and raises
// IBV_EVENT_QP_LAST_WQE_REACHED; the SRQ limit event fires once per arming.
#ifndef SROCE_TEST_VERBS_SRQ_FIXTURE_H
#define SROCE_TEST_VERBS_SRQ_FIXTURE_H

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

namespace sroce::test::srq {

using namespace std::chrono_literals;

// How long "nothing more arrives" is watched for.
inline const auto kQuiet = slow(300ms);
// How the senders and receivers are connected: RNR retried for ever, as in
// the RC cases, but with no remote access nor RDMA READ or atomic
// resources, since only SENDs go through the SRQ.
inline constexpr Link kLink = {.access = 0,
			       .max_rd_atomic = 0,
			       .max_dest_rd_atomic = 0,
			       .sq_psn = 0x10,
			       .rq_psn = 0x10};

// Byte i of the message called seed: position dependent.
inline uint8_t pat(uint32_t seed, size_t i)
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

inline ::testing::AssertionResult quiet(ibv_cq *cq, Clock::duration d = kQuiet)
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
inline std::optional<ibv_async_event> next_event(ibv_context *ctx,
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

inline std::string event_str(const std::optional<ibv_async_event> &ev)
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

} // namespace sroce::test::srq

#endif
