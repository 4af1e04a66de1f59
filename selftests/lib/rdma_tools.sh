# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Run rdma-core's and perftest's tools as a server and a client and check
# what they print.  For KTAP suites, sourced after ktap.sh and the test bed's
# scripts/guest/lib.sh.
#
# Topology: with two guests the server runs in guest a and the client in
# guest b (each guest reports its own side); with one guest both run here,
# the server in the background.  Before a run, set the two sides:
#
#   rt_sides_pair FAMILY          two guests, $SROCE_RDMA_DEV in each, the
#                                 GIDs of the guests' ipv4 or ipv6 addresses
#   rt_sides_local FAMILY         one guest, server and client on
#                                 $SROCE_RDMA_DEV over its own GID
#   rt_sides SDEV SADDR CDEV CADDR   one guest, explicit devices/addresses
#
# Runs (each returns non-zero after printing the tool output and the reason
# on failure; on success it prints the result lines only):
#
#   rt_pingpong NAME PORT [ARGS...]   ibv_rc_pingpong (-s -n -m -e -c ...),
#       or the pingpong named by RT_PP (ibv_uc_pingpong, ibv_ud_pingpong,
#       ibv_srq_pingpong: they print the same lines):
#       exit status 0 on both sides, the GIDs each side printed are the
#       expected ones, the byte and iteration counts match -s/-n, the time
#       per iteration is positive, and no "invalid data" report (-c: the
#       server checks the first byte of every page of the last message it
#       received; that is all -c does).
#   rt_perf NAME PORT KIND TOOL [ARGS...]   perftest TOOL (KIND bw or lat)
#       with -d -x -p -F added: exit status 0 on both sides; the client's
#       result table has one row per expected size (-a: 2 .. 2^23; -s; the
#       tool's default) with the -n iteration count (bw: times -q), all
#       numbers finite (lat: but t_stdev, see below), and
#       bw: BW average or MsgRate positive; lat: 0 < t_min <= t_typical,
#       t_avg <= t_max.  perftest calibrates its clock against gettimeofday
#       and under TCG that can fail ("Correlation coefficient r^2 < 0.9",
#       numbers 0 or inf): the run is repeated, up to three runs in all (on
#       PORT+1, then PORT), and if the clock fails in each the run fails
#       (numbers it cannot check).  A failure prints its reason before the
#       tool's output and again after it.
#   rt_rping NAME PORT [ARGS...]      rping over rdma_cm (-C -S -V ...),
#       addressed by IP (so the GID family follows the addresses); with -V
#       the client compares every byte the server wrote back (RDMA READ
#       then RDMA WRITE of the client's buffer) and says "data mismatch".
#       Exit status 255 with rping's exit race as its last line
#       (_rt_rping_exit_race) passes, for the client only where -C's
#       count of pings completed.
#   rt_cmatose NAME PORT [ARGS...]    ucmatose (RC over rdma_cm, -c -C -S):
#   rt_udaddy NAME [ARGS...]          udaddy (UD over rdma_cm, its fixed
#       port 7174, -c -C -S): exit status 0, "data transfers complete" and
#       "return status 0" on both sides (both poll their CQs until -c
#       times -C messages arrived).
#   rt_mckey NAME GROUP [ARGS...]     mckey: the server side joins the
#       multicast GROUP and receives, the client side joins and sends
#       (-c -C -S); checked like ucmatose, and each side printed its join.
#
# Case helpers for two-guest suites (they fail the case, with ktap.sh's
# fail, instead of returning):
#
#   rt_pair_ready                     the first case: $SROCE_RDMA_DEV's port
#       ACTIVE, RoCE v2 GIDs for this guest's IPv4 and IPv6 addresses, IP
#       paths to the peer, then a barrier with it.
#   rt_pp_pair TOOL PORT FAMILY [ARGS...]   rt_sides_pair FAMILY, then
#       rt_pingpong (named after the case) with RT_PP=TOOL.
#
# NAME must be unique in the suite run (it names barriers and files); use
# "$KTAP_CASE.something".  Every tool is killed after RT_LIMIT seconds
# (default 120), and RT_GRACE seconds (30) after the other side finished,
# both times SROCE_TEST_SLOW.

