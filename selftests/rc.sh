#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC traffic between two guests with the real tools: ibv_rc_pingpong (sizes
# across the path MTU, events, data check, IPv4-mapped and IPv6 GIDs, path
# MTU 4096 on a jumbo wire), perftest
# bandwidth and latency (send, RDMA write and read, atomics), and all of
# them again with netem degrading the RoCE packets guest a sends (loss,
# reordering, duplication, corruption), and an RC requester running out of
# transport retries when guest a drops everything it sends.  Servers run in guest a, clients in guest b;
# each guest reports its side of every case.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 2 selftests/rc.sh                 # sroce
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/rc.sh     # the reference

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/netem.sh"
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

# Guest a drops every RoCE packet it sends (netem loss 100%, so every ACK),
# and guest b's RC requester (sroce_rc_retry, a server in a and a client in
# b) posts RETRY_N RDMA WRITEs with the local ACK timeout RETRY_T and
# retry_cnt RETRY_R.  The transport timer is T = 4.096 us * 2^RETRY_T
# (IBTA 9.7.6.1.3); RETRY_R + 1 transmissions each wait at least T, so the
# first WR ends with RETRY_EXC_ERR no sooner than T * (RETRY_R + 1) after the
# post, and no later than 3 times that (times SROCE_TEST_SLOW).  sroce backs
# off to 2T and then 4T after consecutive timeouts (kernel/dp/req.c), so it
# takes T + 2T + 4T = 7T at retry_cnt 2: inside [3T, 9T] with 2T to spare
# (about 1.9 s in [805, 2415] ms; a longer T than 15 makes the guest's
# scheduling delays, tens of ms, small against that margin); at retry_cnt 4
# and up it would be 15T and more, past the 3x bound.
RETRY_TOOL=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_rc_retry
RETRY_T=16		# T = 268.4 ms
RETRY_R=2
RETRY_N=3
RETRY_COUNTERS=(sent_pkts rcvd_pkts duplicate_request completer_retry_err retry_exceeded_err)

hwc() {
	cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1"
}

# netem_dropped: the packets guest a's netem qdisc dropped
netem_dropped() {
	tc -s qdisc show dev "$IF" | awk '
		/^qdisc netem/ { n = 1; next }
		n && $1 == "Sent" {
			for (i = 1; i < NF; i++)
				if ($i == "(dropped") { sub(",", "", $(i + 1)); print $(i + 1) }
			exit
		}'
}

# field KEY LINE: the value of KEY=value in LINE
field() {
	local w
	for w in $2; do
		[ "${w%%=*}" = "$1" ] && { echo "${w#*=}"; return 0; }
	done
	return 1
}

t_netem_retry_exhausted() {
	local port name side line k ms lo_ns lo hi dropped wc flushed i
	local -A before delta
	port=$(port_of 34)
	name=$KTAP_CASE
	[ -x "$RETRY_TOOL" ] || fail "no $RETRY_TOOL (make userspace)"
	netem_begin loss 100%
	rt_sides_pair ipv4 || fail "no GID"
	for k in "${RETRY_COUNTERS[@]}"; do
		before[$k]=$(hwc "$k") || fail "cannot read the hw counter $k of $DEV"
	done
	# (|| true: the case runs under set -e, and a failed side must
	# still show its output and the reason below)
	RT_LIMIT=60 rt_run "$name" "$port" _rt_ready_tcp \
		-- "$RETRY_TOOL" server "$port" \
		-- "$RETRY_TOOL" client "$SROCE_PEER_IP4" "$port" \
			--timeout "$RETRY_T" --retry "$RETRY_R" --count "$RETRY_N" || true
	side=client
	rt_is_server && side=server
	rt_show "$RT_OUT/$name.$side" "sroce_rc_retry $side"
	[ "${RT_SRV_RC:-0}" = 0 ] && [ "${RT_CLI_RC:-0}" = 0 ] ||
		fail "sroce_rc_retry $side exited ${RT_SRV_RC:-}${RT_CLI_RC:-}"
	line=$(grep "^sroce_rc_retry $side: " "$RT_OUT/$name.$side") ||
		fail "no result line from sroce_rc_retry $side"
	for k in "${RETRY_COUNTERS[@]}"; do
		delta[$k]=$(( $(hwc "$k") - before[$k] ))
		echo "$DEV $k: +${delta[$k]}"
	done

	if rt_is_server; then
		# a received every retransmission, executed nothing twice and
		# completed nothing; its netem dropped its ACKs
		dropped=$(netem_dropped)
		tc -s qdisc show dev "$IF"
		expect_eq "$(field completions "$line")" 0 "completions at the responder"
		expect_eq "$(field qp_state "$line")" RTS "the responder's QP state"
		[ "${delta[duplicate_request]}" -ge "$RETRY_R" ] ||
			fail "duplicate_request rose by ${delta[duplicate_request]}, want >= $RETRY_R (the retransmissions)"
		[ "${delta[rcvd_pkts]}" -ge $((RETRY_N + RETRY_R)) ] ||
			fail "rcvd_pkts rose by ${delta[rcvd_pkts]}, want >= $((RETRY_N + RETRY_R))"
		[ "${dropped:-0}" -ge $((RETRY_R + 1)) ] ||
			fail "netem dropped ${dropped:-no} packets, want >= $((RETRY_R + 1)) (an ACK per transmission)"
		echo "guest a: ${delta[duplicate_request]} duplicate requests, ${delta[rcvd_pkts]} packets received, $dropped dropped by netem, no completion"
		return 0
	fi

	# b: the first WR used up its retries, the others were flushed
	wc=RETRY_EXC_ERR
	for ((i = 1; i < RETRY_N; i++)); do wc+=,WR_FLUSH_ERR; done
	expect_eq "$(field wc "$line")" "$wc" "completion statuses"
	expect_eq "$(field qp_state "$line")" ERR "the requester's QP state"
	ms=$(field elapsed_ms "$line") || fail "no elapsed_ms"
	lo_ns=$(( (4096 << RETRY_T) * (RETRY_R + 1) ))
	lo=$((lo_ns / 1000000))
	hi=$((3 * lo_ns * SLOW / 1000000))
	echo "retry exceeded after $ms ms: bounds [$lo, $hi] ms (T = $(( (4096 << RETRY_T) / 1000 )) us, retry_cnt $RETRY_R; sroce's back-off makes it 7T = $(( 7 * (4096 << RETRY_T) / 1000000 )) ms)"
	[ "$ms" -ge "$lo" ] || fail "gave up after $ms ms, before its $((RETRY_R + 1)) timeouts ($lo ms)"
	[ "$ms" -le "$hi" ] || fail "gave up after $ms ms, later than $hi ms: timer not honoured"
	expect_eq "${delta[completer_retry_err]}" "$RETRY_R" "completer_retry_err rise (retransmissions)"
	expect_eq "${delta[retry_exceeded_err]}" 1 "retry_exceeded_err rise"
	expect_eq "${delta[rcvd_pkts]}" 0 "rcvd_pkts rise (netem drops all a sends)"
	[ "${delta[sent_pkts]}" -ge $((RETRY_N + RETRY_R)) ] ||
		fail "sent_pkts rose by ${delta[sent_pkts]}, want >= $((RETRY_N + RETRY_R))"
}

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
)
if [ $# -gt 0 ]; then
	ktap_main t_gids_and_wire "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
