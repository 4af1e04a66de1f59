#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifecycle chaos under traffic, in one guest: two network namespaces (xA,
# xB) joined by a veth pair, an sroce device in each, and between them an
# RC and a UD pingpong with their data check, RDMA READs (ib_read_bw) and
# atomics (ib_atomic_bw) running while the case breaks something: the link
# flaps, the MTU changes, the tools are killed with SIGKILL (QPs destroyed
# with READs and atomics outstanding), a device is deleted with users, the
# veth pair is deleted, the module is unloaded with users, the namespaces
# are deleted (the tools then run outside them).  Each case then
# asserts what the kernel owes: every tool ends (by itself or by SIGKILL)
# within a bound, none stuck in the kernel; with both devices back, sroce's
# debugfs object counts are what the two devices alone hold; a device
# removed with users is gone within a bound; and a new verified pingpong
# works.  The test bed fails the run on
# any kernel complaint.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 1 --no-link selftests/chaos.sh
#   scripts/testbed -k 6.1 -n 1 --no-link selftests/chaos.sh t_chaos_kill9

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"
. "$(dirname "$0")/lib/netns.sh"

A4=203.0.113.1 A6=fd53:726f:6367::1
B4=203.0.113.2 B6=fd53:726f:6367::2
DEVA=sroce_xa DEVB=sroce_xb
TOOLS=$RT_OUT/chaos.pids
BASE=$RT_OUT/chaos.objects

port_of() { echo $((25000 + 20 * $1)); }

rcvd() { rt_port_counter "$1" rcvd_pkts; }	# DEV

# the object counts on one line (the devices' own included: each has its
# management QP, CQ, PD and MR)
objects_line() { tr '\n' ' ' <"$NS_OBJS"; }

# addr_back NS NETDEV IPV6: the global IPv6 address, which a link going
# down takes away, back (as a network manager would put it)
addr_back() {
	ip -n "$1" -6 addr show dev "$2" | grep -q "inet6 $3/" ||
		ip -n "$1" -6 addr add "$3/64" dev "$2" nodad
}

# links_up: the veth pair (if missing) and both devices, ACTIVE with GIDs
links_up() {
	if ! ip -n xA link show xa >/dev/null 2>&1; then
		ip link add xa netns xA type veth peer name xb netns xB || fail "veth pair xA-xB"
		ns_addr xA xa "$A4" "$A6"
		ns_addr xB xb "$B4" "$B6"
	fi
	addr_back xA xa "$A6"
	addr_back xB xb "$B6"
	[ -e "$NS_SYS/$DEVA" ] || ns_link xA "$DEVA" xa
	[ -e "$NS_SYS/$DEVB" ] || ns_link xB "$DEVB" xb
	ns_dev_ready "$DEVA" "$A4" "$A6"
	ns_dev_ready "$DEVB" "$B4" "$B6"
}

# bg NS OUT CMD...: CMD in NS in the background; "PID NS CMD" in $TOOLS
bg() {
	local ns=$1 out=$2
	shift 2
	ip netns exec "$ns" "$@" >"$out" 2>&1 &
	echo "$! $ns $*" >>"$TOOLS"
}