SLOW=${SLOW:-${SROCE_TEST_SLOW:-1}}
RT_OUT=${RT_OUT:-/tmp/sroce-rt}
RT_LIMIT=${RT_LIMIT:-120}
RT_GRACE=${RT_GRACE:-30}
mkdir -p "$RT_OUT"

# rt_gid_text ADDR: how the tools print the GID of ADDR (inet_ntop of the
# 16 GID bytes): ::ffff:a.b.c.d for IPv4, the address itself for IPv6.
rt_gid_text() {
	case $1 in
	*:*) echo "$1" ;;
	*) echo "::ffff:$1" ;;
	esac
}

# _rt_side_gid DEV ADDR: GID index of ADDR on DEV, or fail loudly.
_rt_side_gid() {
	tb_gid_index "$1" "$2" || { tb_gids "$1" >&2; return 1; }
}

rt_sides() {
	RT_S_DEV=$1 RT_S_ADDR=$2 RT_C_DEV=$3 RT_C_ADDR=$4
	RT_MODE=local
	RT_CONNECT=$RT_S_ADDR
	# the tools' TCP exchange listens on IPv4 only
	case $RT_CONNECT in *:*) RT_CONNECT=${SROCE_IP4:?} ;; esac
	RT_S_GID=$(_rt_side_gid "$RT_S_DEV" "$RT_S_ADDR") || return 1
	RT_C_GID=$(_rt_side_gid "$RT_C_DEV" "$RT_C_ADDR") || return 1
}

rt_sides_local() {
	local fam=${1:-ipv4} a=$SROCE_IP4
	[ "$fam" = ipv6 ] && a=$SROCE_IP6
	rt_sides "${SROCE_RDMA_DEV:?no RDMA device}" "$a" "$SROCE_RDMA_DEV" "$a"
	# ibv_rc_pingpong's server binds the first address getaddrinfo offers
	# (0.0.0.0); connect to this guest's IPv4 address
	RT_CONNECT=$SROCE_IP4
}

rt_sides_pair() {
	local fam=${1:-ipv4} own=$SROCE_IP4 peer=$SROCE_PEER_IP4 gid
	if [ "$fam" = ipv6 ]; then
		own=$SROCE_IP6 peer=$SROCE_PEER_IP6
	fi
	RT_MODE=pair
	RT_CONNECT=${SROCE_PEER_IP4:?two guests needed}
	gid=$(_rt_side_gid "${SROCE_RDMA_DEV:?no RDMA device}" "$own") || return 1
	if [ "$SROCE_ROLE" = a ]; then
		RT_S_DEV=$SROCE_RDMA_DEV RT_S_ADDR=$own RT_S_GID=$gid RT_C_ADDR=$peer
		RT_C_DEV='' RT_C_GID=''
	else
		RT_C_DEV=$SROCE_RDMA_DEV RT_C_ADDR=$own RT_C_GID=$gid RT_S_ADDR=$peer
		RT_S_DEV='' RT_S_GID=''
	fi
}

rt_pair_ready() {
	local dev=${SROCE_RDMA_DEV:?no RDMA device}
	tb_wait_port_active "$dev" 30 || fail "$dev not ACTIVE"
	echo "guest $SROCE_ROLE: $SROCE_DRIVER ($dev), peer: $SROCE_PEER_DRIVER"
	tb_gids "$dev"
	rt_sides_pair ipv4 || fail "no RoCE v2 GID for $SROCE_IP4"
	rt_sides_pair ipv6 || fail "no RoCE v2 GID for $SROCE_IP6"
	ping -c 1 -W $((10 * SLOW)) "$SROCE_PEER_IP4" >/dev/null || fail "no IPv4 path to the peer"
	ping -6 -c 1 -W $((10 * SLOW)) "$SROCE_PEER_IP6" >/dev/null || fail "no IPv6 path to the peer"
	tb_barrier "$KTAP_CASE" 120 || fail "the peer did not get here"
}

rt_pp_pair() {		# TOOL PORT FAMILY ARGS...
	local tool=$1 port=$2
	rt_sides_pair "$3" || fail "no RoCE v2 GID for this guest's $3 address"
	shift 3
	RT_PP=$tool rt_pingpong "$KTAP_CASE" "$port" "$@" || fail "$tool $*"
}

