#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two guests on one wire, each with an sroce device set up by the test bed:
# both come up ACTIVE with GIDs for their addresses, see each other over the
# wire, and datagrams to UDP port 4791 that no QP consumes (garbage, RoCE v2
# packets with a bad ICRC or for a QP that does not exist, over the wire and
# through the loopback device) are dropped and counted by reason, not lost
# silently.  Then the verbs-level GoogleTest cases
# (userspace/tests/device) run against each guest's device.  Emits KTAP.

. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/gid.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
SYS=/sys/class/infiniband
DROPS=/sys/kernel/debug/sroce/rx_drops
LIB=$(dirname "$0")/lib
DATAGRAMS=20
PACKETS=10
NO_QPN=0xabcdef		# above every QP number sroce hands out

drops() {	# REASON: the rx_drops count of REASON
	awk -v r="$1" '$1 == r { print $2 }' "$DROPS"
}

# expect_drops SECONDS REASON BEFORE N: the count of REASON grows from BEFORE
# by exactly N within SECONDS.
expect_drops() {
	local reason=$2 before=$3 n=$4
	wait_until "$1" "[ \$((\$(drops $reason) - $before)) -ge $n ]" ||
		fail "$reason: counted $(($(drops "$reason") - before)) drops, expected $n"
	expect_eq "$(($(drops "$reason") - before))" "$n" "$reason drops"
	echo "$reason drops: $before -> $(drops "$reason")"
}

t_port_active() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	rdma link show "$DEV/1"
	ibv_devinfo -d "$DEV"
	ibv_devinfo -d "$DEV" | grep -Eq "state:[[:space:]]+PORT_ACTIVE" || fail "ibv_devinfo: not PORT_ACTIVE"
}

t_gids_for_own_addresses() {
	has_gid "$DEV" "$SROCE_IP4" || fail "no RoCE v2 GID for $SROCE_IP4"
	has_gid "$DEV" "$SROCE_IP6" || fail "no RoCE v2 GID for $SROCE_IP6"
}

t_distinct_node_guids() {
	cat "$SYS/$DEV/node_guid" >"$SROCE_SHARED/guid.$SROCE_ROLE"
	tb_barrier guids 60 || fail "peer never published its GUID"
	local peer=a
	[ "$SROCE_ROLE" = a ] && peer=b
	[ -s "$SROCE_SHARED/guid.$peer" ] || fail "no GUID from peer"
	[ "$(cat "$SROCE_SHARED/guid.$peer")" != "$(cat "$SYS/$DEV/node_guid")" ] ||
		fail "both guests have the same node GUID"
}

t_wire_reaches_peer() {
	ping -c 2 -W $((5 * SLOW)) "$SROCE_PEER_IP4" || fail "IPv4 ping to $SROCE_PEER_IP4"
	ping -6 -c 2 -W $((5 * SLOW)) "$SROCE_PEER_IP6" || fail "IPv6 ping to $SROCE_PEER_IP6"
}

# Guest b sends datagrams to port 4791 that are not RoCE v2 packets: too
# short for a BTH and an ICRC (runt), or long enough but without a valid
# ICRC (bad_icrc).  Guest a must count each one.
t_garbage_datagrams_counted() {
	local runt bad i
	runt=$(drops runt)
	bad=$(drops bad_icrc)
	tb_barrier garbage-before 60 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		for i in $(seq $DATAGRAMS); do
			printf 'not a RoCE packet %d' "$i" >"/dev/udp/$SROCE_PEER_IP4/4791"
			printf 'not a RoCE packet %d' "$i" >"/dev/udp/$SROCE_PEER_IP6/4791"
			printf 'runt %d' "$i" >"/dev/udp/$SROCE_PEER_IP4/4791"
			printf 'runt %d' "$i" >"/dev/udp/$SROCE_PEER_IP6/4791"
		done
	fi
	tb_barrier garbage-sent 60 || fail "barrier"
	[ "$SROCE_ROLE" = a ] || return 0
	expect_drops 30 runt "$runt" $((2 * DATAGRAMS))
	expect_drops 30 bad_icrc "$bad" $((2 * DATAGRAMS))
}

# Guest b sends real RoCE v2 packets (IPv4 and IPv6, UDP checksum 0, random
# values in the fields the ICRC does not cover) to a QP number guest a does
# not have: with a valid ICRC they reach the QP lookup (no_qp), with a
# corrupted one they do not (bad_icrc).
t_roce_packets_counted() {
	local noqp bad
	noqp=$(drops no_qp)
	bad=$(drops bad_icrc)
	tb_barrier roce-before 60 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		python3 -S "$LIB/roce_send.py" -n $PACKETS -q $NO_QPN \
			valid "$SROCE_IP4" "$SROCE_PEER_IP4" \
			bad-icrc "$SROCE_IP4" "$SROCE_PEER_IP4" \
			valid "$SROCE_IP6" "$SROCE_PEER_IP6" \
			bad-icrc "$SROCE_IP6" "$SROCE_PEER_IP6" ||
			fail "roce_send.py"
	fi
	tb_barrier roce-sent 60 || fail "barrier"
	[ "$SROCE_ROLE" = a ] || return 0
	expect_drops 30 no_qp "$noqp" $((2 * PACKETS))
	expect_drops 30 bad_icrc "$bad" $((2 * PACKETS))
}

# RoCE v2 packets guest a sends to its own addresses go through the loopback
# device; the receive path must find sroce0 by the destination address and
# count them as no_qp.  Sent to 127.0.0.1 and ::1 (addresses of lo, which has
# no sroce device) they are no_device.
t_local_roce_packets_counted() {
	[ "$SROCE_ROLE" = a ] || return 0
	local noqp nodev
	noqp=$(drops no_qp)
	nodev=$(drops no_device)
	python3 -S "$LIB/roce_send.py" -n $PACKETS -q $NO_QPN \
		valid "$SROCE_IP4" "$SROCE_IP4" valid "$SROCE_IP6" "$SROCE_IP6" \
		valid 127.0.0.1 127.0.0.1 valid ::1 ::1 ||
		fail "roce_send.py"
	expect_drops 30 no_qp "$noqp" $((2 * PACKETS))
	expect_drops 30 no_device "$nodev" $((2 * PACKETS))
}

ktap_main \
	t_port_active \
	t_gids_for_own_addresses \
	t_distinct_node_guids \
	t_wire_reaches_peer \
	t_garbage_datagrams_counted \
	t_roce_packets_counted \
	t_local_roce_packets_counted \
	"gtest:${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/verbs_device_tests" \
	t_teardown_clean
