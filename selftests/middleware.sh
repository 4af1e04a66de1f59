#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Real RDMA middleware between two guests (with sroce, selftests/run makes
# them two network namespaces of one guest: scripts/testbed --netns), with
# Debian 12's packages and their defaults (no workaround variable): UCX's
# ucx_perftest over UCX_TLS=rc_verbs,ud_verbs and over ud_verbs alone (tag latency and
# bandwidth at 8 B, 4 KiB and 1 MiB in one batch), each guest's UCX log
# showing that the verbs transport of the device carried the tag lane, not
# TCP; Open MPI's mpirun with --mca pml ucx running userspace/tests/mpi's
# sroce_mpi_check (a ping-pong with every byte checked, MPI_Allreduce sum
# and max of 1 MiB checked) with one rank per guest, launched through
# selftests/lib/mpi_exec (the guests have no ssh); libfabric's fi_pingpong
# with its data check (-c) over verbs msg endpoints (RC over rdma_cm) and
# over verbs;ofi_rxm rdm endpoints, 64 B to 1 MiB.  Servers (and mpirun)
# run in guest a, clients (and the remote rank) in guest b.  Emits KTAP.
#
# With rdma_rxe (selftests/run -a rdma_rxe middleware) every case runs
# twice, without and with the workarounds that UCX 1.13 and libfabric 1.17
# need on it (UCX_UD_ETH_DGID_CHECK=n, FI_UNIVERSE_SIZE=16), and is
# reported as informational: a skip whose reason says whether it passed
# (Documentation/admin-guide.md compares the drivers with these lines).
#
#   scripts/testbed -k 6.1 -n 2 selftests/middleware.sh
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/middleware.sh

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"
. "$(dirname "$0")/lib/middleware.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "middleware.sh needs two guests (-n 2)" >&2; exit 2; }
MPI_CHECK=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_mpi_check
MPI_EXEC=$SROCE_SRC/selftests/lib/mpi_exec

# The workarounds of the rdma_rxe cases named *_workaround:
# MW_UCX_WORKAROUND and MW_FI_WORKAROUND of lib/middleware.sh.  Never set
# for sroce's cases.

# Each case has its own TCP ports (the tools' exchange of addresses).
port_of() { echo $((23000 + 20 * $1)); }

t_gids_and_wire() { rt_pair_ready; }

# mw_informational CASE...: on sroce, run CASE as a case; on any other
# driver run it and skip with what became of it (it is there to compare,
# not to assert), its output shown either way.
mw_informational() {
	local rc=0 why cause
	if [ "$SROCE_DRIVER" = sroce ]; then
		"$@"
		return
	fi
	# in the background so that set -e holds inside (not in a || list)
	( set -e; "$@" ) >"$RT_OUT/$KTAP_CASE.info" 2>&1 &
	wait $! || rc=$?
	cat "$RT_OUT/$KTAP_CASE.info"
	if [ "$rc" = 0 ]; then
		skip "informational ($SROCE_DRIVER): passed"
	fi
	why=$(sed -n 's/^FAIL: //p' "$RT_OUT/$KTAP_CASE.info" | tail -n 1)
	# and the tool's own word for it: UCX's fatal error, libfabric's
	# failed call (addresses left out, so runs compare)
	cause=$(grep -m 1 -oE 'Fatal: .*|fi_[a-z_]+\(\): .*ret=-?[0-9]+.*' \
		"$RT_OUT/$KTAP_CASE.info" | sed 's/ 0x[0-9a-f]*//g')
	skip "informational ($SROCE_DRIVER): FAILED: ${why:-exit status $rc}${cause:+ ($cause)}"
}

# ---- UCX ----------------------------------------------------------------------

# The tests of one ucx_perftest batch (one process per side): tag matching
# latency and bandwidth at 8 B, 4 KiB and 1 MiB, with iteration counts that
# TCG gets through in seconds.
UCX_BATCH="lat-8 -t tag_lat -s 8 -n 100 -w 10
lat-4k -t tag_lat -s 4096 -n 50 -w 5
lat-1m -t tag_lat -s 1048576 -n 3 -w 1
bw-8 -t tag_bw -s 8 -n 200 -w 20
bw-4k -t tag_bw -s 4096 -n 100 -w 10
bw-1m -t tag_bw -s 1048576 -n 5 -w 1"