# rt_is_server / rt_is_client: does this guest run that side?
rt_is_server() { [ "$RT_MODE" = local ] || [ "$SROCE_ROLE" = a ]; }
rt_is_client() { [ "$RT_MODE" = local ] || [ "$SROCE_ROLE" = b ]; }

# rt_port_counter DEV NAME [NS]: port 1's counter NAME through netlink (in
# ib_core's shared mode the sysfs hw_counters files are only where the
# device is, the initial network namespace: its copies in the others have
# none), as network namespace NS sees DEV if given; fails if the port has
# no such counter
rt_port_counter() {
	local in=()
	[ -z "${3:-}" ] || in=(ip netns exec "$3")
	"${in[@]}" rdma statistic show link "$1/1" |
		awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n) { print $(i + 1); f = 1 } } END { exit !f }'
}

rt_show() {		# FILE WHAT
	echo "---- $2 ----"
	cat "$1" 2>/dev/null || echo "(no output file)"
	echo "---- end of $2 ----"
}

# _rt_ready_tcp PORT / _rt_ready_cm PORT: is the server ready for a client?
_rt_ready_tcp() { _tb_listening "$1"; }
_rt_ready_cm() {
	rdma resource show cm_id 2>/dev/null | grep -Eq "state LISTEN .*:$1( |\$)"
}

# _rt_wait_ready READY PORT PID TIMEOUT: until READY PORT, failing at once
# if PID (the server) exits.
_rt_wait_ready() {
	local ready=$1 port=$2 pid=$3 deadline=$((SECONDS + $4 * SLOW))
	until "$ready" "$port"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "the server exited before it was ready (port $port)"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "the server was not ready on port $port after $4 s"
			return 1
		fi
		_tb_nap 0.2
	done
}

