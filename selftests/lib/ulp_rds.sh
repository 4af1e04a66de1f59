# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# RDS over RDMA case of selftests/ulp.sh (sourced by it; it uses its DEV
# and ulp_resources_save/ulp_resources_back, and lib/rdma_tools.sh's
# rt_port_counter).

# ---- RDS over RDMA (rds_rdma) ---------------------------------------------
# Reliable Datagram Sockets on the IB transport: both guests load rds_rdma,
# which adds DEV and listens through rdma_cm on RDS_CM_PORT.  Guest a runs
# sroce_rds_ping's echo server on an RDS socket bound to its IPv4 address,
# guest b its client (SO_RDS_TRANSPORT RDS_TRANS_IB set before bind and
# read back after it, in both), RDS_ROUNDS rounds of one message of each of
# RDS_SIZES bytes, each with a pattern of its own, every echoed byte
# checked.  RDS/IB carries a message in SENDs of 4 KiB fragments; the
# connection it made stays up until the module goes.

RDS_PING=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_rds_ping
RDS_PORT=4000		# the server socket's RDS port (RDS ports are RDS's own)
RDS_CM_PORT=18634	# rds_rdma's rdma_cm port for IPv4 peers (RDS_PORT)
RDS_ROUNDS=10
RDS_SIZES="1 1000 8000 65536"
RDS_RUN=/tmp/sroce-rds

# rds_messages: how many messages the client sends
rds_messages() {
	local s n=0
	for s in $RDS_SIZES; do n=$((n + 1)); done
	echo $((n * RDS_ROUNDS))
}

# rds_min_pkts: the fewest packets that carry every message one way (at
# most 4096 payload bytes a packet)
rds_min_pkts() {
	local s n=0
	for s in $RDS_SIZES; do n=$((n + (s + 4095) / 4096)); done
	echo $((n * RDS_ROUNDS))
}

# rds_conn: the rdma_cm ID of rds_rdma on DEV connected between the two
# guests' IPv4 addresses, as the rdma tool shows it
rds_conn() {
	rdma resource show cm_id | grep -F "link $DEV/1 " |
		grep -F 'comm [rds_rdma]' | grep 'state CONNECT ' |
		grep -F "$SROCE_IP4:" | grep -m1 -F "$SROCE_PEER_IP4:"
}

# rds_rose NAME BEFORE: port counter NAME rose by at least rds_min_pkts
rds_rose() {
	local now min
	now=$(rt_port_counter "$DEV" "$1") || fail "no port counter $1 on $DEV"
	min=$(rds_min_pkts)
	echo "$1 +$((now - $2))"
	[ $((now - $2)) -ge "$min" ] ||
		fail "$1 rose by $((now - $2)), fewer than the $min packets of the messages"
}

# Guest a's side of t_rds_ping: the echo server, its pid in
# RDS_RUN/server.pid once it is bound
rds_server_start() {
	"$RDS_PING" server -c "$(rds_messages)" -t $((60 * SLOW)) \
		"$SROCE_IP4" $RDS_PORT >"$RDS_RUN/server.log" 2>&1 </dev/null &
	echo $! >"$RDS_RUN/server.pid"
	wait_until 30 'grep -q "^bound " "$RDS_RUN/server.log" ||
		! kill -0 $(cat "$RDS_RUN/server.pid") 2>/dev/null' || :
	grep -q "^bound " "$RDS_RUN/server.log" ||
		fail "the RDS server did not bind: $(cat "$RDS_RUN/server.log")"
}

# Guest a's server, when guest b's client has finished: it must have
# echoed every message and ended (it is killed if it has not)
rds_server_end() {
	local pid rc=0
	read -r pid <"$RDS_RUN/server.pid" || fail "no pid of the RDS server"
	wait_until 10 '! kill -0 $pid 2>/dev/null' || kill "$pid" 2>/dev/null || :
	wait "$pid" || rc=$?
	cat "$RDS_RUN/server.log"
	[ "$rc" = 0 ] || fail "the RDS echo server exited with status $rc"
}

# rds_unload QPN: rmmod rds_rdma rds, within a time limit.  RDS/IB's
# connection shutdown (rds_ib_conn_path_shutdown) first waits until its QP's
# receives have completed, flushed, which it learns from its receive CQ,
# armed for solicited events only (an unsuccessful completion is to raise
# one too, ibv_req_notify_cq(3)); on a device that raises none for them,
# rmmod waits for good unless RDS polls its CQs while it waits, as Debian's
# 6.1 does once a second ("net/rds: Don't sleep inside
# rds_ib_conn_path_shutdown") and 6.12 does not.
rds_unload() {
	local pid f
	rmmod rds_rdma rds &
	pid=$!
	if ! wait_until 60 '! kill -0 $pid 2>/dev/null'; then
		echo "QP $1: $(rdma resource show qp link "$DEV/1" lqpn "$1")"
		[ ! -r /sys/kernel/debug/sroce/qps ] ||
			grep " qpn $1 " /sys/kernel/debug/sroce/qps || :
		for f in /proc/[0-9]*/stack; do
			grep -q rds_ib_conn_path_shutdown "$f" 2>/dev/null || continue
			echo "${f%/stack}: $(tr '\n' ' ' <"$f")"
		done
		fail "rmmod rds_rdma rds still waits after $((60 * SLOW)) s"
	fi
	wait "$pid" || fail "rmmod rds_rdma rds failed"
	[ ! -d /sys/module/rds_rdma ] && [ ! -d /sys/module/rds ] ||
		fail "rds_rdma or rds still loaded"
}

