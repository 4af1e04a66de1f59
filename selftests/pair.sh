#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two guests on one wire, each with an sroce device set up by the test bed:
# both come up ACTIVE with GIDs for their addresses, see each other over the
# wire, and RoCE v2 datagrams a device cannot consume yet are dropped and
# counted, not lost silently.  Then the verbs-level GoogleTest cases
# (userspace/tests/device) run against each guest's device.  Emits KTAP.

. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/gid.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
SYS=/sys/class/infiniband
DROPS=/sys/kernel/debug/sroce/rx_drops
DATAGRAMS=20

no_qp_drops() {
	awk '$1 == "no_qp" { print $2 }' "$DROPS"
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
	ping -c 2 -W 5 "$SROCE_PEER_IP4" || fail "IPv4 ping to $SROCE_PEER_IP4"
	ping -6 -c 2 -W 5 "$SROCE_PEER_IP6" || fail "IPv6 ping to $SROCE_PEER_IP6"
}

# Guest b sends RoCE v2 datagrams to guest a; a has no QPs yet, so each must
# be counted as dropped.
t_unconsumed_datagrams_counted() {
	local before after i
	before=$(no_qp_drops)
	tb_barrier drops-before 60 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		for i in $(seq $DATAGRAMS); do
			printf 'not a RoCE packet %d' "$i" >"/dev/udp/$SROCE_PEER_IP4/4791"
			printf 'not a RoCE packet %d' "$i" >"/dev/udp/$SROCE_PEER_IP6/4791"
		done
	fi
	tb_barrier drops-sent 60 || fail "barrier"
	[ "$SROCE_ROLE" = a ] || return 0
	wait_until 30 '[ $(($(no_qp_drops) - before)) -ge $((2 * DATAGRAMS)) ]' ||
		fail "counted $(($(no_qp_drops) - before)) drops, expected $((2 * DATAGRAMS))"
	after=$(no_qp_drops)
	echo "no_qp drops: $before -> $after"
}

ktap_main \
	t_port_active \
	t_gids_for_own_addresses \
	t_distinct_node_guids \
	t_wire_reaches_peer \
	t_unconsumed_datagrams_counted \
	"gtest:${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/verbs_device_tests"