# _rt_kill PID: TERM, then KILL if it is still there after 5 s.
_rt_kill() {
	local i
	kill "$1" 2>/dev/null
	for ((i = 0; i < 25; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		_tb_nap 0.2
	done
	kill -KILL "$1" 2>/dev/null
}

# _rt_wait_tool PID DEADLINE [OTHER_DONE]: wait for a tool started in the
# background and return its exit status; at DEADLINE ($SECONDS) kill it and
# return 124.  OTHER_DONE is a shell command (eval'ed at each poll, so expand
# what it needs when building it) that
# is true once the other side has finished (or the peer guest has finished
# its script): then the tool gets RT_GRACE more seconds before it is killed
# (status 143), e.g. a server whose client gave up, or a client waiting for
# an RDMA WRITE from a server that failed.  (Polling with builtins rather
# than timeout(1): every exec costs under TCG.)
_rt_wait_tool() {
	local pid=$1 deadline=$2 other=${3:-} grace_end='' rc=0
	while kill -0 "$pid" 2>/dev/null; do
		if [ -n "$other" ] && [ -z "$grace_end" ] && { eval "$other" || tb_peer_done; }; then
			grace_end=$((SECONDS + RT_GRACE * SLOW))
		fi
		if [ -n "$grace_end" ] && [ "$SECONDS" -ge "$grace_end" ]; then
			echo "still running $RT_GRACE s after the other side finished: killed"
			_rt_kill "$pid"
			wait "$pid" 2>/dev/null
			return 143
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			_rt_kill "$pid"
			wait "$pid" 2>/dev/null
			return 124
		fi
		_tb_nap 0.1
	done
	wait "$pid" || rc=$?
	return "$rc"
}

# rt_run NAME PORT READY -- SERVER_CMD... -- CLIENT_CMD...
# Runs the server (this guest, or guest a) until READY PORT, then the client
# (this guest, or guest b, after a barrier), each for at most RT_LIMIT s.
# Output in $RT_OUT/NAME.server and NAME.client; exit statuses in RT_SRV_RC
# and RT_CLI_RC (empty for a side not run here).  When the client is done
# it leaves a word for the server side: the output of the function named
# by RT_VERDICT (called with NAME), else "done"; the server side finds it
# in RT_CLIENT_SAID.  Returns 0 if the side(s) run here exited 0.
rt_run() {
	local name=$1 port=$2 ready=$3 scmd=() ccmd=() pid cpid sdeadline ok=1 donef sdonef word other
	shift 3
	[ "$1" = -- ] && shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	[ "$1" = -- ] && shift
	ccmd=("$@")
	RT_SRV_RC='' RT_CLI_RC='' RT_CLIENT_SAID=''
	_rt_t0=$EPOCHREALTIME
	# donef: the client finished (its word for the server inside);
	# sdonef: the server finished
	donef=$RT_OUT/$name.done
	[ "$RT_MODE" = pair ] && donef=$SROCE_SHARED/rt.$name.done
	sdonef=$donef.server
	rm -f "$RT_OUT/$name.server" "$RT_OUT/$name.client" "$donef" "$sdonef"

	if rt_is_server; then
		echo "server: ${scmd[*]}"
		# line-buffered, so that a tool killed at its limit leaves its output
		stdbuf -oL "${scmd[@]}" >"$RT_OUT/$name.server" 2>&1 &
		pid=$!
		sdeadline=$((SECONDS + RT_LIMIT * SLOW))
		_rt_wait_ready "$ready" "$port" "$pid" 60 || ok=0
		[ "$ok" = 0 ] || echo "server: ready after $(_rt_secs) s"
	fi
	# passed even if the server failed: the client then fails at once
	# instead of waiting at the barrier
	if [ "$RT_MODE" = pair ]; then
		tb_barrier "$name.ready" 180 || ok=0
	fi
	if rt_is_client; then
		echo "client: ${ccmd[*]}"
		RT_CLI_RC=0
		if [ "$ok" = 1 ] || [ "$RT_MODE" = pair ]; then
			stdbuf -oL "${ccmd[@]}" >"$RT_OUT/$name.client" 2>&1 &
			cpid=$!
			printf -v other '[ -e %q ]' "$sdonef"
			[ "$RT_MODE" = local ] && other="! kill -0 $pid 2>/dev/null"
			_rt_wait_tool "$cpid" $((SECONDS + RT_LIMIT * SLOW)) "$other" || RT_CLI_RC=$?
		else
			RT_CLI_RC=125
			echo "(not run: the server was not ready)" >"$RT_OUT/$name.client"
		fi
		echo "client: done after $(_rt_secs) s"
		word='done'
		[ -n "${RT_VERDICT:-}" ] && word=$("$RT_VERDICT" "$name")
		printf '%s\n' "$word" >"$donef.tmp" && mv -f "$donef.tmp" "$donef"
	fi
	if rt_is_server; then
		if [ "$ok" = 1 ]; then
			RT_SRV_RC=0
			printf -v other '[ -e %q ]' "$donef"
			_rt_wait_tool "$pid" "$sdeadline" "$other" || RT_SRV_RC=$?
			: >"$sdonef"
		else
			_rt_kill "$pid"
			wait "$pid" 2>/dev/null
			RT_SRV_RC=125
			: >"$sdonef"
		fi
		RT_CLIENT_SAID=$(_rt_client_said "$donef")
		echo "server: done after $(_rt_secs) s"
	fi
	[ "${RT_SRV_RC:-0}" = 0 ] && [ "${RT_CLI_RC:-0}" = 0 ]
}

# _rt_secs: seconds since rt_run started (bash builtins only)
_rt_secs() {
	local t0=${_rt_t0/./} t1=${EPOCHREALTIME/./}
	local ms=$(((10#$t1 - 10#$t0) / 1000))
	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# _rt_client_said DONEFILE: the client's word (waits up to 60 s for it).
_rt_client_said() {
	local f=$1 deadline=$((SECONDS + 60 * SLOW)) w=
	until [ -s "$f" ]; do
		if tb_peer_done || [ "$SECONDS" -ge "$deadline" ]; then
			echo "?"
			return 0
		fi
		_tb_nap 0.2
	done
	read -r w <"$f"
	echo "$w"
}

# _rt_status SIDE RC: "SIDE: exit status RC", or what happened to it
_rt_status() {
	case $2 in
	124) echo "$1: killed after $((RT_LIMIT * SLOW)) s" ;;
	143) echo "$1: killed" ;;
	125) echo "$1: not run or not ready" ;;
	*) echo "$1: exit status $2" ;;
	esac
}

# ---- ibv_rc_pingpong (and uc, ud, srq) ------------------------------------

# _rt_pp_check FILE SIDE SIZE ITERS LOCALADDR REMOTEADDR
_rt_pp_check() {
	local lgid rgid
	lgid=$(rt_gid_text "$5")
	rgid=$(rt_gid_text "$6")
	awk -v side="$2" -v bytes=$(($3 * $4 * 2)) -v iters="$4" \
	    -v lgid="$lgid" -v rgid="$rgid" '
		/^  local address: / { l = $NF }
		/^  remote address: / { r = $NF }
		/^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit\/sec$/ { b = $1 }
		/^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec\/iter$/ { i = $1; lat = $(NF - 1) }
		/invalid data/ { bad = bad "  " $0 "\n" }
		END {
			if (l != lgid) e = e sprintf("%s: local GID %s, expected %s\n", side, l, lgid)
			if (r != rgid) e = e sprintf("%s: remote GID %s, expected %s\n", side, r, rgid)
			if (b == "") e = e side ": no \"bytes in\" line\n"
			else if (b != bytes) e = e sprintf("%s: %s bytes, expected %s\n", side, b, bytes)
			if (i == "") e = e side ": no \"iters in\" line\n"
			else if (i != iters) e = e sprintf("%s: %s iterations, expected %s\n", side, i, iters)
			if (i != "" && !(lat + 0 > 0)) e = e sprintf("%s: %s usec/iter\n", side, lat)
			if (bad != "") e = e side ": the data check failed:\n" bad
			if (e != "") { printf "%s", e; exit 1 }
		}' "$1"
}

# rt_pp_size_iters ARGS...: "SIZE ITERS" of a pingpong tool's arguments,
# with the tools' defaults (4096 bytes, 1000 iterations)
rt_pp_size_iters() {
	local size=4096 iters=1000
	while [ $# -gt 0 ]; do
		case $1 in
		-s) size=$2; shift ;;
		-n) iters=$2; shift ;;
		esac
		shift
	done
	echo "$size $iters"
}

rt_pingpong() {
	local name=$1 port=$2 size iters side st own other out rc=0 pp=${RT_PP:-ibv_rc_pingpong}
	shift 2
	local args=("$@")
	read -r size iters < <(rt_pp_size_iters "$@")
	rt_run "$name" "$port" _rt_ready_tcp \
		-- "$pp" -d "$RT_S_DEV" -g "$RT_S_GID" -p "$port" "${args[@]}" \
		-- "$pp" -d "$RT_C_DEV" -g "$RT_C_GID" -p "$port" "${args[@]}" "$RT_CONNECT"
	for side in server client; do
		if [ "$side" = server ]; then
			rt_is_server || continue
			st=$RT_SRV_RC own=$RT_S_ADDR other=$RT_C_ADDR
		else
			rt_is_client || continue
			st=$RT_CLI_RC own=$RT_C_ADDR other=$RT_S_ADDR
		fi
		out=$RT_OUT/$name.$side
		if [ "$st" != 0 ]; then
			_rt_status "$side" "$st"
			rt_show "$out" "$side output"
			rc=1
		elif ! _rt_pp_check "$out" "$side" "$size" "$iters" "$own" "$other"; then
			rt_show "$out" "$side output"
			rc=1
		else
			grep -E '^[0-9]+ (bytes|iters) in ' "$out" | sed "s/^/$side: /"
		fi
	done
	return "$rc"
}

# ---- perftest -------------------------------------------------------------

# _rt_perf_sizes TOOL ARGS...: the sizes the result table must list
_rt_perf_sizes() {
	local tool=$1 size='' all=0 i
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-a|--all) all=1 ;;
		-s|--size) size=$2; shift ;;
		esac
		shift
	done
	if [ "$all" = 1 ]; then
		for ((i = 1; i <= 23; i++)); do printf '%d ' $((1 << i)); done
		echo
		return
	fi
	case $tool in
	ib_atomic_*) size=8 ;;
	*_lat) size=${size:-2} ;;
	*) size=${size:-65536} ;;
	esac
	echo "$size"
}

