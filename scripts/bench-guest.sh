#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest side of `make bench` (scripts/bench): run by scripts/testbed
# --no-link in one guest (loopback: server and client on one device) or in
# two guests on one wire (servers in guest a, clients in guest b).  For each
# round (BENCH_RUNS of them) it creates the devices of each driver in
# BENCH_DRIVERS in turn (default "sroce rdma_rxe": sroce, then `rdma link
# delete` + rmmod, then rdma_rxe; they cannot share a kernel, both bind UDP
# 4791), runs the perftest set over it, removes it, and then runs the TCP
# set (iperf3 and tcp_pingpong) over the same wire.  Interleaving the
# drivers round by round spreads slow drifts of the host's load over all
# of them, and the order of the drivers rotates from round to round (round
# 1: sroce first, round 2: rdma_rxe first, ...), so that none always runs
# on the freshly booted guest or always after the others.
#
# The set (each run with the same iteration counts for every driver):
#   ib_write_bw, ib_send_bw, ib_read_bw at each of BENCH_BW_SIZES
#   ib_write_bw -q 4 at 64 KiB (multi-QP scaling), unless BENCH_Q4=0
#   ib_write_lat, ib_send_lat, ib_read_lat at 2 bytes
#   ib_write_bw -s 2 -n 20 first: the CPU cost of a run that moves nothing
#   TCP: iperf3 -l 64K for BENCH_TCP_SECS s, tcp_pingpong -S 2
#   middleware (two guests only), unless BENCH_MW=0: ucx_perftest's tag_lat
#   at 8 B and tag_bw at 64 KiB in one batch over UCX_TLS=rc_verbs,ud_verbs
#   (its log must show the tag lanes over rc_verbs on the device), and
#   fi_pingpong -p 'verbs;ofi_rxm' -e rdm at 64 B and at 1 MiB; rdma_rxe
#   with the workarounds of selftests/lib/middleware.sh, sroce without
#
# Raw output goes to $SROCE_LOGDIR/raw/ (the client's and server's output
# per run: DRIVER.TOOL.SIZE.qQPS.rROUND.ATTEMPT.{client,server}; see
# selftests/lib/rdma_tools.sh) and $SROCE_LOGDIR/cpu.txt (one line per run:
# "NAME BUSY_JIFFIES", this guest's busy time from /proc/stat, USER_HZ
# units, over the run).  scripts/bench-report reads them on the host.
#
# Environment (set by scripts/bench with testbed -e):
#   BENCH_RUNS (3), BENCH_DRIVERS ("sroce rdma_rxe"), BENCH_TCP (1),
#   BENCH_PERFTEST (1: the perftest set), BENCH_MW (1: the middleware set),
#   BENCH_BW_SIZES ("64 4096 65536 1048576"), BENCH_Q4 (1),
#   BENCH_SCALE (100: percent of the default iteration counts),
#   BENCH_TCP_SECS (3), BENCH_TOOLS (directory with tcp_pingpong and bench-fold),
#   BENCH_LIMIT (90: seconds a tool may run),
#   BENCH_PROFILE (empty: a run name without .rROUND, e.g.
#   sroce.ib_write_lat.2.q1: `perf record -e cpu-clock -a -g` in this guest
#   during that run in every round; $SROCE_LOGDIR/profile/RUN.report.txt
#   (perf report --stdio, flat) and RUN.folded (perf script folded by
#   $TOOLS/bench-fold, userspace/tools/bench_fold.cc), made in the guest while the module is loaded so
#   that its symbols resolve through /proc/kallsyms),
#   BENCH_PROFILE_FREQ (499: samples per second and vCPU),
#   BENCH_PROFILE_SCALE (100: the profiled run's iterations in percent of
#   its count from BENCH_SCALE),
#   BENCH_LAT_ONLY (0; 1: of the perftest set only the three latency runs,
#   of the TCP set only tcp_pingpong, no middleware, and 1000 round trips
#   per latency run instead of 300: scripts/bench's wire1 set-up, two guests
#   of one vCPU each)

