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
# UDP endpoint closed.
#
# Then ib_core's exclusive mode (rdma system set netns exclusive): a device
# created inside a namespace is seen there and nowhere else (netlink, sysfs,
# libibverbs), changed and deleted only from there, and carries RC traffic
# and rdma_cm (rping) between two namespaces; a device moved with "rdma dev
# set DEV netns NS" is seen and used only in NS, moves back by name, and by
# itself when NS is deleted; a namespace dismantled under traffic takes its
# device and, through the veth pair, its peer's device with a process still
# on it, which ends.  Last, back to shared mode.  Emits KTAP.
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
	local ns
	modprobe sroce || fail "modprobe sroce"
	expect_match "$(rdma system show)" "netns shared" "ib_core's netns mode"
	ns_new "${NS_ALL[@]}"
	ip link add vA netns srA type veth peer name vB netns srB || fail "veth pair srA-srB"
	ip link add vC netns srC type veth peer name vCp || fail "veth pair srC-init"
	ip link set vCp up
	ns_addr srA vA "$A4" "$A6"
	ns_addr srB vB "$B4" "$B6"
	ns_addr srC vC "$A4" "$A6"
	ns_link srA sroce_a vA
	ns_link srB sroce_b vB
	ns_link srC sroce_c vC
	# a netdev of another namespace is not there for the initial one
	must_fail rdma link add sroce_x type sroce netdev vA
	rdma link show
	ns_dev_ready sroce_a "$A4" "$A6"
	ns_dev_ready sroce_b "$B4" "$B6"
	ns_dev_ready sroce_c "$A4" "$A6"
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

# ---- ib_core's exclusive mode -------------------------------------------
# exA and exB on a veth pair, a device created inside each; exC empty;
# "init", a name for the initial namespace (ip netns attach), where sroce_m
# is created on a veth pair of its own.

EA4=198.51.100.17 EA6=fd53:726f:6366::17
EB4=198.51.100.18 EB6=fd53:726f:6366::18
M4=192.0.2.33 M6=fd53:726f:6368::33
EXCL_NS=(exA exB exC init)

# sees NS: the RDMA devices NS sees, through netlink and in its sysfs
sees() {
	local nl sys
	nl=$(ip netns exec "$1" rdma dev show | awk '{ sub(":$", "", $2); print $2 }' | sort | xargs)
	sys=$(ip netns exec "$1" ls /sys/class/infiniband | sort | xargs)
	echo "netlink: $nl; sysfs: $sys"
}

expect_sees() {		# NS DEVICES
	expect_eq "$(sees "$1")" "netlink: $2; sysfs: $2" "the devices $1 sees"
}

t_excl_setup() {
	# (the namespaces of the cases before may still be being dismantled)
	wait_until 60 'rdma system set netns exclusive 2>/dev/null' ||
		fail "rdma system set netns exclusive: $(rdma system set netns exclusive 2>&1)"
	expect_match "$(rdma system show)" "netns exclusive" "ib_core's netns mode"
	ip netns attach init 1 || fail "ip netns attach init 1"
	ns_new exA exB exC
	ip link add eA netns exA type veth peer name eB netns exB || fail "veth pair exA-exB"
	ip link add em type veth peer name emp || fail "veth pair em-emp"
	ip link set emp up
	ns_addr exA eA "$EA4" "$EA6"
	ns_addr exB eB "$EB4" "$EB6"
	ns_addr init em "$M4" "$M6"
	ns_link exA sroce_ea eA
	ns_link exB sroce_eb eB
	ns_link init sroce_m em
	ns_dev_ready -n exA sroce_ea "$EA4" "$EA6"
	ns_dev_ready -n exB sroce_eb "$EB4" "$EB6"
	ns_dev_ready -n init sroce_m "$M4" "$M6"
	expect_eq "$(objects devices)" 3 "live devices"
}

# A device is seen only in the namespace it was created in, through
# netlink, sysfs and libibverbs, and changed or deleted only from there.
t_excl_isolated() {
	expect_sees exA sroce_ea
	expect_sees exB sroce_eb
	expect_sees exC ""
	expect_sees init sroce_m
	expect_eq "$(ip netns exec exB ibv_devices | awk 'NR > 2 { print $1 }' | xargs)" sroce_eb \
		"ibv_devices in exB"
	must_fail ip netns exec exB ibv_devinfo -d sroce_ea
	must_fail ip netns exec exB rdma link show sroce_ea/1
	must_fail rdma link delete sroce_ea
	must_fail ip netns exec exC rdma dev set sroce_eb netns exC
	expect_sees exA sroce_ea
	expect_sees exB sroce_eb
}

t_excl_rc_pingpong() {
	ns_pp "$KTAP_CASE" ibv_rc_pingpong 24140 exA sroce_ea "$EA4" exB sroce_eb "$EB4" "$EA4" \
		-c -s 4097 -n 200 || fail "ibv_rc_pingpong between exA and exB"
}