# _rt_perf_check FILE KIND ITERS "SIZES" CLOCK_OK
_rt_perf_check() {
	awk -v kind="$2" -v iters="$3" -v sizes="$4" -v clock="$5" '
		function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
		/^ *#bytes/ { t = 1; next }
		t && /^-+$/ { t = 0; next }
		t && $1 ~ /^[0-9]+$/ {
			got = got (got == "" ? "" : " ") $1
			if ($2 != iters) e = e sprintf("size %s: %s iterations, expected %s\n", $1, $2, iters)
			if (kind == "bw") {
				if (NF < 5) { e = e "short row: " $0 "\n"; next }
				for (k = 3; k <= 5; k++)
					if (clock && !num($k)) e = e sprintf("size %s: %s is not a finite number\n", $1, $k)
				if (clock && !($4 + 0 > 0 || $5 + 0 > 0))
					e = e sprintf("size %s: neither bandwidth (%s MB/s) nor message rate (%s Mpps) is positive\n", $1, $4, $5)
			} else {
				if (NF < 9) { e = e "short row: " $0 "\n"; next }
				# t_stdev ($7) is left out: perftest prints it as -nan
				# when one iteration took far longer than the others
				# (seen with rdma_rxe and sroce on a loaded host: t_max
				# 0.1-1.8 s); the other columns are checked
				for (k = 3; k <= 9; k++)
					if (clock && k != 7 && !num($k)) e = e sprintf("size %s: %s is not a finite number\n", $1, $k)
				if (clock && !($3 + 0 > 0)) e = e sprintf("size %s: t_min %s usec\n", $1, $3)
				if (clock && !($3 + 0 <= $5 + 0 && $5 + 0 <= $4 + 0))
					e = e sprintf("size %s: t_typical %s not within [t_min %s, t_max %s]\n", $1, $5, $3, $4)
				if (clock && !($3 + 0 <= $6 + 0 && $6 + 0 <= $4 + 0))
					e = e sprintf("size %s: t_avg %s not within [t_min %s, t_max %s]\n", $1, $6, $3, $4)
			}
		}
		END {
			want = sizes
			sub(/ +$/, "", want)
			if (got != want) e = e sprintf("sizes in the table: \"%s\", expected \"%s\"\n", got, want)
			if (e != "") { printf "%s", e; exit 1 }
		}' "$1"
}