set -u
# One compound command: bash parses the whole script before running it, so
# editing it during a run is safe.
{
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
RT_OUT=$SROCE_LOGDIR/raw
RT_LIMIT=${BENCH_LIMIT:-90}
. "$SROCE_SRC/selftests/lib/rdma_tools.sh"
. "$SROCE_SRC/selftests/lib/middleware.sh"

RUNS=${BENCH_RUNS:-3}
DRIVERS=${BENCH_DRIVERS:-sroce rdma_rxe}
BW_SIZES=${BENCH_BW_SIZES:-64 4096 65536 1048576}
SCALE=${BENCH_SCALE:-100}
TCP=${BENCH_TCP:-1}
TCP_SECS=${BENCH_TCP_SECS:-3}
Q4=${BENCH_Q4:-1}
PERFTEST=${BENCH_PERFTEST:-1}
MW=${BENCH_MW:-1}
LAT_ONLY=${BENCH_LAT_ONLY:-0}
[ "$LAT_ONLY" = 1 ] && MW=0
TOOLS=${BENCH_TOOLS:-$SROCE_BUILD/userspace/tools}
CPULOG=$SROCE_LOGDIR/cpu.txt
PROFILE=${BENCH_PROFILE:-}
PROF_FREQ=${BENCH_PROFILE_FREQ:-499}
PROF_SCALE=${BENCH_PROFILE_SCALE:-100}
PROF_DIR=$SROCE_LOGDIR/profile
FAILED=0
PORT=20000

if [ "${SROCE_GUESTS:-1}" = 2 ]; then
	MODE=pair
else
	MODE=local
fi

# iters SIZE: the iteration count of a run (lat: of a latency run), scaled
# by BENCH_SCALE percent, at least 20 (8 for 1 MiB).  Chosen so that the
# whole `make bench` takes about 20-30 minutes on a 2-core host (under TCG
# a run moves only 5-20 MB/s, and starting a perftest costs seconds of
# CPU), with the 64 KiB and 1 MiB runs moving 32 MiB each so that the
# CPU per GiB is not just the tools' start-up.
iters() {
	local n
	case $1 in
	lat)
		n=300
		# wire1 runs nothing else: a median and a p99 of more round trips
		[ "$LAT_ONLY" = 1 ] && n=1000 ;;
	64) n=2000 ;;
	4096) n=1000 ;;
	65536) n=500 ;;
	1048576) n=32 ;;
	*) n=$((8000000 / $1 + 100)) ;;
	esac
	n=$((n * SCALE / 100))
	if [ "$1" = 1048576 ]; then
		[ "$n" -ge 8 ] || n=8
	else
		[ "$n" -ge 20 ] || n=20
	fi
	echo "$n"
}

# busy: this guest's busy jiffies so far (everything but idle and iowait),
# with builtins only
busy() {
	local _c u n s i w q sq st _r
	read -r _c u n s i w q sq st _r </proc/stat
	BUSY=$((u + n + s + q + sq + st))
}

# sides: the server/client ends for rdma_tools.sh on the current device
sides() {
	if [ "$MODE" = pair ]; then
		rt_sides_pair ipv4
	else
		rt_sides_local ipv4
	fi
}

# prof_start NAME: start perf recording the whole guest (TCG has no PMU:
# the cpu-clock software event) and wait until it records
PROF_PID=
prof_start() {
	local data=/tmp/bench-prof.$1.data i
	PROF_DATA=$data
	rm -f "$data"
	sysctl -qw kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0
	command perf record -q -N -e cpu-clock -F "$PROF_FREQ" -a -g -o "$data" \
		>"$PROF_DIR/$1.record.log" 2>&1 &
	PROF_PID=$!
	# perf writes the file's header once its events are open
	for ((i = 0; i < 600; i++)); do
		[ -s "$data" ] && break
		kill -0 "$PROF_PID" 2>/dev/null || break
		_tb_nap 0.1
	done
	if ! kill -0 "$PROF_PID" 2>/dev/null; then
		tb_log "FAILED: perf record did not start (see profile/$1.record.log)"
		PROF_PID=
		return 1
	fi
	_tb_nap 1
}

# prof_stop NAME: stop perf, write the flat report and the folded stacks
prof_stop() {
	local rc=0
	[ -n "$PROF_PID" ] || return 1
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || rc=$?
	PROF_PID=
	# perf record exits with 130 (128 + SIGINT) after SIGINT
	[ "$rc" = 0 ] || [ "$rc" = 130 ] || { tb_log "perf record exited $rc"; return 1; }
	rc=0
	command perf report -i "$PROF_DATA" --stdio --no-children -g none \
		--sort comm,dso,symbol --percent-limit 0.1 \
		>"$PROF_DIR/$1.report.txt" 2>"$PROF_DIR/$1.report.log" || rc=1
	command perf script -i "$PROF_DATA" -F comm,ip,sym,dso 2>"$PROF_DIR/$1.script.log" |
		"$TOOLS/bench-fold" >"$PROF_DIR/$1.folded" || rc=1
	rm -f "$PROF_DATA"
	if [ "$rc" != 0 ] || [ ! -s "$PROF_DIR/$1.folded" ]; then
		tb_log "FAILED: no profile of $1 (see profile/$1.*.log)"
		return 1
	fi
	tb_log "profile of $1: $(grep -c . "$PROF_DIR/$1.folded") stacks in profile/$1.folded"
}

# profiled NAME: is the run NAME (NAME.rROUND too) the one to profile?
profiled() { [ -n "$PROFILE" ] && [ "${1%.r*}" = "$PROFILE" ]; }

