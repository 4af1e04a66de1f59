// A UD QP's route on a live sroce device, over the guest's IPv4 and its
// IPv6 address, run inside a test-bed guest as root (part of
// verbs_device_tests):
//   SROCE_RDMA_DEV=sroce0 verbs_device_tests --gtest_filter='*UdRoute*'
// A QP keeps the route of its last datagram for as long as it sends over
// one address handle to one QP (kernel/dp/net.c, sroce_net_route()), so the
// routing table must still decide each datagram: a route made unreachable
// under a live address handle stops its datagrams (each counted in
// tx_err_no_route and lost, as a datagram may be: the send completes
// successfully), and once the route is back they leave again.  The
// destination is a made-up host of the guest's own subnet (.78, ::78) with
// a permanent neighbour entry, so the datagrams go out on the wire without
// anybody answering ARP or neighbour discovery.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "verbs_ud_fixture.h"

namespace sroce::test::ud {
namespace {

constexpr uint32_t kDestQpn = 0x4242;
constexpr uint32_t kLen = 32;	// one packet
constexpr long kN = 3;		// datagrams per phase

class UdRoute : public Datagram, public ::testing::WithParamInterface<int> {
protected:
	UdRoute() { family_ = GetParam(); }

	void SetUp() override
	{
		if (!testing_sroce())
			GTEST_SKIP() << not_sroce("the tx_err_no_route counter");
		ASSERT_NO_FATAL_FAILURE(Datagram::SetUp());
		const char *own = std::getenv(v4() ? "SROCE_IP4" : "SROCE_IP6");
		const char *nd = std::getenv("SROCE_NETDEV");
		ASSERT_TRUE(own && *own && nd && *nd)
			<< "SROCE_IP4, SROCE_IP6, SROCE_NETDEV not set: run me "
			   "in the test bed";
		peer_ = on_link(own, 78);
		neigh_.emplace(peer_, nd, "02:00:00:00:00:78");
		ASSERT_TRUE(neigh_->ok())
			<< "cannot add a neighbour entry for " << peer_;
		ibv_gid dgid;
		ASSERT_TRUE(gid_of_ip(peer_, dgid)) << peer_;
		ah_ = make_ah(pd_.get(), dgid);
		ASSERT_TRUE(ah_) << "ibv_create_ah: " << std::strerror(errno);
		qp_ = make_qp(IBV_QPT_UD);
		ASSERT_TRUE(qp_) << std::strerror(errno);
		ASSERT_TRUE(ud_ready(qp_.get()));
		ASSERT_GE(hw_counter("tx_err_no_route"), 0)
			<< "cannot read the port's hw_counters";
	}

	void TearDown() override
	{
		if (unreachable_)
			unreachable(false);
		neigh_.reset();
	}

	bool v4() const { return family_ == AF_INET; }

	// Adds or deletes an unreachable route to the peer alone, more
	// specific than the subnet's; the command's exit status.
	int unreachable(bool on)
	{
		const int r = quiet_sh(std::string(v4() ? "ip " : "ip -6 ") +
				       "route " + (on ? "add" : "del") +
				       " unreachable " + peer_ +
				       (v4() ? "/32" : "/128"));
		if (!r)
			unreachable_ = on;
		return r;
	}

	// kN datagrams over the fixture's address handle, each completing
	// successfully whether it could be routed or not.
	void send(uint64_t first_id)
	{
		Region src(pd_.get(), kLen, 0x5a);

		for (uint64_t id = first_id; id < first_id + kN; id++) {
			ASSERT_EQ(post_ud(qp_.get(), id, src.sge(0, kLen),
					  ah_.get(), kDestQpn, kQkey),
				  0);
			const auto wc = next_wc(scq_.get());
			ASSERT_TRUE(wc) << "no send completion";
			EXPECT_EQ(wc->status, IBV_WC_SUCCESS) << wc_str(*wc);
			EXPECT_EQ(wc->wr_id, id);
		}
	}

	// A port counter once nothing is on its way any more (and past
	// ib_core's cache of the counters).
	static long settled(const char *name)
	{
		std::this_thread::sleep_for(kQuiet);
		return hw_counter(name);
	}

	std::string peer_;
	std::optional<PermanentNeighbour> neigh_;
	bool unreachable_ = false;
	Ah ah_;
	Qp qp_;
};

TEST_P(UdRoute, FollowsRouteChanges)
{
	const long lost = settled("tx_err_no_route");
	long sent = hw_counter("sent_pkts");

	// routed: they leave, and the QP keeps the route
	ASSERT_NO_FATAL_FAILURE(send(1));
	EXPECT_GE(wait_delta("sent_pkts", sent, kN), kN) << "routed";
	EXPECT_EQ(settled("tx_err_no_route"), lost) << "routed";

	// the same address handle and QP, the route now unreachable
	ASSERT_EQ(unreachable(true), 0) << "ip route add unreachable " << peer_;
	sent = hw_counter("sent_pkts");
	ASSERT_NO_FATAL_FAILURE(send(11));
	EXPECT_EQ(wait_delta("tx_err_no_route", lost, kN), kN)
		<< "datagrams not counted as unroutable";
	EXPECT_EQ(settled("sent_pkts"), sent)
		<< "datagrams left by the route kept from before";
	EXPECT_EQ(hw_counter("tx_err_no_route") - lost, kN);

	// the route back
	ASSERT_EQ(unreachable(false), 0) << "ip route del unreachable " << peer_;
	ASSERT_NO_FATAL_FAILURE(send(21));
	EXPECT_GE(wait_delta("sent_pkts", sent, kN), kN) << "route back";
	EXPECT_EQ(settled("tx_err_no_route") - lost, kN) << "route back";
}

std::string family_name(const ::testing::TestParamInfo<int> &i)
{
	return i.param == AF_INET ? "Ipv4" : "Ipv6";
}

INSTANTIATE_TEST_SUITE_P(Ud, UdRoute, ::testing::Values(AF_INET, AF_INET6),
			 family_name);

} // namespace
} // namespace sroce::test::ud
