#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sroce in network namespaces, in one guest: three namespaces, each with an
# sroce device created inside it ("ip netns exec NS rdma link add", ib_core's
# shared mode).  srA and srB are joined by a veth pair and run RC and UD
# traffic between each other (ibv_rc_pingpong and ibv_ud_pingpong with the
# data check) and within srA (same-host delivery); srC, on a veth of its own
# whose other end stays in the initial namespace, has the same addresses as
# srA and must receive none of that traffic.  Then the netdevs go: srC's
# moves out of its namespace, srB is deleted (which destroys the veth pair
# and so both devices on it), each device is removed and each namespace's
# UDP endpoint closed.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 1 --no-link selftests/netns.sh
#   scripts/testbed -k 6.1 -n 1 --no-link selftests/netns.sh t_ns_ud_pingpong

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"
. "$(dirname "$0")/lib/netns.sh"

SYS=/sys/class/infiniband
LOOP_STATS=/sys/kernel/debug/sroce/loopback
NS_ALL=(srA srB srC)
# srA's (and srC's) addresses, srB's
A4=198.51.100.1 A6=fd53:726f:6366::1
B4=198.51.100.2 B6=fd53:726f:6366::2

rcvd() {		# DEV: its rcvd_pkts hw counter
	cat "$SYS/$1/ports/1/hw_counters/rcvd_pkts"
}

# ns_udp NS: is something bound to UDP 4791 (IPv4) in NS?
ns_udp() {
	ip netns exec "$1" cat /proc/net/udp | grep -q ":12B7 "
}

# ns_traffic NAME TOOL PORT SNS SDEV ...: ns_pp; the server's device counted
# what it received, srC's device received nothing
ns_traffic() {
	local c0 c1 s0 s1
	c0=$(rcvd sroce_c)
	s0=$(rcvd "$5")
	ns_pp "$@" || fail "$2 between $5 and $8"
	c1=$(rcvd sroce_c)
	s1=$(rcvd "$5")
	echo "$5 rcvd_pkts: $s0 -> $s1; sroce_c rcvd_pkts: $c0 -> $c1"
	[ "$s1" -gt "$s0" ] || fail "$5 counted no packet received"
	expect_eq "$c1" 0 "packets srC's device received"
}

t_ns_setup() {
	local ns d
	modprobe sroce || fail "modprobe sroce"
	expect_match "$(rdma system show)" "netns shared" "ib_core's netns mode"
	for ns in "${NS_ALL[@]}"; do
		ip netns add "$ns" || fail "ip netns add $ns"
		ip -n "$ns" link set lo up
	done
	ip link add vA netns srA type veth peer name vB netns srB || fail "veth pair srA-srB"
	ip link add vC netns srC type veth peer name vCp || fail "veth pair srC-init"
	ip link set vCp up
	ns_addr srA vA "$A4" "$A6"
	ns_addr srB vB "$B4" "$B6"
	ns_addr srC vC "$A4" "$A6"
	ip netns exec srA rdma link add sroce_a type sroce netdev vA || fail "rdma link add in srA"
	ip netns exec srB rdma link add sroce_b type sroce netdev vB || fail "rdma link add in srB"
	ip netns exec srC rdma link add sroce_c type sroce netdev vC || fail "rdma link add in srC"
	# a netdev of another namespace is not there for the initial one
	must_fail rdma link add sroce_x type sroce netdev vA
	rdma link show
	for d in sroce_a sroce_b sroce_c; do
		tb_wait_port_active "$d" 30 || fail "$d not ACTIVE"
	done
	wait_for 30 ns_gids_ready sroce_a "$A4" "$A6" || { tb_gids sroce_a; fail "sroce_a's GIDs"; }
	wait_for 30 ns_gids_ready sroce_b "$B4" "$B6" || { tb_gids sroce_b; fail "sroce_b's GIDs"; }
	wait_for 30 ns_gids_ready sroce_c "$A4" "$A6" || { tb_gids sroce_c; fail "sroce_c's GIDs"; }
	expect_match "$(ip netns exec srA rdma link show sroce_a/1)" "netdev vA" "sroce_a's netdev"
	# one IPv4 and one IPv6 socket per namespace with a device, none here
	expect_eq "$(objects udp_sockets)" 6 "UDP sockets"
	for ns in "${NS_ALL[@]}"; do
		ns_udp "$ns" || fail "nothing bound to UDP 4791 in $ns"
	done
	! grep -q ":12B7 " /proc/net/udp || fail "UDP 4791 bound in the initial namespace"
	ip netns exec srB ping -c 1 -W $((10 * SLOW)) "$A4" >/dev/null || fail "no IPv4 path srB -> srA"
	expect_eq "$(rcvd sroce_c)" 0 "sroce_c rcvd_pkts"
}

