// Malformed and invalid packets aimed at a live QP, run inside a test-bed
// guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Malformed*'
// An RC, UC or UD QP in RTR has one receive posted (verbs_inject_fixture.h).
// This guest sends it hand-made packets from the peer's address, with the
// QP's number and expected PSN, that are wrong in one way each.
//
// Malformed.*: packets that every receiver drops silently before they reach
// the transport (IBTA 9.6), kernel/dp/net.c and kernel/core/pkt.c: each is
// counted exactly once under its reason, in debugfs's rx_drops and in the
// port's rx_drop_<reason>; the receive WQE and its buffer stay untouched,
// and afterwards a valid packet at the same PSN completes the receive.
//
// InvalidRequest.*: well-formed packets that are not a valid request at
// the expected PSN (kernel/core/rc.c, the path MTU check of kernel/dp/
// exec.c).  A UC responder drops them silently (counted; the QP carries
// on); an RC responder answers with a NAK "invalid request" and puts the QP
// in the error state (IBTA 9.9.3.1, kernel/dp/resp.c): the affiliated event
// IBV_EVENT_QP_REQ_ERR, the QP in ERR, the receive flushed with its buffer
// untouched, and no drop counted.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "verbs_inject_fixture.h"

namespace sroce::test {
namespace {

using roce::Spec;
using roce::Transport;

class Malformed : public Inject {};

// A corrupted ICRC: dropped before the QP is even looked up.
TEST_P(Malformed, BadIcrc)
{
	const Drops d = drops("bad_icrc");
	Spec s = spec();

	s.bad_icrc = true;
	ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
	expect_dropped(d, kCount);
	expect_accepts_the_peer();
}

// A SEND ONLY of each of the two other transports (a UD one with its DETH
// and the QP's Q_Key), and an XRC one (with an XRCETH naming XRC SRQ 1,
// which nothing checks before the transport).
TEST_P(Malformed, OpcodeOfAnotherTransport)
{
	const Drops d = drops("wrong_transport");
	int sent = 0;

	for (const Transport t : {Transport::RC, Transport::UC, Transport::UD,
				  Transport::XRC}) {
		if (t == transport())
			continue;
		Spec s = spec();
		s.opcode = opcode(t, "send-only");
		s.xrc_srqn = 1;
		ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
		sent += kCount;
	}
	EXPECT_EQ(sent, 3 * kCount);
	expect_dropped(d, sent);
	expect_accepts_the_peer();
}

// The first extension header cut short: an RDMA WRITE ONLY (RC, UC) with
// nothing after the BTH and with the first 8 bytes of its 16-byte RETH; a
// UD SEND ONLY with nothing after the BTH and with half its DETH.
TEST_P(Malformed, HeadersCutShort)
{
	const Drops d = drops("malformed");
	Spec s = spec();

	if (!ud())
		s.opcode = opcode(transport(), "write-only");
	for (const uint32_t cut : {0u, ud() ? 4u : 8u}) {
		s.cut = cut;
		ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
	}
	expect_dropped(d, 2 * kCount);
	expect_accepts_the_peer();
}

// A pad count larger than what follows the headers: a SEND ONLY without
// payload whose PadCnt says 1 and 3.
TEST_P(Malformed, PadExceedsPayload)
{
	const Drops d = drops("malformed");
	Spec s = spec();

	s.len = 0;
	for (const uint8_t pad : {1, 3}) {
		s.pad = pad;
		ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
	}
	expect_dropped(d, 2 * kCount);
	expect_accepts_the_peer();
}

// Not a whole number of 4-byte words: the SEND ONLY cut 3 bytes short.
TEST_P(Malformed, LengthNotWholeWords)
{
	const Drops d = drops("malformed");
	Spec s = spec();

	s.cut = uint32_t(roce::ext_len(s.opcode) + kPayload - 3);
	ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
	expect_dropped(d, kCount);
	expect_accepts_the_peer();
}

// Opcodes sroce does not know: an RD SEND ONLY (RoCE has no RD), XRC's
// reserved 0xb5 and XRC's FLUSH (0xbc: of the memory placement extensions
// sroce knows only RC's).
TEST_P(Malformed, UnknownOpcode)
{
	const Drops d = drops("malformed");
	Spec s = spec();

	for (const uint8_t op : {0x44, 0xb5, 0xbc}) {
		s.opcode = op;
		ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
	}
	expect_dropped(d, 3 * kCount);
	expect_accepts_the_peer();
}

INSTANTIATE_TEST_SUITE_P(Live, Malformed,
			 ::testing::Values(IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD),
			 qp_type_name);

class InvalidRequest : public Inject {
protected:
	// s at the expected PSN: UC drops each of kCount as reason, RC takes
	// one to the error state (see the top of the file).
	void expect_refused(const Spec &s, const std::string &uc_reason)
	{
		if (GetParam() == IBV_QPT_UC) {
			const Drops d = drops(uc_reason);

			ASSERT_NO_FATAL_FAILURE(inject(s, kCount));
			expect_dropped(d, kCount);
			expect_accepts_the_peer();
			return;
		}
		const Drops d = drops("malformed");
		const long sent = hw_counter("sent_pkts");

		ASSERT_NO_FATAL_FAILURE(inject(s));
		EXPECT_TRUE(wait_qp_event(IBV_EVENT_QP_REQ_ERR))
			<< "no IBV_EVENT_QP_REQ_ERR";
		EXPECT_EQ(query_state(qp_.get()), IBV_QPS_ERR);
		EXPECT_TRUE(completes(cq_.get(), 1, IBV_WC_WR_FLUSH_ERR,
				      IBV_WC_RECV));
		EXPECT_TRUE(all_are(buf_.data(), kLen, kSentinel, "buffer"));
		// the NAK, to the made-up peer (the counters are cached 10 ms)
		const auto deadline = Clock::now() + kWait;
		while (hw_counter("sent_pkts") <= sent && Clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		EXPECT_GT(hw_counter("sent_pkts"), sent) << "no NAK sent";
		EXPECT_EQ(rx_drops("malformed"), d.debugfs);
		EXPECT_EQ(hw_counter("rx_drop_malformed"), d.port);
	}
};

// A SEND ONLY with 16 bytes more than the path MTU (1024).
TEST_P(InvalidRequest, SendOnlyOverPathMtu)
{
	Spec s = spec();

	s.len = kPmtu + 16;
	expect_refused(s, "malformed");
}

// A SEND FIRST of 512 bytes, an IB MTU but not the QP's path MTU.
TEST_P(InvalidRequest, SendFirstNotOnePathMtu)
{
	Spec s = spec();

	s.opcode = opcode(transport(), "send-first");
	s.len = kPmtu / 2;
	expect_refused(s, "malformed");
}

// A SEND FIRST of one path MTU with a pad count, which only a last packet
// may have.
TEST_P(InvalidRequest, PadOnAFirstPacket)
{
	Spec s = spec();

	s.opcode = opcode(transport(), "send-first");
	s.len = kPmtu;
	s.pad = 1;
	expect_refused(s, "malformed");
}

// A SEND MIDDLE of one path MTU between messages, without a FIRST: UC
// counts it as the rest of a message it lost.
TEST_P(InvalidRequest, SendMiddleWithoutFirst)
{
	Spec s = spec();

	s.opcode = opcode(transport(), "send-middle");
	s.len = kPmtu;
	expect_refused(s, "lost_message");
}

INSTANTIATE_TEST_SUITE_P(Live, InvalidRequest,
			 ::testing::Values(IBV_QPT_RC, IBV_QPT_UC),
			 qp_type_name);

} // namespace
} // namespace sroce::test
