// The address check of connected QPs on a live RDMA device, run inside a
// test-bed guest as root (part of verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*Addr*'
// An RC or a UC QP in RTR whose address vector names a made-up peer has one
// receive posted (verbs_inject_fixture.h).  This guest then sends it RoCE
// v2 SEND ONLY packets with a valid ICRC, the QP's number and its expected
// PSN through a raw IP socket: their addresses are whatever the case
// wants.  Only the one from the peer to the QP's own address may complete
// the receive; every other is dropped, counted under its reason in
// rx_drops, and leaves the receive WQE and its buffer alone.
#include <gtest/gtest.h>

#include <string>

#include "verbs_inject_fixture.h"

namespace sroce::test {
namespace {

class Addr : public Inject {
protected:
	// count of spec() (at psn) from src to dst.
	void send(const std::string &src, const std::string &dst, int count,
		  uint32_t psn = kPsn)
	{
		roce::Spec s = spec();

		s.psn = psn;
		inject(src, dst, s, count);
	}
};

// This guest sends from its own address, not the peer's: the case of
// hdr_check()'s check_addr() in rdma_rxe.  For UC, one more packet starts a
// message at another PSN, which a UC responder would resynchronise to.
TEST_P(Addr, RefusesPacketsFromAnotherSource)
{
	const long before = rx_drops("bad_src_addr");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";
	int sent = kCount;

	ASSERT_NO_FATAL_FAILURE(send(self_, self_, kCount));
	if (GetParam() == IBV_QPT_UC) {
		ASSERT_NO_FATAL_FAILURE(send(self_, self_, 1, kPsn + 100));
		sent++;
	}
	EXPECT_EQ(wait_drops("bad_src_addr", before + sent), before + sent);
	expect_untouched();
	expect_accepts_the_peer();
}

// From the peer, but to another address of this guest.
TEST_P(Addr, RefusesPacketsToAnotherOwnAddress)
{
	const std::string other = on_link(self_, 78);
	struct Cleanup {
		std::string del;
		~Cleanup() { quiet_sh(del); }
	} cleanup{"ip addr del " + other + "/32 dev " + netdev_};
	ASSERT_EQ(quiet_sh("ip addr add " + other + "/32 dev " + netdev_), 0);
	const long before = rx_drops("bad_dst_addr");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";

	ASSERT_NO_FATAL_FAILURE(send(peer_, other, kCount));
	EXPECT_EQ(wait_drops("bad_dst_addr", before + kCount), before + kCount);
	expect_untouched();
	expect_accepts_the_peer();
}

// From the peer, to the subnet's broadcast address (which the packets also
// take to the other guest on the wire, whose count grows too: at least).
TEST_P(Addr, RefusesBroadcasts)
{
	const long before = rx_drops("bcast");
	ASSERT_GE(before, 0) << "cannot read the rx_drops counters";

	ASSERT_NO_FATAL_FAILURE(send(peer_, on_link(self_, 255), kCount));
	EXPECT_GE(wait_drops("bcast", before + kCount), before + kCount);
	expect_untouched();
	expect_accepts_the_peer();
}

INSTANTIATE_TEST_SUITE_P(Connected, Addr,
			 ::testing::Values(IBV_QPT_RC, IBV_QPT_UC),
			 qp_type_name);

} // namespace
} // namespace sroce::test