# traffic SLOT [SNS CNS CONNECT]: RC and UD pingpongs with their data
# check, RDMA READs and atomics between the devices, servers in SNS (xA),
# clients in CNS (xB) connecting to CONNECT (xA's address), at ports from
# SLOT's block, until the devices counted some of it.  The servers start
# together, then the clients (each start costs seconds under TCG).
traffic() {
	local p ga gb r0 k t0=$SECONDS sns=${2:-xA} cns=${3:-xB} connect=${4:-$A4}
	local -a name srv cli
	p=$(port_of "$1")
	: >"$TOOLS"
	# a case that fails half-way leaves no tool behind for the next one
	trap tools_kill EXIT
	ga=$(tb_gid_index "$DEVA" "$A4") || fail "no GID for $A4"
	gb=$(tb_gid_index "$DEVB" "$B4") || fail "no GID for $B4"
	name=(rc ud read atomic)
	srv=("ibv_rc_pingpong -d $DEVA -g $ga -e -c -s 4097 -n 1000000"
		"ibv_ud_pingpong -d $DEVA -g $ga -e -c -s 512 -n 1000000"
		"ib_read_bw -d $DEVA -x $ga -F -e -s 65536 -n 100000"
		"ib_atomic_bw -d $DEVA -x $ga -F -e -n 1000000")
	cli=("ibv_rc_pingpong -d $DEVB -g $gb -e -c -s 4097 -n 1000000"
		"ibv_ud_pingpong -d $DEVB -g $gb -e -c -s 512 -n 1000000"
		"ib_read_bw -d $DEVB -x $gb -F -e -s 65536 -n 100000"
		"ib_atomic_bw -d $DEVB -x $gb -F -e -n 1000000")
	r0=$(rcvd "$DEVA")
	for k in 0 1 2 3; do
		# shellcheck disable=SC2086 # the commands are word lists
		bg "$sns" "$RT_OUT/${name[k]}.server" ${srv[k]} -p $((p + k))
	done
	for k in 0 1 2 3; do
		wait_for 30 ns_listening "$sns" $((p + k)) || {
			rt_show "$RT_OUT/${name[k]}.server" "${name[k]} server"
			fail "${name[k]}: no server on port $((p + k))"
		}
	done
	for k in 0 1 2 3; do
		# shellcheck disable=SC2086
		bg "$cns" "$RT_OUT/${name[k]}.client" ${cli[k]} -p $((p + k)) "$connect"
	done
	wait_until 30 "[ \$((\$(rcvd $DEVA) - $r0)) -ge 200 ]" ||
		fail "no traffic: $DEVA rcvd_pkts $r0 -> $(rcvd "$DEVA")"
	echo "traffic running after $((SECONDS - t0)) s: $DEVA rcvd_pkts $r0 -> $(rcvd "$DEVA")"
}

tools_kill() {
	local pid cmd
	while read -r pid cmd; do
		kill -KILL "$pid" 2>/dev/null || :
	done <"$TOOLS"
}

# tools_end: the tools still running get SIGKILL; every one must be gone
# within 30 s (a process that cannot die is stuck in the kernel)
tools_end() {
	local pid cmd left=0 self=0 t0=$SECONDS
	while read -r pid cmd; do
		if gone "$pid"; then
			self=$((self + 1))
		else
			kill -KILL "$pid" 2>/dev/null || :
		fi
	done <"$TOOLS"
	while read -r pid cmd; do
		wait_for 30 gone "$pid" && continue
		left=$((left + 1))
		echo "still there after SIGKILL: $pid $cmd ($(grep State /proc/"$pid"/status))"
		cat "/proc/$pid/stack" 2>/dev/null || :
	done <"$TOOLS"
	if [ "$left" = 0 ]; then
		wait
	fi
	echo "$(wc -l <"$TOOLS") tools: $self ended by themselves, the rest killed; all gone after $((SECONDS - t0)) s"
	[ "$left" = 0 ] || fail "$left tools stuck in the kernel"
}

# settled: with both devices there again, the objects are what they were
# with both devices and no tool (t_chaos_setup): what the tools owned is
# freed
settled() {
	local t0=$SECONDS
	links_up
	wait_until 30 '[ "$(objects_line)" = "$(cat "$BASE")" ]' ||
		fail "objects: $(objects_line), expected $(cat "$BASE")"
	echo "objects as before the traffic after $((SECONDS - t0)) s: $(objects_line)"
}

# recovers SLOT: a new verified pingpong between the devices
recovers() {
	ns_pp "$KTAP_CASE.after" ibv_rc_pingpong "$(port_of "$1")" xA "$DEVA" "$A4" \
		xB "$DEVB" "$B4" "$A4" -c -s 4097 -n 50 || fail "no verified traffic afterwards"
}

t_chaos_setup() {
	modprobe sroce || fail "modprobe sroce"
	ns_new xA xB
	links_up
	objects_line >"$BASE"
	echo "objects with both devices and no tool: $(cat "$BASE")"
}