# run NAME: run the rest of the arguments (an rt_* call), logging this
# guest's busy jiffies over it; a failure is counted and the bench goes on.
# NAME.rROUND = BENCH_PROFILE.rROUND: profiled.
run() {
	local name=$1 b0 rc=0 prof=0
	shift
	tb_log "$name"
	if profiled "$name"; then
		prof=1
		prof_start "$name" || { FAILED=$((FAILED + 1)); prof=0; }
	fi
	busy
	b0=$BUSY
	"$@" || rc=$?
	busy
	echo "$name $((BUSY - b0))" >>"$CPULOG"
	if [ "$prof" = 1 ]; then
		prof_stop "$name" || FAILED=$((FAILED + 1))
	fi
	if [ "$rc" != 0 ]; then
		tb_log "FAILED: $name (status $rc)"
		FAILED=$((FAILED + 1))
	fi
	PORT=$((PORT + 2))
}

perf_run() {		# DRIVER ROUND KIND TOOL SIZE QPS
	local drv=$1 r=$2 kind=$3 tool=$4 size=$5 q=$6 n name args=()
	if [ "$kind" = lat ]; then
		n=$(iters lat)
	else
		n=$(iters "$size")
	fi
	name=$drv.$tool.$size.q$q.r$r
	profiled "$name" && n=$((n * PROF_SCALE / 100))
	args=(-s "$size" -n "$n")
	[ "$q" = 1 ] || args+=(-q "$q")
	run "$name" rt_perf "$name" "$PORT" "$kind" "$tool" "${args[@]}"
}

# link_up DRIVER / link_down DRIVER: create / remove this guest's device
# and load / unload the module
dev_of() { [ "$1" = sroce ] && echo sroce0 || echo rxe0; }
mod_of() { [ "$1" = sroce ] && echo sroce || echo rdma_rxe; }

link_up() {
	SROCE_RDMA_DEV=$(dev_of "$1")
	tb_link_add "$1" "$SROCE_RDMA_DEV" "$SROCE_NETDEV" || return 1
	sides || return 1
	[ "$MODE" = local ] || tb_barrier "up.$1" 120
}

link_down() {
	local dev mod i
	dev=$(dev_of "$1")
	mod=$(mod_of "$1")
	[ "$MODE" = local ] || tb_barrier "down.$1" 300
	rdma link delete "$dev" || tb_log "rdma link delete $dev failed"
	# the module may stay busy for a moment after the device is gone
	for ((i = 0; i < 50; i++)); do
		rmmod "$mod" 2>/dev/null && return 0
		_tb_nap 0.2
	done
	rmmod "$mod"
}

rdma_set() {		# DRIVER ROUND
	local drv=$1 r=$2 tool size name
	if [ "$LAT_ONLY" != 1 ]; then
		# the CPU cost of a run that moves (almost) nothing: tool
		# start-up, clock calibration, connection set-up and tear-down
		# (a figure of its own in the report)
		name=$drv.baseline.2.q1.r$r
		run "$name" rt_perf "$name" "$PORT" bw ib_write_bw -s 2 -n 20
		for tool in ib_write_bw ib_send_bw ib_read_bw; do
			for size in $BW_SIZES; do
				perf_run "$drv" "$r" bw "$tool" "$size" 1
			done
		done
		[ "$Q4" = 1 ] && perf_run "$drv" "$r" bw ib_write_bw 65536 4
	fi
	for tool in ib_write_lat ib_send_lat ib_read_lat; do
		perf_run "$drv" "$r" lat "$tool" 2 1
	done
}

# ---- middleware: UCX and libfabric over the device (two guests)

# mw_iters N MIN: N iterations scaled by BENCH_SCALE, at least MIN
mw_iters() {
	local n=$(($1 * SCALE / 100))
	[ "$n" -ge "$2" ] || n=$2
	echo "$n"
}

# mw_ucx_run NAME DEV ENV...: ucx_perftest's batch NAME.batch between the
# guests (env ENV...); the UCX log of this side must show the tag lanes
# over rc_verbs on DEV, else a line in the output tells bench-report that
# the figures are not the device's
mw_ucx_run() {
	local name=$1 dev=$2 side=client
	shift 2
	rt_run "$name" "$PORT" _rt_ready_tcp \
		-- env "$@" ucx_perftest -p "$PORT" -b "$RT_OUT/$name.batch" \
		-- env "$@" ucx_perftest "$RT_CONNECT" -p "$PORT" -b "$RT_OUT/$name.batch" ||
		return 1
	rt_is_server && side=server
	mw_ucx_lanes "$RT_OUT/$name.$side" "$side" rc_verbs "$dev" 2 && return 0
	echo "bench: FAILED: UCX's tag lanes were not over rc_verbs/$dev:1" >>"$RT_OUT/$name.$side"
	return 1
}