t_ns_rc_pingpong_ipv4() {
	ns_traffic "$KTAP_CASE" ibv_rc_pingpong 24100 srA sroce_a "$A4" srB sroce_b "$B4" "$A4" \
		-c -s 4097 -n 200
}

t_ns_rc_pingpong_ipv6() {
	ns_traffic "$KTAP_CASE" ibv_rc_pingpong 24110 srB sroce_b "$B6" srA sroce_a "$A6" "$B4" \
		-c -s 65536 -n 50
}

t_ns_ud_pingpong() {
	ns_traffic "$KTAP_CASE" ibv_ud_pingpong 24120 srA sroce_a "$A4" srB sroce_b "$B4" "$A4" \
		-c -s 1024 -n 200
}

# Within srA: the same-host shortcut, in srA's namespace (srC has the same
# addresses and must not see a packet; srB's device neither).
t_ns_same_host() {
	local p0 p1 b0
	p0=$(awk '$1 == "packets" { print $2 }' "$LOOP_STATS")
	b0=$(rcvd sroce_b)
	ns_traffic "$KTAP_CASE" ibv_rc_pingpong 24130 srA sroce_a "$A4" srA sroce_a "$A4" "$A4" \
		-c -s 4097 -n 200
	p1=$(awk '$1 == "packets" { print $2 }' "$LOOP_STATS")
	echo "same-host packets: $p0 -> $p1; sroce_b rcvd_pkts $b0 -> $(rcvd sroce_b)"
	[ $((p1 - p0)) -ge 800 ] || fail "the same-host shortcut was not taken"
	expect_eq "$(rcvd sroce_b)" "$b0" "packets srB's device received"
}

# srC's netdev moves to the initial namespace: leaving srC unregisters it
# there, which removes its device and closes srC's endpoint.
t_ns_netdev_moves_out() {
	ip -n srC link set vC netns 1 || fail "cannot move vC out of srC"
	wait_for 30 dev_gone sroce_c || fail "sroce_c still there: $(rdma link show)"
	wait_until 30 '[ "$(objects udp_sockets)" = 4 ]' ||
		fail "UDP sockets: $(objects udp_sockets), expected 4"
	! ns_udp srC || fail "UDP 4791 still bound in srC"
	expect_eq "$(objects devices)" 2 "live devices"
	ip link del vC
	rdma link show
}

# Deleting srB destroys the veth pair, so both devices go, and both
# namespaces' endpoints with them; srA lives on without one.
t_ns_delete() {
	ip netns delete srB || fail "ip netns delete srB"
	wait_for 60 dev_gone sroce_b || fail "sroce_b still there: $(rdma link show)"
	wait_for 60 dev_gone sroce_a || fail "sroce_a still there: $(rdma link show)"
	wait_until 60 '[ "$(objects udp_sockets)" = 0 ]' ||
		fail "UDP sockets: $(objects udp_sockets), expected 0"
	expect_eq "$(objects devices)" 0 "live devices"
	! ns_udp srA || fail "UDP 4791 still bound in srA"
	ip netns delete srA
	ip netns delete srC
	[ -z "$(rdma link show)" ] || fail "links left: $(rdma link show)"
}

# Arguments name a subset of the cases (t_ns_setup is always run).
CASES=(
	t_ns_setup
	t_ns_rc_pingpong_ipv4
	t_ns_rc_pingpong_ipv6
	t_ns_ud_pingpong
	t_ns_same_host
	t_ns_netdev_moves_out
	t_ns_delete
)
if [ $# -gt 0 ]; then
	ktap_main t_ns_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
