#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC traffic between two guests (with sroce: two network namespaces of one
# guest, scripts/testbed --netns) with the real tools: ibv_rc_pingpong (sizes
# across the path MTU, events, data check, IPv4-mapped and IPv6 GIDs, path
# MTU 4096 on a jumbo wire), perftest
# bandwidth and latency (send, RDMA write and read, atomics), and all of
# them again with netem degrading the RoCE packets guest a sends (loss,
# reordering, duplication, corruption), and an RC requester running out of
# transport retries when guest a drops everything it sends.  Servers run
# in guest a, clients in guest b; each guest reports its side of every
# case.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 2 --netns selftests/rc.sh         # sroce, as make check
#   scripts/testbed -k 6.1 -n 2 selftests/rc.sh                 # sroce on a wire
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/rc.sh     # the reference

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/netem.sh"
. "$(dirname "$0")/lib/rc_retry.sh"
. "$(dirname "$0")/lib/pmem.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
IF=${SROCE_NETDEV:?}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "rc.sh needs two guests (-n 2)" >&2; exit 2; }

# Every case has its own block of TCP ports (the tools' connection set-up),
# so a server left over from a failed case cannot answer the next one.
port_of() { echo $((19000 + 20 * $1)); }

active_mtu() {
	ibv_devinfo -d "$DEV" | awk '$1 == "active_mtu:" { print $2 }'
}

# ---- the set-up both sides rely on ------------------------------------------

t_gids_and_wire() {
	rt_pair_ready
	rdma link show "$DEV/1"
	echo "active MTU: $(active_mtu)"
}

# ---- ibv_rc_pingpong --------------------------------------------------------

pp() {			# PORTSLOT FAMILY ARGS...
	rt_pp_pair ibv_rc_pingpong "$(port_of "$1")" "${@:2}"
}

t_pp_default()		{ pp 1 ipv4 -c -n 1000; }
t_pp_events()		{ pp 2 ipv4 -e -c -n 200; }
t_pp_size_1()		{ pp 3 ipv4 -c -m 1024 -s 1 -n 100; }
t_pp_size_1023()	{ pp 4 ipv4 -c -m 1024 -s 1023 -n 100; }
t_pp_size_1024()	{ pp 5 ipv4 -c -m 1024 -s 1024 -n 100; }
t_pp_size_4095()	{ pp 6 ipv4 -c -m 1024 -s 4095 -n 100; }
t_pp_size_4096()	{ pp 7 ipv4 -c -m 1024 -s 4096 -n 100; }
t_pp_size_4097()	{ pp 8 ipv4 -c -m 1024 -s 4097 -n 100; }
t_pp_size_65536()	{ pp 9 ipv4 -c -m 1024 -s 65536 -n 20; }
t_pp_size_1048576()	{ pp 10 ipv4 -c -m 1024 -s 1048576 -n 5; }
t_pp_mtu_256()		{ pp 11 ipv4 -c -m 256 -s 4097 -n 50; }
t_pp_ipv6()		{ pp 12 ipv6 -c -n 100; }
t_pp_ipv6_events_65536() { pp 13 ipv6 -e -c -s 65536 -n 20; }

# Path MTU 4096 needs a wire that carries it: both guests raise the MTU of
# eth0 to 9000 (the port's active MTU follows), run, and put it back.
restore_mtu() {
	ip link set dev "$IF" mtu 1500
}