# _ucx_check LOG SIDE TLS: the UCX log of one side: one tag lane (ep_cfg
# line) per test of the batch, each led by TLS on this guest's device (e.g.
# tag(rc_verbs/sroce0:1 ...)), none over TCP; the client also printed one
# "Final:" row per test with its iteration count and a positive, finite
# overall time per iteration (the other columns round to 0 at TCG's rates).
_ucx_check() {
	local log=$1 side=$2 tls=$3 n
	n=$(printf '%s\n' "$UCX_BATCH" | wc -l)
	mw_ucx_lanes "$log" "$side" "$tls" "$DEV" "$n" || return 1
	[ "$side" = client ] || return 0
	printf '%s\n' "$UCX_BATCH" | awk -v file="$log" '
		{ name[NR] = $1; for (i = 2; i < NF; i++) if ($i == "-n") iters[NR] = $(i + 1); n = NR }
		END {
			while ((getline l < file) > 0) {
				split(l, f, " ")
				if (f[1] == "Final:") {
					r++
					if (f[2] != iters[r] || f[5] !~ /^[0-9.]+$/ || f[5] + 0 <= 0) {
						print "client: " name[r] ": bad row: " l
						bad = 1
					} else
						print "client: " name[r] ": " l
				}
			}
			if (r != n) { print "client: " r " result rows for " n " tests"; bad = 1 }
			exit bad
		}'
}

# ucx_case PORTSLOT TLS [VAR=VALUE...]: ucx_perftest's batch between the
# guests with UCX_TLS=TLS on this guest's device, UCX's log at info.
ucx_case() {
	local port tls=$2 name=$KTAP_CASE env
	port=$(port_of "$1")
	shift 2
	rt_sides_pair ipv4 || fail "no GID"
	printf '%s\n' "$UCX_BATCH" >"$RT_OUT/$name.batch"
	env=(env UCX_TLS="$tls" UCX_NET_DEVICES="$DEV:1" UCX_LOG_LEVEL=info "$@")
	# a UCX that cannot reach the peer gives up after its own 30 s time out
	RT_LIMIT=150 rt_run "$name" "$port" _rt_ready_tcp \
		-- "${env[@]}" ucx_perftest -p "$port" -b "$RT_OUT/$name.batch" \
		-- "${env[@]}" ucx_perftest "$RT_CONNECT" -p "$port" -b "$RT_OUT/$name.batch" ||
		{
			rt_is_server && rt_show "$RT_OUT/$name.server" "server: $(_rt_status server "$RT_SRV_RC")"
			rt_is_client && rt_show "$RT_OUT/$name.client" "client: $(_rt_status client "$RT_CLI_RC")"
			fail "ucx_perftest over $tls"
		}
	if rt_is_server; then
		_ucx_check "$RT_OUT/$name.server" server "${tls%%,*}" ||
			{ rt_show "$RT_OUT/$name.server" server; fail "UCX log of the server"; }
	else
		_ucx_check "$RT_OUT/$name.client" client "${tls%%,*}" ||
			{ rt_show "$RT_OUT/$name.client" client; fail "UCX log of the client"; }
	fi
}

t_ucx_rc_ud()			{ mw_informational ucx_case 1 rc_verbs,ud_verbs; }
t_ucx_ud()			{ mw_informational ucx_case 2 ud_verbs; }
t_ucx_rc_ud_workaround()	{ mw_informational ucx_case 3 rc_verbs,ud_verbs "${MW_UCX_WORKAROUND[@]}"; }
t_ucx_ud_workaround()		{ mw_informational ucx_case 4 ud_verbs "${MW_UCX_WORKAROUND[@]}"; }

# ---- Open MPI -----------------------------------------------------------------