_rt_clock_failed() { grep -q 'Correlation coefficient r^2' "$1" 2>/dev/null; }

# RT_VERDICT for perftest: run again if the client's clock calibration failed
# (at most _RT_PERF_ATTEMPTS runs in all)
_RT_PERF_ATTEMPTS=3
_rt_perf_verdict() {
	if [ "$RT_CLI_RC" = 0 ] && [ "$attempt" -lt "$_RT_PERF_ATTEMPTS" ] && _rt_clock_failed "$RT_OUT/$1.client"; then
		echo retry
	else
		echo 'done'
	fi
}

# _rt_perf_failed FILE WHAT WHY: the reason, the tool's output, and the
# reason again after it, so that a log that keeps only its tail says why
_rt_perf_failed() {
	echo "$3"
	rt_show "$1" "$2"
	echo "${3%%$'\n'*} (${2%% *} failed; its output above)"
}

rt_perf() {
	local name=$1 port=$2 kind=$3 tool=$4 iters='' qps=1 sizes attempt=1 rc=0 clock run a
	shift 4
	local args=("$@")
	for ((a = 0; a < ${#args[@]}; a++)); do
		case ${args[a]} in
		-n|--iters) iters=${args[a + 1]} ;;
		-q|--qp) qps=${args[a + 1]} ;;
		esac
	done
	[ -n "$iters" ] || { echo "rt_perf: pass -n"; return 1; }
	# bandwidth tools count the iterations of all QPs together
	[ "$kind" = bw ] && iters=$((iters * qps))
	sizes=$(_rt_perf_sizes "$tool" "${args[@]}")
	while :; do
		# two ports per run (callers space their runs by two): an attempt
		# comes after a clean exit of both tools, so the third may take
		# the first one's port again
		local p=$((port + (attempt - 1) % 2))
		run=$name.$attempt
		RT_VERDICT=_rt_perf_verdict rt_run "$run" "$p" _rt_ready_tcp \
			-- "$tool" -d "$RT_S_DEV" -x "$RT_S_GID" -p "$p" -F "${args[@]}" \
			-- "$tool" -d "$RT_C_DEV" -x "$RT_C_GID" -p "$p" -F "${args[@]}" "$RT_CONNECT"
		local word=$RT_CLIENT_SAID
		rt_is_client && word=$(_rt_perf_verdict "$run")
		[ "$word" = retry ] || break
		echo "perftest could not calibrate its clock (TCG under load): running it again"
		attempt=$((attempt + 1))
	done
	local why
	if rt_is_server; then
		why=''
		if [ "$RT_SRV_RC" != 0 ]; then
			why=$(_rt_status server "$RT_SRV_RC")
		elif ! grep -q 'remote address' "$RT_OUT/$run.server"; then
			why="server: no remote address exchanged"
		fi
		if [ -n "$why" ]; then
			_rt_perf_failed "$RT_OUT/$run.server" "server output" "$why"
			rc=1
		else
			echo "server: exit status 0"
		fi
	fi
	if rt_is_client; then
		why=''
		clock=1
		_rt_clock_failed "$RT_OUT/$run.client" && clock=0
		if [ "$RT_CLI_RC" != 0 ]; then
			why=$(_rt_status client "$RT_CLI_RC")
		elif ! why=$(_rt_perf_check "$RT_OUT/$run.client" "$kind" "$iters" "$sizes" "$clock"); then
			:
		elif [ "$clock" != 1 ]; then
			# Its numbers are meaningless then: not checked is not passed
			why="perftest's clock calibration failed in each of its $attempt attempts (host overloaded?): its times and rates cannot be checked"
		fi
		if [ -n "$why" ]; then
			_rt_perf_failed "$RT_OUT/$run.client" "client output" "$why"
			rc=1
		else
			sed -n '/^ *#bytes/,/^-/p' "$RT_OUT/$run.client" | sed '$d' | tr -s ' \t' ' ' | sed 's/^/client:/'
		fi
	fi
	return "$rc"
}

# ---- rping (rdma_cm) ------------------------------------------------------

# _rt_rping_exit_race FILE RC: RC is the exit race of the rping of Debian
# 12 (rdma-core 44; fixed upstream by rdma-core pull request 1622): its CM
# thread calls rdma_get_cm_event() again after the last event, finds the
# event channel that the main thread closed once the test had ended, and
# exits with status 255 saying so on its last line of output.
_rt_rping_exit_race() {
	[ "$2" = 255 ] &&
		grep -v '^ping data: ' "$1" | tail -n 1 | grep -q 'rdma_get_cm_event: Bad file descriptor$'
}

rt_rping() {
	local name=$1 port=$2 count='' rc=0 n
	shift 2
	local args=("$@")
	while [ $# -gt 0 ]; do
		case $1 in -C) count=$2; shift ;; esac
		shift
	done
	# -v prints every ping's data once the client verified it (-V): count them
	rt_run "$name" "$port" _rt_ready_cm \
		-- rping -s -a "$RT_S_ADDR" -p "$port" "${args[@]}" \
		-- rping -c -a "$RT_S_ADDR" -I "$RT_C_ADDR" -p "$port" -v "${args[@]}"
	if rt_is_server; then
		if _rt_rping_exit_race "$RT_OUT/$name.server" "$RT_SRV_RC"; then
			echo "server: exit status 255 from rping's own exit race (rdma_get_cm_event after the end)"
		elif [ "$RT_SRV_RC" != 0 ]; then
			_rt_status server "$RT_SRV_RC"
			rt_show "$RT_OUT/$name.server" "server output"
			rc=1
		else
			echo "server: exit status 0"
		fi
	fi
	if rt_is_client; then
		n=$(grep -c '^ping data: rdma-ping-' "$RT_OUT/$name.client")
		# the exit race only where every ping was counted
		if [ -n "$count" ] && [ "$n" = "$count" ] &&
		   _rt_rping_exit_race "$RT_OUT/$name.client" "$RT_CLI_RC"; then
			echo "client: exit status 255 from rping's own exit race (rdma_get_cm_event after the end)"
			RT_CLI_RC=0
		fi
		if [ "$RT_CLI_RC" != 0 ] || grep -q 'data mismatch' "$RT_OUT/$name.client" ||
		   { [ -n "$count" ] && [ "$n" != "$count" ]; }; then
			_rt_status client "$RT_CLI_RC"
			echo "client: $n pings completed${count:+, expected $count}"
			# (a message on stderr can split a long ping data line)
			grep -v '^ping data: ' "$RT_OUT/$name.client" | cut -c1-160 >"$RT_OUT/$name.client.short"
			rt_show "$RT_OUT/$name.client.short" "client output (ping data lines left out, lines cut at 160 characters)"
			rc=1
		else
			echo "client: exit status 0, $n pings, each buffer compared byte for byte"
		fi
	fi
	return "$rc"
}

# ---- ucmatose, udaddy, mckey (rdma_cm) ------------------------------------

# _rt_cm_check FILE SIDE TOOL: what the rdma_cm examples print on success
_rt_cm_check() {
	awk -v side="$2" -v tool="$3" '
		/^data transfers complete$/ { done = 1 }
		/^return status / { st = $3 }
		/^mckey: joined dgid: / { joined = 1 }
		END {
			if (!done) e = e side ": no \"data transfers complete\"\n"
			if (st != "0") e = e sprintf("%s: return status %s\n", side, st == "" ? "(none)" : st)
			if (tool == "mckey" && !joined) e = e side ": did not join the group\n"
			if (e != "") { printf "%s", e; exit 1 }
		}' "$1"
}

# _rt_cm_report NAME TOOL: check and report the side(s) run here
_rt_cm_report() {
	local name=$1 tool=$2 side st rc=0
	for side in server client; do
		if [ "$side" = server ]; then
			rt_is_server || continue
			st=$RT_SRV_RC
		else
			rt_is_client || continue
			st=$RT_CLI_RC
		fi
		if [ "$st" != 0 ]; then
			_rt_status "$side" "$st"
			rt_show "$RT_OUT/$name.$side" "$side output"
			rc=1
		elif ! _rt_cm_check "$RT_OUT/$name.$side" "$side" "$tool"; then
			rt_show "$RT_OUT/$name.$side" "$side output"
			rc=1
		else
			echo "$side: exit status 0, data transfers complete"
		fi
	done
	return "$rc"
}

rt_cmatose() {
	local name=$1 port=$2
	shift 2
	rt_run "$name" "$port" _rt_ready_cm \
		-- ucmatose -b "$RT_S_ADDR" -p "$port" "$@" \
		-- ucmatose -s "$RT_S_ADDR" -b "$RT_C_ADDR" -p "$port" "$@"
	_rt_cm_report "$name" ucmatose
}

rt_udaddy() {
	local name=$1
	shift
	rt_run "$name" 7174 _rt_ready_cm \
		-- udaddy -b "$RT_S_ADDR" "$@" \
		-- udaddy -s "$RT_S_ADDR" -b "$RT_C_ADDR" "$@"
	_rt_cm_report "$name" udaddy
}

# _rt_ready_joined: the mckey receiver (its output in _RT_MC_OUT) joined
_rt_ready_joined() {
	local line
	[ -r "$_RT_MC_OUT" ] || return 1
	while IFS= read -r line; do
		case $line in "mckey: joined dgid: "*) return 0 ;; esac
	done <"$_RT_MC_OUT"
	return 1
}

rt_mckey() {
	local name=$1 group=$2
	shift 2
	# the sender sends 3 s after its own join, unreliably: the receiver
	# must have joined (and posted its receives) before the sender starts
	_RT_MC_OUT=$RT_OUT/$name.server
	rt_run "$name" 0 _rt_ready_joined \
		-- mckey -m "$group" -b "$RT_S_ADDR" "$@" \
		-- mckey -m "$group" -s -b "$RT_C_ADDR" "$@"
	_rt_cm_report "$name" mckey
}