t_pp_mtu_4096_jumbo() {
	local port s failed=()
	port=$(port_of 14)
	trap restore_mtu EXIT
	ip link set dev "$IF" mtu 9000 || fail "cannot set the MTU of $IF to 9000"
	wait_until 30 '[ "$(active_mtu)" = "4096" ]' || fail "active MTU $(active_mtu) with a 9000-byte netdev MTU"
	echo "$IF MTU 9000, $DEV active MTU $(active_mtu)"
	tb_barrier "$KTAP_CASE.mtu" 60 || fail "the peer did not raise its MTU"
	rt_sides_pair ipv4 || fail "no GID"
	for s in 4096 4097 65536; do
		rt_pingpong "$KTAP_CASE.$s" $((port++)) -c -m 4096 -s "$s" -n 20 || failed+=("$s")
	done
	[ ${#failed[@]} -eq 0 ] || fail "ibv_rc_pingpong -m 4096 failed for sizes ${failed[*]}"
	tb_barrier "$KTAP_CASE.done" 120 || fail "the peer did not finish"
}

# rping (rdma_cm) joins with the GSI QP of issue 4; rt_rping in
# lib/rdma_tools.sh is ready for it.

# ---- perftest ---------------------------------------------------------------

perf() {		# PORTSLOT FAMILY KIND TOOL ARGS...
	local port
	port=$(port_of "$1")
	rt_sides_pair "$2" || fail "no GID"
	shift 2
	rt_perf "$KTAP_CASE" "$port" "$@" || fail "$2 ${*:3}"
}

t_perf_send_bw_all()	{ RT_LIMIT=300 perf 20 ipv4 bw ib_send_bw -a -n 5; }
t_perf_write_bw_all()	{ RT_LIMIT=300 perf 21 ipv4 bw ib_write_bw -a -n 5; }
t_perf_read_bw_all()	{ RT_LIMIT=300 perf 22 ipv4 bw ib_read_bw -a -n 5; }
# perftest refuses -a for atomics ("Message size cannot be changed")
t_perf_atomic_fetch_add() { perf 23 ipv4 bw ib_atomic_bw -A FETCH_AND_ADD -n 100; }
t_perf_atomic_cmp_swap() { perf 24 ipv4 bw ib_atomic_bw -A CMP_AND_SWAP -n 100; }
t_perf_send_lat()	{ perf 25 ipv4 lat ib_send_lat -n 100; }
t_perf_write_lat()	{ perf 26 ipv4 lat ib_write_lat -n 100; }
t_perf_read_lat()	{ perf 27 ipv4 lat ib_read_lat -n 100; }
t_perf_send_bw_ipv6()	{ perf 28 ipv6 bw ib_send_bw -s 65536 -n 20; }

# ---- netem on guest a's egress ----------------------------------------------

# netem_case PORTSLOT NETEM-ARGS...: degrade a's egress (a runs the servers:
# ACKs of the clients' RDMA WRITE and SEND data, the ping-pong server's
# messages; selftests/lib/netem.sh says why not b's), then RDMA WRITE and
# SEND bandwidth at 64 KiB and 64 bytes, and ibv_rc_pingpong -c (with a's
# ACKs spared: netem_pingpong).
netem_case() {
	local port failed=()
	port=$(port_of "$1")
	shift
	netem_begin "$@"
	rt_sides_pair ipv4 || fail "no GID"
	rt_perf "$KTAP_CASE.write_65536" "$port" bw ib_write_bw -s 65536 -n 10 || failed+=("ib_write_bw -s 65536")
	rt_perf "$KTAP_CASE.write_64" $((port + 2)) bw ib_write_bw -s 64 -n 50 || failed+=("ib_write_bw -s 64")
	rt_perf "$KTAP_CASE.send_65536" $((port + 4)) bw ib_send_bw -s 65536 -n 10 || failed+=("ib_send_bw -s 65536")
	rt_perf "$KTAP_CASE.send_64" $((port + 6)) bw ib_send_bw -s 64 -n 50 || failed+=("ib_send_bw -s 64")
	netem_pingpong "$KTAP_CASE.pingpong" $((port + 8)) -c -s 4097 -n 50 || failed+=("ibv_rc_pingpong -c -s 4097")
	netem_seen 100 || failed+=("netem saw too few packets")
	[ ${#failed[@]} -eq 0 ] || fail "under netem $*: ${failed[*]}"
}

t_netem_loss()		{ netem_case 30 loss 2%; }
t_netem_reorder()	{ netem_case 31 delay 5ms reorder 25% 50%; }
t_netem_duplicate()	{ netem_case 32 duplicate 2%; }
t_netem_corrupt()	{ netem_case 33 corrupt 1%; }

# ---- transport retries used up under 100% loss -----------------------------

# selftests/lib/rc_retry.sh
t_netem_retry_exhausted() { retry_exhausted_case "$(port_of 34)"; }

# ATOMIC WRITE from guest b into guest a, and a misaligned one refused
# (selftests/lib/pmem.sh).
t_atomic_write() { atomic_write_case "$(port_of 35)"; }

# Arguments name a subset of the cases (the first one is always run).
CASES=(
	t_gids_and_wire
	t_pp_default
	t_pp_events
	t_pp_size_1
	t_pp_size_1023
	t_pp_size_1024
	t_pp_size_4095
	t_pp_size_4096
	t_pp_size_4097
	t_pp_size_65536
	t_pp_size_1048576
	t_pp_mtu_256
	t_pp_ipv6
	t_pp_ipv6_events_65536
	t_pp_mtu_4096_jumbo
	t_perf_send_bw_all
	t_perf_write_bw_all
	t_perf_read_bw_all
	t_perf_atomic_fetch_add
	t_perf_atomic_cmp_swap
	t_perf_send_lat
	t_perf_write_lat
	t_perf_read_lat
	t_perf_send_bw_ipv6
	t_netem_loss
	t_netem_reorder
	t_netem_duplicate
	t_netem_corrupt
	t_netem_retry_exhausted
	t_atomic_write
)
if [ $# -gt 0 ]; then
	ktap_main t_gids_and_wire "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