# rds_teardown_hangs: this kernel's RDS/IB waits for that event without
# polling (6.12), and rdma_rxe does not raise it for a flushed receive
# (sroce does: a completion in error is solicited, kernel/obj/cq.c):
# rmmod rds_rdma, and the link delete of t_teardown_clean, would hang.
# The case needs both guests, so a guest whose peer has rdma_rxe skips it
# too (both run the same kernel).  RDS_ANY_KERNEL=1 (scripts/testbed -e)
# runs the case anyway.
rds_teardown_hangs() {
	[ -z "${RDS_ANY_KERNEL:-}" ] || return 1
	[ "$SROCE_DRIVER" = rdma_rxe ] ||
		[ "${SROCE_PEER_DRIVER:-}" = rdma_rxe ] || return 1
	case $(uname -r) in 6.1.*) return 1 ;; esac
	return 0
}

t_rds_ping() {
	local rc=0 s0 r0 conn qpn qp
	! rds_teardown_hangs ||
		skip "$(uname -r)'s RDS/IB hangs in its connection shutdown over rdma_rxe (here or in the peer): no completion event for flushed receives on its solicited-armed CQ (testing.md)"
	# Debian's kernels carry it; the debug kernel's small config does not
	modinfo rds_rdma >/dev/null 2>&1 || skip "$(uname -r) has no rds_rdma module"
	[ -x "$RDS_PING" ] || fail "$RDS_PING is not built (make userspace)"
	mkdir -p "$RDS_RUN"
	ulp_resources_save
	modprobe rds_rdma || fail "modprobe rds_rdma"
	wait_until 30 'rdma resource show cm_id | grep -F "comm [rds_rdma]" |
		grep -q "state LISTEN .*:$RDS_CM_PORT "' ||
		fail "no rdma_cm listener of rds_rdma on port $RDS_CM_PORT: $(rdma resource show cm_id)"
	s0=$(rt_port_counter "$DEV" sent_pkts) || fail "no port counter sent_pkts on $DEV"
	r0=$(rt_port_counter "$DEV" rcvd_pkts) || fail "no port counter rcvd_pkts on $DEV"
	[ "$SROCE_ROLE" = b ] || rds_server_start
	tb_barrier "$KTAP_CASE.up" 120 || fail "the peer did not get here"
	if [ "$SROCE_ROLE" = b ]; then
		timeout -s KILL $((300 * SLOW)) "$RDS_PING" client \
			-n $RDS_ROUNDS -s "${RDS_SIZES// /,}" -t $((60 * SLOW)) \
			"$SROCE_IP4" "$SROCE_PEER_IP4" $RDS_PORT || rc=$?
	fi
	tb_barrier "$KTAP_CASE" 400 || fail "the peer did not get here"
	[ "$SROCE_ROLE" = b ] || rds_server_end
	[ "$rc" = 0 ] || fail "the RDS ping failed (exit status $rc)"

	# the messages crossed DEV: RDS's connection is an rdma_cm ID of
	# rds_rdma there, its QP an RC QP of DEV, and the port counted them
	conn=$(rds_conn) || fail "no connected rdma_cm ID of rds_rdma on $DEV: $(rdma resource show cm_id)"
	echo "RDS connection: $conn"
	qpn=$(sed -n 's/.* lqpn \([0-9]*\) .*/\1/p' <<<"$conn")
	[ -n "$qpn" ] || fail "the RDS connection has no QP"
	qp=$(rdma resource show qp link "$DEV/1" lqpn "$qpn")
	echo "its QP: $qp"
	expect_match "$qp" " type RC state RTS " "the RDS connection's QP"
	rds_rose sent_pkts "$s0"
	rds_rose rcvd_pkts "$r0"
	# the first guest to unload rds_rdma drops the connection under the
	# other's checks above, whose RDS then reconnects (a cm ID in CONNECT
	# with its QP in INIT, rejected until the peer loads RDS again)
	tb_barrier "$KTAP_CASE.checked" 120 || fail "the peer did not get here"

	rds_unload "$qpn"
	! rdma resource show cm_id | grep -F 'comm [rds_rdma]' ||
		fail "rdma_cm IDs of rds_rdma left"
	[ -z "$(rdma resource show qp link "$DEV/1" lqpn "$qpn")" ] ||
		fail "the RDS connection's QP $qpn is left"
	ulp_resources_back
}
