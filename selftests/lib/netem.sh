# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Degrading the RoCE v2 packets one guest sends with netem, for the
# two-guest suites (rc.sh, interop.sh).  Needs IF (the guest's netdev) and,
# for netem_begin/netem_seen, SROCE_ROLE and the test bed's barrier.

# The degraded side is guest a, where the servers run: what it loses are
# the ACKs and READ responses of the clients' requests and the ping-pong
# server's messages.  Not guest b: the client that sends a ping-pong's last
# ACK exits once it has the last message, and if that ACK is lost the
# server's retries run into a QP that no longer exists (the retries are
# exceeded although nothing is wrong).  The last message is the server's,
# so lost data or ACKs from a are always recovered while both sides live.

# netem_on NETEM-ARGS...: degrade the RoCE v2 packets this guest sends to
# queue pairs other than QP1: a prio qdisc at the root sends UDP to port 4791
# (IPv4 and IPv6) whose BTH destination QP is not 1 through netem, all other
# traffic (the tools' TCP exchange, rdma_cm's MADs on QP1, ARP/ND) through a
# plain band.  So the cases measure the RC data path's recovery, not TCP's or
# ib_cm's MAD retransmission timers (seconds each).
netem_on() {
	tc qdisc add dev "$IF" root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 &&
	tc qdisc add dev "$IF" parent 1:3 handle 30: netem "$@" &&
	# BTH bytes 4..7: reserved (8 bits), destination QP (24 bits)
	tc filter add dev "$IF" parent 1: prio 1 protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		match u32 0x00000001 0x00ffffff at 32 flowid 1:2 &&
	tc filter add dev "$IF" parent 1: prio 2 protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:3 &&
	tc filter add dev "$IF" parent 1: prio 3 protocol ipv6 u32 \
		match ip6 protocol 17 0xff match ip6 dport 4791 0xffff \
		match u32 0x00000001 0x00ffffff at 52 flowid 1:2 &&
	tc filter add dev "$IF" parent 1: prio 4 protocol ipv6 u32 \
		match ip6 protocol 17 0xff match ip6 dport 4791 0xffff flowid 1:3
}

netem_off() {
	tc qdisc del dev "$IF" root 2>/dev/null || true
}

# netem_begin NETEM-ARGS...: in guest a, degrade its egress (undone when
# the case's shell exits); both guests then meet at a barrier.
netem_begin() {
	if [ "$SROCE_ROLE" = a ]; then
		trap netem_off EXIT
		netem_on "$@" || fail "cannot set up netem $*"
		echo "guest a, $IF egress: RoCE v2 to QPs other than 1 through netem $*"
	fi
	tb_barrier "$KTAP_CASE.netem" 60 || fail "the peer did not get here"
}

# netem_seen MIN: in guest a, true if netem handled more than MIN packets
# (the filter caught the RoCE traffic); prints the qdisc statistics.
netem_seen() {
	local stats pkts
	[ "$SROCE_ROLE" = a ] || return 0
	stats=$(tc -s qdisc show dev "$IF")
	echo "$stats"
	pkts=$(echo "$stats" | awk '/^qdisc netem/ { n = 1; next } n && $1 == "Sent" { print $4; exit }')
	[ "${pkts:-0}" -gt "$1" ] || {
		echo "netem saw ${pkts:-no} packets: the filter does not catch the RoCE traffic"
		return 1
	}
}