# mw_fi_run NAME SIZE ITERS ENV...: fi_pingpong over verbs;ofi_rxm rdm
mw_fi_run() {
	local name=$1 size=$2 n=$3 args
	shift 3
	args=(fi_pingpong -p 'verbs;ofi_rxm' -e rdm -S "$size" -I "$n")
	rt_run "$name" "$PORT" _rt_ready_tcp \
		-- env "$@" "${args[@]}" -B "$PORT" \
		-- env "$@" "${args[@]}" -P "$PORT" "$RT_CONNECT"
}

mw_set() {		# DRIVER ROUND
	local drv=$1 r=$2 dev name size n ucx=() fienv=()
	dev=$(dev_of "$drv")
	if [ "$drv" != sroce ]; then
		ucx=("${MW_UCX_WORKAROUND[@]}")
		fienv=("${MW_FI_WORKAROUND[@]}")
	fi
	# one ucx_perftest per side for both tests (a start costs seconds);
	# size 0 in the name: a batch
	name=$drv.ucx_tag.0.q1.r$r
	printf '%s\n' "lat-8 -t tag_lat -s 8 -n $(mw_iters 200 20) -w 10" \
		"bw-64k -t tag_bw -s 65536 -n $(mw_iters 100 20) -w 10" >"$RT_OUT/$name.1.batch"
	run "$name" mw_ucx_run "$name.1" "$dev" UCX_TLS=rc_verbs,ud_verbs \
		UCX_NET_DEVICES="$dev:1" UCX_LOG_LEVEL=info "${ucx[@]}"
	for size in 64 1048576; do
		name=$drv.fi_rdm.$size.q1.r$r
		if [ "$size" = 64 ]; then
			n=$(mw_iters 200 20)
		else
			n=$(mw_iters 10 5)
		fi
		run "$name" mw_fi_run "$name.1" "$size" "$n" "${fienv[@]}"
	done
}

tcp_set() {		# ROUND
	local r=$1 name
	RT_MODE=$MODE
	if [ "$MODE" = pair ]; then
		RT_CONNECT=$SROCE_PEER_IP4
	else
		RT_CONNECT=$SROCE_IP4
	fi
	if [ "$LAT_ONLY" != 1 ]; then
		name=tcp.iperf3.65536.q1.r$r
		run "$name" rt_run "$name.1" "$PORT" _rt_ready_tcp \
			-- iperf3 -s -1 -p "$PORT" \
			-- iperf3 -c "$RT_CONNECT" -p "$PORT" -l 65536 -t "$TCP_SECS" -f m
	fi
	name=tcp.pingpong.2.q1.r$r
	run "$name" rt_run "$name.1" "$PORT" _rt_ready_tcp \
		-- "$TOOLS/tcp_pingpong" -s -p "$PORT" -S 2 \
		-- "$TOOLS/tcp_pingpong" -p "$PORT" -S 2 -n "$(iters lat)" "$RT_CONNECT"
}

# round_order ROUND: BENCH_DRIVERS rotated left by ROUND - 1
round_order() {
	local -a d
	local i
	read -r -a d <<<"$DRIVERS"
	for ((i = 0; i < ${#d[@]}; i++)); do
		echo "${d[(i + $1 - 1) % ${#d[@]}]}"
	done
}

mkdir -p "$RT_OUT"
[ -z "$PROFILE" ] || mkdir -p "$PROF_DIR"
: >"$CPULOG"
tb_log "bench: mode $MODE, kernel $SROCE_KVER, $(nproc) vCPUs, drivers: $DRIVERS, runs $RUNS, scale $SCALE%, perftest $PERFTEST, middleware $MW, TCP $TCP, latency only $LAT_ONLY"
# no device is set up by the bed (--no-link); make sure none is loaded
for d in $DRIVERS; do
	rmmod "$(mod_of "$d")" 2>/dev/null
done
for ((r = 1; r <= RUNS; r++)); do
	for d in $(round_order "$r"); do
		tb_log "round $r: $d"
		if ! link_up "$d"; then
			tb_log "FAILED: setting up $d"
			FAILED=$((FAILED + 1))
			link_down "$d"
			continue
		fi
		[ "$PERFTEST" = 1 ] && rdma_set "$d" "$r"
		[ "$MW" = 1 ] && [ "$MODE" = pair ] && mw_set "$d" "$r"
		link_down "$d" || { tb_log "FAILED: removing $d"; FAILED=$((FAILED + 1)); }
	done
	[ "$TCP" = 1 ] && tcp_set "$r"
done
tb_log "bench: done, $FAILED failed step(s)"
[ "$FAILED" = 0 ]
exit
}