# the link flaps, then the MTU changes, on both ends
t_chaos_link_flap_mtu() {
	local i m
	traffic 1
	for i in 1 2 3; do
		ip -n xB link set xb down
		sleep 0.5
		ip -n xB link set xb up
		sleep 1
	done
	for m in 9000 1280 4200 1500; do
		ip -n xA link set xa mtu "$m" || fail "MTU $m on xa"
		ip -n xB link set xb mtu "$m" || fail "MTU $m on xb"
		sleep 1
	done
	tools_end
	settled
	recovers 2
}

# QPs destroyed with READs and atomics outstanding: SIGKILL to the RC and
# UD clients (xB) and the READ and atomic servers (xA) first, their peers a
# second later
t_chaos_kill9() {
	local pid ns cmd
	traffic 5
	while read -r pid ns cmd; do
		case $ns:$cmd in
		xB:ibv_*|xA:ib_*) kill -KILL "$pid" 2>/dev/null || : ;;
		esac
	done <"$TOOLS"
	sleep 1
	tools_end
	settled
	recovers 6
}

# rdma link delete with users: ib_core disassociates their contexts
t_chaos_link_delete() {
	traffic 13
	timeout $((60 * SLOW)) rdma link delete "$DEVB" || fail "rdma link delete $DEVB failed or blocked"
	dev_gone "$DEVB" || fail "$DEVB still there"
	tools_end
	settled
	recovers 14
}

# the veth pair deleted under traffic takes both devices with it
t_chaos_netdev_delete() {
	traffic 15
	ip -n xB link del xb || fail "ip link del xb"
	wait_for 60 dev_gone "$DEVA" || fail "$DEVA still there: $(rdma link show)"
	wait_for 60 dev_gone "$DEVB" || fail "$DEVB still there: $(rdma link show)"
	tools_end
	expect_eq "$(objects devices)" 0 "live devices"
	settled
	recovers 16
}

# rmmod with users: it must not block; if it refuses (in use), it must
# succeed once the users are gone
t_chaos_rmmod() {
	local out rc=0
	traffic 17
	out=$(timeout $((60 * SLOW)) rmmod sroce 2>&1) || rc=$?
	[ "$rc" != 124 ] || fail "rmmod sroce blocked for 60 s with users"
	echo "rmmod sroce with users: exit $rc${out:+ ($out)}"
	tools_end
	if [ -d /sys/module/sroce ]; then
		out=$(timeout $((60 * SLOW)) rmmod sroce 2>&1) || fail "rmmod sroce after the users: $out"
	fi
	[ ! -d /sys/module/sroce ] || fail "sroce still loaded"
	wait_until 30 '[ -z "$(rdma link show)" ]' || fail "links left: $(rdma link show)"
	modprobe sroce || fail "modprobe sroce again"
	settled
	recovers 18
}

# the namespaces go with their devices in them, under traffic: the tools
# run in the initial namespace ("init", a name for it), which ib_core's
# shared mode lets use both devices (a namespace a process is in would not
# go), and lose their devices with the namespaces
t_chaos_namespaces_deleted() {
	ip netns attach init 1 || fail "ip netns attach init 1"
	traffic 19 init init 127.0.0.1
	ip netns delete xB || fail "ip netns delete xB"
	ip netns delete xA || fail "ip netns delete xA"
	wait_for 60 dev_gone "$DEVA" || fail "$DEVA still there"
	wait_for 60 dev_gone "$DEVB" || fail "$DEVB still there"
	tools_end
	ip netns delete init
	expect_eq "$(objects devices)" 0 "live devices"
	wait_until 60 '[ "$(objects udp_sockets)" = 0 ]' ||
		fail "UDP sockets left: $(objects udp_sockets)"
}

# Arguments name a subset of the cases (t_chaos_setup is always run).
CASES=(
	t_chaos_setup
	t_chaos_link_flap_mtu
	t_chaos_kill9
	t_chaos_link_delete
	t_chaos_netdev_delete
	t_chaos_rmmod
	t_chaos_namespaces_deleted
)
if [ $# -gt 0 ]; then
	ktap_main t_chaos_setup "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
