#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC traffic inside one guest: server and client on the same device over its
# own IPv4-mapped and IPv6 GIDs (ibv_rc_pingpong with the data check,
# perftest send/write/read bandwidth and write latency), then two devices
# of the driver under test on the two ends of a
# veth pair talking to each other.  Also the SQ poller's GoogleTest cases
# (SqPoll.* of userspace/tests/device, which skip on another driver): they
# need a second CPU, which this guest has and selftests/run's pair guests
# do not.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 1 selftests/loopback.sh               # sroce
#   scripts/testbed -k 6.1 -n 1 -a rdma_rxe selftests/loopback.sh   # the reference

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
TESTS=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests
ROCE_SEND=$TESTS/sroce_roce_send	# hand-made RoCE v2 packets
RETRY_TOOL=$TESTS/sroce_rc_retry	# an RC requester out of retries
NO_QPN=0xabcdef		# above every QP number sroce hands out

port_of() { echo $((24000 + 20 * $1)); }

t_gids() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	tb_gids "$DEV"
	rt_sides_local ipv4 || fail "no RoCE v2 GID for $SROCE_IP4"
	rt_sides_local ipv6 || fail "no RoCE v2 GID for $SROCE_IP6"
}

pp() {			# PORTSLOT FAMILY ARGS...
	local port
	port=$(port_of "$1")
	rt_sides_local "$2" || fail "no GID"
	shift 2
	rt_pingpong "$KTAP_CASE" "$port" "$@" || fail "ibv_rc_pingpong $*"
}

t_pp_ipv4()		{ pp 1 ipv4 -c -n 500; }
t_pp_ipv4_1()		{ pp 2 ipv4 -c -s 1 -n 500; }
t_pp_ipv4_65536()	{ pp 3 ipv4 -c -s 65536 -n 100; }
t_pp_ipv6()		{ pp 4 ipv6 -c -n 500; }
t_pp_ipv6_4097_events()	{ pp 5 ipv6 -e -c -s 4097 -n 200; }

# rping (rdma_cm) needs the GSI QP of issue 4.

perf() {		# PORTSLOT KIND TOOL ARGS...
	local port
	port=$(port_of "$1")
	rt_sides_local ipv4 || fail "no GID"
	shift
	rt_perf "$KTAP_CASE" "$port" "$@" || fail "$2 ${*:3}"
}

t_perf_write_bw()	{ perf 7 bw ib_write_bw -s 65536 -n 100; }
t_perf_send_bw()	{ perf 8 bw ib_send_bw -s 65536 -n 100; }
t_perf_read_bw()	{ perf 9 bw ib_read_bw -s 65536 -n 100; }
t_perf_write_lat()	{ perf 10 lat ib_write_lat -n 200; }

# Same-host delivery (kernel/dp/loop.c): sroce hands a packet to an
# address of this host straight to the receive path, past the IP stack and
# the loopback device, and computes and checks the ICRC only when the
# loopback_icrc module parameter asks for it.
LOOP_STATS=/sys/kernel/debug/sroce/loopback
LOOP_ICRC=/sys/module/sroce/parameters/loopback_icrc
TRACE=/sys/kernel/tracing
LOOP_EVENT=$TRACE/events/sroce/sroce_loopback_pkt

loop_count() {		# NAME: a count of the loopback file
	awk -v r="$1" '$1 == r { print $2 }' "$LOOP_STATS"
}

loop_drops() {		# REASON: the rx_drops count of REASON
	awk -v r="$1" '$1 == r { print $2 }' /sys/kernel/debug/sroce/rx_drops
}