# mpi_case NAME [VAR=VALUE...]: mpirun in guest a starts sroce_mpi_check
# with one rank here and one in guest b (through mpi_exec, which guest b
# serves), pml ucx, UCX's log at info and the VARs exported to both
# ranks.  Guest a asserts the program's checks, that the ranks ran in
# different guests and that UCX's tag lanes were over the verbs device;
# guest b that what it ran for mpirun (orted) exited 0, and mpirun too.
mpi_case() {
	local name=$KTAP_CASE mlog=$RT_OUT/$KTAP_CASE.mpirun rc=0 pid v x=() st
	[ -x "$MPI_CHECK" ] || fail "$MPI_CHECK is not built (libopenmpi-dev; make userspace)"
	command -v mpirun >/dev/null || fail "mpirun is not installed (openmpi-bin)"
	for v in UCX_LOG_LEVEL=info "$@"; do
		x+=(-x "$v")
	done
	if [ "$SROCE_ROLE" = b ]; then
		rm -rf "$SROCE_SHARED/mpi-exec"
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
			"$MPI_EXEC" --serve 2>"$RT_OUT/$name.serve" &
		pid=$!
		tb_barrier "$name.serving" 60 || fail "guest a did not get here"
		tb_wait_pid "$pid" $((RT_LIMIT + 60)) || rc=$?
		cat "$RT_OUT/$name.serve"
		tb_barrier "$name.done" 60 || fail "guest a did not finish"
		[ "$rc" = 0 ] || fail "mpi_exec --serve: status $rc"
		st=$(cat "$SROCE_SHARED"/mpi-exec/st.* 2>/dev/null) || fail "mpirun asked for nothing"
		echo "what guest a's mpirun ran here exited with: $st"
		cat "$SROCE_SHARED"/mpi-exec/out.* 2>/dev/null || :
		[ "$(printf '%s\n' "$st" | sort -u)" = 0 ] || fail "a command of mpirun failed here"
		st=$(tb_get "$name.mpirun" 10) || fail "guest a did not say how mpirun ended"
		[ "$st" = 0 ] || fail "mpirun in guest a: exit status $st"
		return 0
	fi
	tb_barrier "$name.serving" 60 || fail "guest b does not serve mpi_exec"
	echo "mpirun ${x[*]} ..."
	timeout -k 5 $((RT_LIMIT * SLOW)) mpirun --allow-run-as-root -np 2 \
		--host "$SROCE_IP4:1,$SROCE_PEER_IP4:1" \
		--mca plm_rsh_agent "$MPI_EXEC" --mca pml ucx --mca btl '^openib' \
		"${x[@]}" "$MPI_CHECK" >"$mlog" 2>&1 || rc=$?
	# (the directory is there even if mpirun never ran its agent)
	mkdir -p "$SROCE_SHARED/mpi-exec"
	: >"$SROCE_SHARED/mpi-exec/stop"
	tb_put "$name.mpirun" "$rc"
	tb_barrier "$name.done" $((60 + RT_LIMIT)) || fail "guest b did not finish"
	cat "$mlog"
	[ "$rc" = 0 ] || fail "mpirun: exit status $rc"
	grep -q '^rank 0 of 2 .* role a$' "$mlog" || fail "rank 0 did not run in guest a"
	grep -q '^rank 1 of 2 .* role b$' "$mlog" || fail "rank 1 did not run in guest b"
	for v in 8:10 4096:10 65536:10 1048576:3; do
		grep -q "^pingpong ${v%:*} bytes: ${v#*:} round trips checked" "$mlog" ||
			fail "no ${v#*:} checked round trips of ${v%:*} bytes"
	done
	for v in 0 1; do
		grep -q "^rank $v: allreduce of 131072 int64 (sum, max) checked" "$mlog" ||
			fail "rank $v did not check its allreduce"
	done
	# each rank's endpoint to the other rank (the one without UCX's
	# self/memory transport, which is the rank's own) is led by a verbs
	# transport of its guest's device (under --netns guest b's is another
	# name); nothing over TCP
	mpi_lanes "$mlog" "$DEV" "$SROCE_PEER_RDMA_DEV"
	! grep -q 'ep_cfg.*tag(.*tcp/' "$mlog" || fail "a UCX tag lane over TCP"
}

