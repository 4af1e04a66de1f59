# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Degrading the RoCE v2 packets one guest sends with netem, for the
# two-guest suites (rc.sh, interop.sh, ulp.sh).  Needs IF (the guest's netdev) and,
# for netem_begin/netem_seen, SROCE_ROLE and the test bed's barrier.

# The degraded side is guest a, where the servers run: what it loses are
# the ACKs and READ responses of the clients' requests and the ping-pong
# server's messages.  With netem_begin --both guest b's egress is degraded
# too, so the clients' requests are lost as well and each responder must
# recover from gaps in the request stream.  perftest ends with a TCP
# handshake after each side has all its completions, so any lost packet is
# recovered while both QPs live.  ibv_rc_pingpong has no such handshake:
# each side exits once its last SEND is acknowledged and its last message
# received, so a lost final ACK makes the peer retry into a QP that no
# longer exists (retries exceeded although nothing is wrong).  So during a
# ping-pong the ACKs of every degraded guest are spared (netem_spare_acks).

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
	tc filter add dev "$IF" parent 1: prio 10 protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		match u32 0x00000001 0x00ffffff at 32 flowid 1:2 &&
	tc filter add dev "$IF" parent 1: prio 20 protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:3 &&
	tc filter add dev "$IF" parent 1: prio 30 protocol ipv6 u32 \
		match ip6 protocol 17 0xff match ip6 dport 4791 0xffff \
		match u32 0x00000001 0x00ffffff at 52 flowid 1:2 &&
	tc filter add dev "$IF" parent 1: prio 40 protocol ipv6 u32 \
		match ip6 protocol 17 0xff match ip6 dport 4791 0xffff flowid 1:3
}

# netem_spare_acks: from now on RC ACKs (BTH opcode 0x11, the first byte
# after the UDP header) bypass netem; netem_unspare_acks: they no longer do
netem_spare_acks() {
	tc filter add dev "$IF" parent 1: prio 5 protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		match u8 0x11 0xff at 28 flowid 1:2 &&
	tc filter add dev "$IF" parent 1: prio 25 protocol ipv6 u32 \
		match ip6 protocol 17 0xff match ip6 dport 4791 0xffff \
		match u8 0x11 0xff at 48 flowid 1:2
}

netem_unspare_acks() {
	tc filter del dev "$IF" parent 1: prio 5 &&
	tc filter del dev "$IF" parent 1: prio 25
}

# netem_pingpong ARGS...: rt_pingpong with this guest's ACKs spared if its
# egress is degraded (see the head of this file); the spared ACKs are
# counted in the plain band
netem_pingpong() {
	local rc
	if [ -n "$NETEM_HERE" ]; then
		netem_spare_acks || { echo "cannot spare the ACKs from netem"; return 1; }
	fi
	rt_pingpong "$@"
	rc=$?
	if [ -n "$NETEM_HERE" ]; then
		netem_unspare_acks || { echo "cannot stop sparing the ACKs"; rc=1; }
	fi
	return "$rc"
}

netem_off() {
	tc qdisc del dev "$IF" root 2>/dev/null || true
}

# netem_begin [--both] NETEM-ARGS...: in guest a (with --both, in each
# guest), degrade its egress (undone when the case's shell exits) and set
# NETEM_HERE; both guests then meet at a barrier.
netem_begin() {
	local both=
	if [ "$1" = --both ]; then
		both=1
		shift
	fi
	NETEM_HERE=
	if [ "$SROCE_ROLE" = a ] || [ -n "$both" ]; then
		trap netem_off EXIT
		netem_on "$@" || fail "cannot set up netem $*"
		NETEM_HERE=1
		echo "guest $SROCE_ROLE, $IF egress: RoCE v2 to QPs other than 1 through netem $*"
	fi
	tb_barrier "$KTAP_CASE.netem" 60 || fail "the peer did not get here"
}

# netem_dropped: the packets this guest's netem qdisc dropped
netem_dropped() {
	tc -s qdisc show dev "$IF" | awk '
		/^qdisc netem/ { n = 1; next }
		n && $1 == "Sent" {
			for (i = 1; i < NF; i++)
				if ($i == "(dropped") { sub(",", "", $(i + 1)); print $(i + 1) }
			exit
		}'
}

# netem_seen MIN: where netem_begin degraded the egress, true if netem
# handled more than MIN packets (the filter caught the RoCE traffic);
# prints the qdisc statistics.
netem_seen() {
	local stats pkts
	[ -n "$NETEM_HERE" ] || return 0
	stats=$(tc -s qdisc show dev "$IF")
	echo "$stats"
	pkts=$(echo "$stats" | awk '/^qdisc netem/ { n = 1; next } n && $1 == "Sent" { print $4; exit }')
	[ "${pkts:-0}" -gt "$1" ] || {
		echo "netem saw ${pkts:-no} packets: the filter does not catch the RoCE traffic"
		return 1
	}
}