# rdma_cm finds a namespace's device from its addresses there
t_excl_rping() {
	local srv=$RT_OUT/excl_rping.server cli=$RT_OUT/excl_rping.client spid n
	ip netns exec exA timeout $((120 * SLOW)) rping -s -a "$EA4" -p 24150 -V -C 50 >"$srv" 2>&1 &
	spid=$!
	wait_until 60 'ip netns exec exA rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN"' ||
		{ kill "$spid" 2>/dev/null || :; rt_show "$srv" "rping server"; fail "no rping server"; }
	ip netns exec exB timeout $((120 * SLOW)) rping -c -a "$EA4" -I "$EB4" -p 24150 -v -V -C 50 \
		>"$cli" 2>&1 || { rt_show "$cli" "rping client"; fail "rping client: exit $?"; }
	wait "$spid" || { rt_show "$srv" "rping server"; fail "rping server: exit status $?"; }
	n=$(grep -c '^ping data: rdma-ping-' "$cli")
	expect_eq "$n" 50 "pings verified"
}

# "rdma dev set DEV netns NS" moves what ib_core shows, no more: sroce_m is
# seen only in exC then, where a process uses it (its packets still go
# through em, in the initial namespace: same-host there); it moves back by
# name, and by itself when exC is deleted with it inside.
t_excl_move() {
	rdma dev set sroce_m netns exC || fail "rdma dev set sroce_m netns exC"
	expect_sees exC sroce_m
	expect_sees init ""
	ns_pp "$KTAP_CASE.exC" ibv_rc_pingpong 24160 exC sroce_m "$M4" exC sroce_m "$M4" 127.0.0.1 \
		-c -s 4097 -n 100 || fail "ibv_rc_pingpong on sroce_m in exC"
	ip netns exec exC rdma dev set sroce_m netns init || fail "rdma dev set sroce_m netns init"
	expect_sees init sroce_m
	expect_sees exC ""
	rdma dev set sroce_m netns exC || fail "rdma dev set sroce_m netns exC, again"
	ip netns delete exC
	wait_until 60 '[ "$(sees init)" = "netlink: sroce_m; sysfs: sroce_m" ]' ||
		fail "sroce_m not back in the initial namespace: $(sees init)"
	ns_pp "$KTAP_CASE.init" ibv_rc_pingpong 24170 init sroce_m "$M4" init sroce_m "$M4" 127.0.0.1 \
		-c -s 4097 -n 100 || fail "ibv_rc_pingpong on sroce_m back home"
}

# A container goes: exA's processes are killed and exA is dismantled,
# which destroys the veth pair, so exB's device goes too, with a pingpong
# still running on it.  Every process ends, both devices and exA's
# and exB's endpoints are gone.
t_excl_namespace_dies() {
	local srv=$RT_OUT/excl_die.server cli=$RT_OUT/excl_die.client spid cpid ga gb t0
	ga=$(ns_tb exA tb_gid_index sroce_ea "$EA4") || fail "no GID for $EA4"
	gb=$(ns_tb exB tb_gid_index sroce_eb "$EB4") || fail "no GID for $EB4"
	ip netns exec exA ibv_rc_pingpong -d sroce_ea -g "$ga" -p 24180 -e -c -n 1000000 >"$srv" 2>&1 &
	spid=$!
	wait_for 60 ns_listening exA 24180 || { kill "$spid" 2>/dev/null || :; fail "no pingpong server in exA"; }
	ip netns exec exB ibv_rc_pingpong -d sroce_eb -g "$gb" -p 24180 -e -c -n 1000000 "$EA4" \
		>"$cli" 2>&1 &
	cpid=$!
	wait_until 30 '[ "$(rt_port_counter sroce_ea rdma_recvs exA)" -ge 100 ]' ||
		{ kill "$spid" "$cpid" 2>/dev/null || :; rt_show "$cli" "client"; fail "no traffic between exA and exB"; }
	ip netns delete exA
	ip netns delete exB
	kill -KILL "$spid"
	t0=$SECONDS
	wait_until 60 '[ "$(objects devices)" = 1 ]' ||
		fail "devices left: $(objects devices), expected sroce_m's 1"
	echo "sroce_ea and sroce_eb gone $((SECONDS - t0)) s after exA's process"
	wait_for 30 gone "$cpid" || { cat "/proc/$cpid/stack"; fail "exB's pingpong stuck"; }
	wait "$cpid" && fail "exB's pingpong succeeded with its device gone"
	rt_show "$cli" "exB's pingpong"
	wait_until 60 '[ "$(objects udp_sockets)" = 2 ]' ||
		fail "UDP sockets: $(objects udp_sockets), expected the initial namespace's 2"
}

# back to shared mode once the namespaces are gone
t_excl_shared_again() {
	rdma link delete sroce_m || fail "rdma link delete sroce_m"
	ip link del em
	ip netns delete init
	wait_until 60 'rdma system set netns shared 2>/dev/null' ||
		fail "rdma system set netns shared: $(rdma system set netns shared 2>&1)"
	expect_match "$(rdma system show)" "netns shared" "ib_core's netns mode"
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
	t_excl_setup
	t_excl_isolated
	t_excl_rc_pingpong
	t_excl_rping
	t_excl_move
	t_excl_namespace_dies
	t_excl_shared_again
)
if [ $# -gt 0 ]; then
	ktap_main t_ns_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