# mpi_lanes LOG DEV PEER_DEV: UCX's tag lanes to a peer in LOG are each led
# by a verbs transport of DEV or PEER_DEV, at least one per rank
mpi_lanes() {
	local lanes mine theirs
	lanes=$(grep 'ep_cfg\[[0-9]*\]: tag(' "$1" | grep -v 'tag(self/')
	mine=$(grep -c "tag([a-z]*_verbs/$2:1[ )]" <<<"$lanes" || :)
	theirs=$(grep -c "tag([a-z]*_verbs/$3:1[ )]" <<<"$lanes" || :)
	if [ "$2" = "$3" ]; then
		[ "$mine" -ge 2 ] || fail "$mine UCX tag lanes to a peer over $2's verbs transports, expected 2 or more"
	else
		[ "$mine" -ge 1 ] || fail "no UCX tag lane to a peer over $2's verbs transports"
		[ "$theirs" -ge 1 ] || fail "no UCX tag lane to a peer over $3's verbs transports"
	fi
	! grep -v "tag([a-z]*_verbs/\($2\|$3\):1[ )]" <<<"$lanes" ||
		fail "a UCX tag lane to a peer not led by $2 or $3 (above)"
}

t_mpi_pml_ucx()			{ RT_LIMIT=150 mw_informational mpi_case; }
t_mpi_pml_ucx_workaround()	{ RT_LIMIT=150 mw_informational mpi_case "${MW_UCX_WORKAROUND[@]}"; }

# ---- libfabric ----------------------------------------------------------------

# _fi_check LOG ITERS: fi_pingpong's table: one row per size from 64 B to
# 1 MiB (its 'all'), each with ITERS sent and acknowledged.
_fi_check() {
	awk -v iters="$2" '
		$1 ~ /^(64|256|1k|4k|64k|1m)$/ && NF == 8 {
			if ($2 != iters || $3 != "=" iters) { print "bad row: " $0; bad = 1 }
			seen[$1] = 1
		}
		END {
			split("64 256 1k 4k 64k 1m", want, " ")
			for (i in want) if (!(want[i] in seen)) { print "no row for " want[i]; bad = 1 }
			exit bad
		}' "$1"
}

# fi_case PORTSLOT PROVIDER EP [VAR=VALUE...]: fi_pingpong -c (every
# message's bytes checked) over all its sizes between the guests.
fi_case() {
	local port name=$KTAP_CASE prov=$2 ep=$3 iters=5 args
	port=$(port_of "$1")
	shift 3
	rt_sides_pair ipv4 || fail "no GID"
	args=(fi_pingpong -p "$prov" -e "$ep" -c -I "$iters")
	RT_LIMIT=120 rt_run "$name" "$port" _rt_ready_tcp \
		-- env "$@" "${args[@]}" -B "$port" \
		-- env "$@" "${args[@]}" -P "$port" "$RT_CONNECT" ||
		{
			rt_is_server && rt_show "$RT_OUT/$name.server" "server: $(_rt_status server "$RT_SRV_RC")"
			rt_is_client && rt_show "$RT_OUT/$name.client" "client: $(_rt_status client "$RT_CLI_RC")"
			fail "fi_pingpong -p '$prov' -e $ep"
		}
	if rt_is_client; then
		_fi_check "$RT_OUT/$name.client" "$iters" ||
			{ rt_show "$RT_OUT/$name.client" client; fail "fi_pingpong's table"; }
		cat "$RT_OUT/$name.client"
	fi
}

t_fi_verbs_msg()		{ mw_informational fi_case 10 verbs msg; }
t_fi_verbs_rxm_rdm()		{ mw_informational fi_case 11 'verbs;ofi_rxm' rdm; }
t_fi_verbs_rxm_rdm_workaround()	{ mw_informational fi_case 12 'verbs;ofi_rxm' rdm "${MW_FI_WORKAROUND[@]}"; }

# sroce needs no workaround; rdma_rxe's cases run without and with them.
# Arguments name a subset of the cases (the first one is always run).
CASES=(
	t_gids_and_wire
	t_ucx_rc_ud
	t_ucx_ud
	t_mpi_pml_ucx
	t_fi_verbs_msg
	t_fi_verbs_rxm_rdm
)
[ "$SROCE_DRIVER" = sroce ] || CASES+=(
	t_ucx_rc_ud_workaround
	t_ucx_ud_workaround
	t_mpi_pml_ucx_workaround
	t_fi_verbs_rxm_rdm_workaround
)
if [ $# -gt 0 ]; then
	ktap_main t_gids_and_wire "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