loop_ready() {		# ICRC: 0 or 1; the tracepoint on, its buffer empty
	[ "${SROCE_DRIVER:?}" = sroce ] || skip "same-host shortcut of sroce only ($SROCE_DRIVER)"
	[ -r "$LOOP_STATS" ] || fail "no $LOOP_STATS"
	[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE" || fail "no tracefs"
	[ -d "$LOOP_EVENT" ] || fail "no tracepoint sroce:sroce_loopback_pkt"
	echo "$1" >"$LOOP_ICRC" || fail "cannot set loopback_icrc"
	echo 0 >"$TRACE/tracing_on"
	echo >"$TRACE/trace"
	echo 1 >"$LOOP_EVENT/enable"
	echo 1 >"$TRACE/tracing_on"
	cat "$LOOP_STATS"
}

loop_done() {
	echo 0 >"$LOOP_EVENT/enable"
	echo 0 >"$LOOP_ICRC"
}

# TRACED ICRC: the buffer has events with icrc=ICRC and no others
loop_traced() {
	local n other
	n=$(grep -c "sroce_loopback_pkt:.* icrc=$1\$" "$TRACE/trace" || :)
	other=$(grep -c "sroce_loopback_pkt:.* icrc=$((1 - $1))\$" "$TRACE/trace" || :)
	echo "event enable $(cat "$LOOP_EVENT/enable"), tracing_on $(cat "$TRACE/tracing_on"), $(grep -vc '^#' "$TRACE/trace" || :) lines"
	grep -v '^#' "$TRACE/trace" | head -n 3
	echo "tracepoint: $n events with icrc=$1, $other with icrc=$((1 - $1))"
	[ "$n" -gt 0 ] || fail "sroce:sroce_loopback_pkt did not fire"
	[ "$other" -eq 0 ] || fail "events with icrc=$((1 - $1))"
}

# A same-host ib_write_bw takes the shortcut: every packet is counted and
# traced, and the loopback device carries only perftest's TCP exchange
# (100 messages of 64 KiB are at least 1600 RoCE packets at any MTU).
t_loop_shortcut_write_bw() {
	local p0 p1 l0 l1 port
	loop_ready 0
	trap loop_done EXIT
	p0=$(loop_count packets)
	read -r l0 </sys/class/net/lo/statistics/tx_packets
	port=$(port_of 12)
	rt_sides_local ipv4 || fail "no GID"
	rt_perf "$KTAP_CASE" "$port" bw ib_write_bw -s 65536 -n 100 || fail "ib_write_bw"
	p1=$(loop_count packets)
	read -r l1 </sys/class/net/lo/statistics/tx_packets
	echo "shortcut: $((p1 - p0)) packets; lo: $((l1 - l0)) packets"
	[ $((p1 - p0)) -ge 1600 ] || fail "only $((p1 - p0)) packets took the shortcut"
	[ $((l1 - l0)) -lt 400 ] || fail "lo sent $((l1 - l0)) packets"
	loop_traced 0
}

# With loopback_icrc=1 every same-host packet carries an ICRC and the
# receive path checks it: the data arrives intact (ibv_rc_pingpong -c) and
# no packet fails the check.
loop_icrc_pp() {	# PORTSLOT FAMILY
	local b0 p0 port
	loop_ready 1
	trap loop_done EXIT
	b0=$(loop_drops bad_icrc)
	p0=$(loop_count packets)
	port=$(port_of "$1")
	rt_sides_local "$2" || fail "no GID"
	rt_pingpong "$KTAP_CASE" "$port" -c -s 4097 -n 200 || fail "ibv_rc_pingpong"
	echo "shortcut: $(($(loop_count packets) - p0)) packets"
	[ $(($(loop_count packets) - p0)) -ge 800 ] || fail "the shortcut was not taken"
	[ "$(loop_drops bad_icrc)" = "$b0" ] || fail "bad_icrc: $b0 -> $(loop_drops bad_icrc)"
	loop_traced 1
}

t_loop_icrc_ipv4()	{ loop_icrc_pp 13 ipv4; }
t_loop_icrc_ipv6()	{ loop_icrc_pp 14 ipv6; }

# With loopback_icrc=1 a packet corrupted after its ICRC was computed (the
# debugfs test hook loopback_corrupt flips a bit in 5 packets) is caught:
# exactly 5 more bad_icrc drops, and RC's retransmission still delivers
# the data intact.
t_loop_icrc_corrupt() {
	local b0 n=5 port
	LOOP_HOOK=/sys/kernel/debug/sroce/loopback_corrupt
	loop_ready 1
	trap 'echo 0 >"$LOOP_HOOK"; loop_done' EXIT
	b0=$(loop_drops bad_icrc)
	echo "$n" >"$LOOP_HOOK" || fail "no $LOOP_HOOK"
	port=$(port_of 15)
	rt_sides_local ipv4 || fail "no GID"
	rt_pingpong "$KTAP_CASE" "$port" -c -s 4097 -n 200 || fail "ibv_rc_pingpong"
	echo "bad_icrc: $b0 -> $(loop_drops bad_icrc); hook left: $(cat "$LOOP_HOOK")"
	expect_eq "$(cat "$LOOP_HOOK")" 0 "corruptions left"
	expect_eq "$(($(loop_drops bad_icrc) - b0))" "$n" "bad_icrc drops"
}

# The tracepoints of issue 16 (kernel/dp/trace.h, kernel/obj/trace.h),
# read through tracefs like sroce_loopback_pkt above: known traffic, then
# the events it must have left, matched by QP number.
TRACE_EVENTS=(sroce_tx sroce_rx sroce_rx_drop sroce_retransmit sroce_qp_state sroce_cqe)
TRACE_OUT=

trace_ready() {		# enable TRACE_EVENTS on an empty buffer
	local e
	[ "${SROCE_DRIVER:?}" = sroce ] || skip "tracepoints of sroce only ($SROCE_DRIVER)"
	[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE" || fail "no tracefs"
	echo 0 >"$TRACE/tracing_on"
	echo >"$TRACE/trace"
	# room for every event of a case on one CPU
	echo 2048 >"$TRACE/buffer_size_kb" || fail "cannot size the trace buffer"
	for e in "${TRACE_EVENTS[@]}"; do
		[ -d "$TRACE/events/sroce/$e" ] || fail "no tracepoint sroce:$e"
		echo 1 >"$TRACE/events/sroce/$e/enable"
	done
	echo 1 >"$TRACE/tracing_on"
	TRACE_OUT=$RT_OUT/$KTAP_CASE.trace
}

trace_done() {
	local e
	for e in "${TRACE_EVENTS[@]}"; do
		echo 0 >"$TRACE/events/sroce/$e/enable" 2>/dev/null || :
	done
}

# trace_take: stop tracing and keep the events in TRACE_OUT; none may have
# been lost to a full buffer (the counts below would be short).
trace_take() {
	local lost e
	echo 0 >"$TRACE/tracing_on"
	grep -v '^#' "$TRACE/trace" >"$TRACE_OUT" || :
	lost=$(awk '/overrun:/ { n += $2 } END { print n + 0 }' "$TRACE"/per_cpu/cpu*/stats)
	echo "trace: $(wc -l <"$TRACE_OUT") events, $lost overrun"
	for e in "${TRACE_EVENTS[@]}"; do
		echo "  $e: $(grep -c " $e: " "$TRACE_OUT" || :)"
	done
	[ "$lost" = 0 ] || fail "$lost events lost to a full trace buffer"
}

trace_count() {		# EVENT ERE: events EVENT whose fields match ERE
	grep -E " $1: .*$2" "$TRACE_OUT" | grep -c . || :
}

trace_expect_min() {	# EVENT ERE MIN WHAT
	local n
	n=$(trace_count "$1" "$2")
	echo "$4: $n $1 events"
	[ "$n" -ge "$3" ] || { grep " $1: " "$TRACE_OUT" | head -n 5; fail "$4: $n $1 events matching /$2/, want >= $3"; }
}

trace_expect_eq() {	# EVENT ERE N WHAT
	local n
	n=$(trace_count "$1" "$2")
	echo "$4: $n $1 events"
	[ "$n" -eq "$3" ] || { grep " $1: " "$TRACE_OUT" | head -n 5; fail "$4: $n $1 events matching /$2/, want $3"; }
}

pp_qpn() {		# FILE: the local QPN ibv_rc_pingpong printed
	awk '/^  local address: / { for (i = 1; i < NF; i++) if ($i == "QPN") { sub(",", "", $(i + 1)); print $(i + 1) } }' "$1"
}

# ibv_rc_pingpong between two QPs of this guest: each QP's packets are
# traced leaving (sroce_tx, to the other's QPN) and arriving (sroce_rx),
# each message completes (sroce_cqe: SEND at the sender, RECV at the
# receiver), and both QPs went RESET -> INIT -> RTR -> RTS by modify_qp.
# Then 3 hand-made packets to a QP number nobody has: sroce_rx sees them
# and sroce_rx_drop drops them as no_qp, naming that QPN, which perf stat
# -e sroce:sroce_rx_drop counts too.
t_trace_pingpong() {
	local port n=50 srv cli st q send perf_n t0
	trace_ready
	trap trace_done EXIT
	port=$(port_of 16)
	rt_sides_local ipv4 || fail "no GID"
	rt_pingpong "$KTAP_CASE" "$port" -s 64 -n "$n" || fail "ibv_rc_pingpong"
	srv=$(pp_qpn "$RT_OUT/$KTAP_CASE.server")
	cli=$(pp_qpn "$RT_OUT/$KTAP_CASE.client")
	echo "QPN server $srv, client $cli"
	if [ -z "$srv" ] || [ -z "$cli" ]; then
		fail "no QPN in the pingpong output"
	fi
	[ -x "$ROCE_SEND" ] || fail "no $ROCE_SEND (make userspace)"
	# perf counts the same events, while the packets are sent and a second
	# after (perf stat: perf record takes half a minute under TCG)
	# (command perf: this file's perf() runs perftest)
	type -P perf >/dev/null || fail "no perf (linux-perf: scripts/install-deps.sh)"
	send=$(printf '%q ' "$ROCE_SEND" -n 3 -q "$NO_QPN" valid "$SROCE_IP4" "$SROCE_IP4")
	t0=$SECONDS
	command perf stat -x, -o "$RT_OUT/$KTAP_CASE.perf" -e sroce:sroce_rx_drop -a \
		-- bash -c "$send && sleep 1" || fail "perf stat of sroce_roce_send"
	echo "perf stat: $((SECONDS - t0)) s"
	grep sroce "$RT_OUT/$KTAP_CASE.perf"
	perf_n=$(awk -F, '$3 == "sroce:sroce_rx_drop" { print $1 }' "$RT_OUT/$KTAP_CASE.perf")
	expect_eq "$perf_n" 3 "no_qp drops perf counted"
	trace_take
	trace_expect_min sroce_tx "dev=$DEV qpn=$cli dqpn=$srv " "$n" "client to server"
	trace_expect_min sroce_tx "dev=$DEV qpn=$srv dqpn=$cli " "$n" "server to client"
	trace_expect_min sroce_rx "dev=$DEV qpn=$srv " "$n" "received by the server"
	trace_expect_min sroce_rx "dev=$DEV qpn=$cli " "$n" "received by the client"
	trace_expect_min sroce_cqe "qpn=$cli .*opcode=SEND status=SUCCESS " "$n" "client sends completed"
	trace_expect_min sroce_cqe "qpn=$srv .*opcode=RECV status=SUCCESS len=64\$" "$n" "server receives completed"
	trace_expect_eq sroce_cqe "status=[^S]" 0 "completions in error"
	for q in "$srv" "$cli"; do
		for st in "RESET -> INIT" "INIT -> RTR" "RTR -> RTS"; do
			trace_expect_eq sroce_qp_state "qpn=$q $st status=- event=-\$" 1 "QP $q $st"
		done
	done
	trace_expect_eq sroce_rx "dev=$DEV qpn=$NO_QPN " 3 "to QP $NO_QPN"
	trace_expect_eq sroce_rx_drop "dev=$DEV qpn=$NO_QPN reason=no_qp\$" 3 "dropped as no_qp"
	trace_expect_eq sroce_rx_drop "reason=" 3 "drops of any reason"
}

# An RC requester that runs out of retries (sroce_rc_retry, both sides in
# this guest): with loopback_icrc=1 and the loopback_corrupt hook spoiling
# every packet, no request reaches the responder (sroce_rx_drop:
# bad_icrc), the requester resends from its first PSN on each of its
# RETRY_R timeouts (sroce_retransmit: timeout), and then moves its QP
# RTS -> ERR with RETRY_EXC_ERR (sroce_qp_state), the first WR failing
# with that status and the others flushed (sroce_cqe).  T = 2^12 * 4.096
# us = 17 ms, so that the whole run takes well under a second.
t_trace_retry_error() {
	local port T=12 R=2 N=3 srv cli line psn i
	[ "${SROCE_DRIVER:?}" = sroce ] || skip "tracepoints of sroce only ($SROCE_DRIVER)"
	[ -x "$RETRY_TOOL" ] || fail "no $RETRY_TOOL (make userspace)"
	echo 1 >"$LOOP_ICRC" || fail "cannot set loopback_icrc"
	trace_ready
	# (globals: the EXIT trap runs after the function's locals are gone)
	LOOP_HOOK=/sys/kernel/debug/sroce/loopback_corrupt
	trap 'echo 0 >"$LOOP_HOOK"; echo 0 >"$LOOP_ICRC"; trace_done' EXIT
	echo 100000 >"$LOOP_HOOK" || fail "no $LOOP_HOOK"
	port=$(port_of 17)
	rt_sides_local ipv4 || fail "no GID"
	rt_run "$KTAP_CASE" "$port" _rt_ready_tcp \
		-- "$RETRY_TOOL" server "$port" \
		-- "$RETRY_TOOL" client "$SROCE_IP4" "$port" --timeout "$T" --retry "$R" --count "$N" || {
		rt_show "$RT_OUT/$KTAP_CASE.server" server
		rt_show "$RT_OUT/$KTAP_CASE.client" client
		fail "sroce_rc_retry"
	}
	echo 0 >"$LOOP_HOOK"
	grep -h '^sroce_rc_retry' "$RT_OUT/$KTAP_CASE.server" "$RT_OUT/$KTAP_CASE.client"
	trace_take
	line=$(grep -E ' sroce_qp_state: .* RTS -> ERR ' "$TRACE_OUT") || fail "no QP went RTS -> ERR"
	echo "$line"
	cli=$(expect_one_qpn "$line")
	srv=$(sed -n 's/^sroce_rc_retry server: qpn=\([0-9]*\) .*/\1/p' "$RT_OUT/$KTAP_CASE.server")
	[ -n "$srv" ] || fail "no server QPN"
	srv=$(printf '0x%06x' "$srv")
	echo "QPN server $srv, client $cli"
	trace_expect_eq sroce_qp_state "qpn=$cli RTS -> ERR status=RETRY_EXC_ERR event=-\$" 1 "requester to ERR"
	trace_expect_eq sroce_qp_state "-> ERR" 1 "QPs to ERR"
	psn=$(grep -m1 -E " sroce_tx: dev=$DEV qpn=$cli dqpn=$srv " "$TRACE_OUT" | sed 's/.* psn=\(0x[0-9a-f]*\) .*/\1/')
	[ -n "$psn" ] || fail "no sroce_tx event of the requester"
	trace_expect_min sroce_tx "dev=$DEV qpn=$cli dqpn=$srv opcode=0x0a " $((N * (R + 1))) "RDMA WRITEs sent and resent"
	trace_expect_eq sroce_rx "qpn=$srv " 0 "packets the responder received"
	trace_expect_min sroce_rx_drop "dev=$DEV qpn=0xffffffff reason=bad_icrc\$" $((N * (R + 1))) "spoilt packets dropped"
	trace_expect_eq sroce_retransmit "qpn=$cli cause=timeout psn=$psn " "$R" "timeouts"
	for ((i = R - 1; i >= 0; i--)); do
		trace_expect_eq sroce_retransmit "qpn=$cli .* left=$i\$" 1 "retransmission with $i retries left"
	done
	trace_expect_eq sroce_cqe "qpn=$cli wr_id=0x1 opcode=RDMA_WRITE status=RETRY_EXC_ERR " 1 "WR 1 failed"
	for ((i = 2; i <= N; i++)); do
		trace_expect_eq sroce_cqe "qpn=$cli wr_id=0x$i opcode=RDMA_WRITE status=WR_FLUSH_ERR " 1 "WR $i flushed"
	done
	trace_expect_eq sroce_cqe "qpn=$srv " 0 "completions at the responder"
}

expect_one_qpn() {	# LINE: its qpn= field
	local w
	for w in $1; do
		case $w in qpn=*) echo "${w#qpn=}"; return 0 ;; esac
	done
	fail "no qpn= in $1"
}

# Two devices in one kernel: the driver under test on both ends of a veth
# pair (veth0 198.51.100.1, veth1 198.51.100.2, and IPv6).  Both addresses
# are local, so veth1 must accept packets from a local source.
VETH_DEVS=()

veth_down() {
	local d
	for d in "${VETH_DEVS[@]}"; do
		rdma link delete "$d" 2>/dev/null || :
	done
	veth_unroute
	ip link del veth0 2>/dev/null || :
}

# Two addresses of one host reach each other through the loopback device,
# not the veth.  To make the devices' traffic cross the veth, what this
# host sends to one end's address leaves through the other end (policy
# routing for locally generated packets, "iif lo", ahead of the local
# table); what arrives on the veth is delivered locally as usual.
VETH_ROUTES=(
	"198.51.100.2 veth0 198.51.100.1"
	"198.51.100.1 veth1 198.51.100.2"
	"fd53:726f:6366::2 veth0 fd53:726f:6366::1"
	"fd53:726f:6366::1 veth1 fd53:726f:6366::2"
)

veth_route() {
	local r dst dev src t=100 f
	for f in -4 -6; do
		ip "$f" rule add pref 1000 lookup local &&
			ip "$f" rule del pref 0 lookup local || return 1
	done
	for r in "${VETH_ROUTES[@]}"; do
		read -r dst dev src <<<"$r"
		f=-4
		[ "${dst#*:}" = "$dst" ] || f=-6
		ip "$f" rule add pref "$t" to "$dst" iif lo lookup "$t" &&
			ip "$f" route add "$dst" dev "$dev" src "$src" table "$t" || return 1
		t=$((t + 1))
	done
}

# (an EXIT trap under set -e: whatever is not there is no error)
veth_unroute() {
	local f t
	for f in -4 -6; do
		for t in 100 101 102 103; do
			ip "$f" rule del pref "$t" 2>/dev/null || :
			ip "$f" route flush table "$t" 2>/dev/null || :
		done
		ip "$f" rule show pref 0 | grep -q local ||
			ip "$f" rule add pref 0 lookup local || :
		ip "$f" rule del pref 1000 2>/dev/null || :
	done
}

t_two_devices_veth() {
	# shellcheck disable=SC2034 # rdma_tools.sh's time limit, for this case
	local drv=${SROCE_DRIVER:?} d0 d1 port failed=() RT_LIMIT=60
	case $drv in
	sroce) d0=sroce_v0 d1=sroce_v1 ;;
	rdma_rxe) d0=rxe_v0 d1=rxe_v1 ;;
	*) skip "no RDMA driver set up ($drv)" ;;
	esac
	trap veth_down EXIT
	ip link add veth0 type veth peer name veth1 || fail "cannot create a veth pair"
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.veth0.accept_local=1 \
		net.ipv4.conf.veth1.accept_local=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.veth0.rp_filter=0 net.ipv4.conf.veth1.rp_filter=0 \
		net.ipv6.conf.veth0.accept_dad=0 net.ipv6.conf.veth1.accept_dad=0
	ip addr add 198.51.100.1/24 dev veth0
	ip addr add 198.51.100.2/24 dev veth1
	ip -6 addr add fd53:726f:6366::1/64 dev veth0 nodad
	ip -6 addr add fd53:726f:6366::2/64 dev veth1 nodad
	ip link set veth0 up
	ip link set veth1 up
	veth_route || fail "cannot route the veth's addresses through it"
	ip rule show
	ip -6 rule show
	VETH_DEVS=("$d0" "$d1")
	tb_link_add "$drv" "$d0" veth0 || fail "$drv on veth0"
	tb_link_add "$drv" "$d1" veth1 || fail "$drv on veth1"
	rdma link show
	wait_until 30 'has_gids' || { tb_gids "$d0"; tb_gids "$d1"; fail "no GIDs for the veth addresses"; }
	port=$(port_of 11)
	local tx0 rx0 tx rx
	read -r tx0 </sys/class/net/veth0/statistics/tx_bytes
	read -r rx0 </sys/class/net/veth0/statistics/rx_bytes
	rt_sides "$d0" 198.51.100.1 "$d1" 198.51.100.2 || fail "no GID"
	rt_pingpong "$KTAP_CASE.pp4" "$port" -c -s 4097 -n 200 || failed+=("ibv_rc_pingpong IPv4")
	rt_perf "$KTAP_CASE.write_bw" $((port + 2)) bw ib_write_bw -s 65536 -n 100 || failed+=("ib_write_bw")
	rt_sides "$d0" fd53:726f:6366::1 "$d1" fd53:726f:6366::2 || fail "no GID"
	rt_pingpong "$KTAP_CASE.pp6" $((port + 4)) -c -s 4097 -n 200 || failed+=("ibv_rc_pingpong IPv6")
	[ ${#failed[@]} -eq 0 ] || fail "between $d0 and $d1: ${failed[*]}"
	# The traffic went over the veth, not a shortcut: each pingpong moved
	# 200 messages of 4097 bytes each way, ib_write_bw 100 of 64 KiB one
	# way, all of it through veth0 (one end) and more with the headers.
	read -r tx </sys/class/net/veth0/statistics/tx_bytes
	read -r rx </sys/class/net/veth0/statistics/rx_bytes
	tx=$((tx - tx0)) rx=$((rx - rx0))
	echo "veth0 sent $tx and received $rx bytes"
	[ "$tx" -ge $((2 * 200 * 4097)) ] && [ "$rx" -ge $((2 * 200 * 4097)) ] ||
		fail "veth0 carried less than the pingpongs each way"
	[ $((tx + rx)) -ge $((4 * 200 * 4097 + 100 * 65536)) ] ||
		fail "veth0 carried less than the traffic"
}

has_gids() {
	tb_gid_index "${VETH_DEVS[0]}" 198.51.100.1 >/dev/null 2>&1 &&
		tb_gid_index "${VETH_DEVS[1]}" 198.51.100.2 >/dev/null 2>&1 &&
		tb_gid_index "${VETH_DEVS[0]}" fd53:726f:6366::1 >/dev/null 2>&1 &&
		tb_gid_index "${VETH_DEVS[1]}" fd53:726f:6366::2 >/dev/null 2>&1
}

# Of verbs_device_tests only the SQ poller's cases (pair runs the others).
export GTEST_FILTER='SqPoll.*'
# Arguments name a subset of the cases (the first one is always run).
CASES=(
	t_gids
	t_pp_ipv4
	t_pp_ipv4_1
	t_pp_ipv4_65536
	t_pp_ipv6
	t_pp_ipv6_4097_events
	t_perf_write_bw
	t_perf_send_bw
	t_perf_read_bw
	t_perf_write_lat
	t_loop_shortcut_write_bw
	"gtest:$TESTS/verbs_device_tests"
	t_loop_icrc_ipv4
	t_loop_icrc_ipv6
	t_loop_icrc_corrupt
	t_trace_pingpong
	t_trace_retry_error
	t_two_devices_veth
)
if [ $# -gt 0 ]; then
	ktap_main t_gids "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
