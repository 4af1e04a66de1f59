#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two guests on one wire, each with an sroce device set up by the test bed
# (selftests/run makes them two network namespaces of one guest on a veth
# pair, scripts/testbed --netns, where role b deletes its device before the
# verbs cases: t_netns_peer_leaves): both come up ACTIVE with GIDs for
# their addresses, see each other over the wire, and datagrams to UDP port 4791 that no QP consumes (garbage, RoCE v2
# packets with a bad ICRC or for a QP that does not exist, over the wire and
# through the loopback device) are dropped and counted by reason, not lost
# silently.  QPs destroyed and created again while the peer floods their
# numbers and unprivileged and root users dump them with `rdma res`, and
# which of the dump's details an unprivileged user sees.  XRC between the
# guests: ibv_xsrq_pingpong's server and several clients sharing one XRC
# domain, each with an XRC SRQ of its own.  1000 RC QPs in
# each guest, connected pairwise between them, all moving verified data
# (an RDMA WRITE and a SEND each way) at once, every object count back
# afterwards.  100000 malformed and adversarial datagrams (sroce_inject) at
# guest a's device while live RC, UC and UD traffic runs between the
# guests: each counted under exactly the reason predicted, the traffic
# undisturbed (as namespaces only: see CASES).  Then the verbs-level
# GoogleTest cases (userspace/tests/device; all but the SQ poller's, which
# loopback.sh runs) run against guest a's device: they use one device over
# its own GID, so guest b, whose device is the same driver on the same
# kernel, lists them and skips each as one-sided (selftests/run counts each
# once), and stays on the wire until guest a is done.  A case whose
# assertions are guest a's (the receiver counts the drops) is one where
# guest b asserts its own part, its sends, or skips as one-sided.  Emits
# KTAP.

. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/gid.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
SYS=/sys/class/infiniband
DROPS=/sys/kernel/debug/sroce/rx_drops
DATAGRAMS=20
PACKETS=10
NO_QPN=0xabcdef		# above every QP number sroce hands out
TESTS=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests
LIFETIME=$TESTS/sroce_qp_lifetime
ROCE_SEND=$TESTS/sroce_roce_send	# hand-made RoCE v2 packets
CHURN_ITERATIONS=${SROCE_CHURN_ITERATIONS:-5000}
CHURN_SECONDS=${SROCE_CHURN_SECONDS:-30}
CHURN_QPNS=2-7		# where the churning QPs are (lowest free number first)
# rdma as a user without privileges
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
PEER=a
[ "$SROCE_ROLE" = a ] && PEER=b
# the live PSNs and ring positions of the driver details
PRIV_FIELDS="sq_comp sq_cur sq_fetched sq_producer req_psn req_una
	req_snd_max resp_epsn resp_msn rq_cons rq_producer"

drops() {	# REASON: the rx_drops count of REASON
	awk -v r="$1" '$1 == r { print $2 }' "$DROPS"
}

# expect_drops SECONDS REASON BEFORE N: the count of REASON grows from BEFORE
# by exactly N within SECONDS.
expect_drops() {
	local reason=$2 before=$3 n=$4
	wait_until "$1" "[ \$((\$(drops $reason) - $before)) -ge $n ]" ||
		fail "$reason: counted $(($(drops "$reason") - before)) drops, expected $n"
	expect_eq "$(($(drops "$reason") - before))" "$n" "$reason drops"
	echo "$reason drops: $before -> $(drops "$reason")"
}

t_port_active() {
	tb_wait_port_active "$DEV" 30 || fail "$DEV not ACTIVE"
	rdma link show "$DEV/1"
	ibv_devinfo -d "$DEV"
	ibv_devinfo -d "$DEV" | grep -Eq "state:[[:space:]]+PORT_ACTIVE" || fail "ibv_devinfo: not PORT_ACTIVE"
}

t_gids_for_own_addresses() {
	has_gid "$DEV" "$SROCE_IP4" || fail "no RoCE v2 GID for $SROCE_IP4"
	has_gid "$DEV" "$SROCE_IP6" || fail "no RoCE v2 GID for $SROCE_IP6"
}

t_distinct_node_guids() {
	cat "$SYS/$DEV/node_guid" >"$SROCE_SHARED/guid.$SROCE_ROLE"
	tb_barrier guids 60 || fail "peer never published its GUID"
	local peer=a
	[ "$SROCE_ROLE" = a ] && peer=b
	[ -s "$SROCE_SHARED/guid.$peer" ] || fail "no GUID from peer"
	[ "$(cat "$SROCE_SHARED/guid.$peer")" != "$(cat "$SYS/$DEV/node_guid")" ] ||
		fail "both guests have the same node GUID"
}

t_wire_reaches_peer() {
	ping -c 2 -W $((5 * SLOW)) "$SROCE_PEER_IP4" || fail "IPv4 ping to $SROCE_PEER_IP4"
	ping -6 -c 2 -W $((5 * SLOW)) "$SROCE_PEER_IP6" || fail "IPv6 ping to $SROCE_PEER_IP6"
}

# udp_4791 ADDR TEXT: one datagram to port 4791 of ADDR, or the case fails
udp_4791() {
	printf '%s' "$2" >"/dev/udp/$1/4791" || fail "cannot send to $1 port 4791"
}

# Guest b sends datagrams to port 4791 that are not RoCE v2 packets: too
# short for a BTH and an ICRC (runt), or long enough but without a valid
# ICRC (bad_icrc).  Guest a must count each one; guest b asserts that it
# sent them all.
t_garbage_datagrams_counted() {
	local runt bad i sent=0
	runt=$(drops runt)
	bad=$(drops bad_icrc)
	tb_barrier garbage-before 60 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		for i in $(seq $DATAGRAMS); do
			udp_4791 "$SROCE_PEER_IP4" "not a RoCE packet $i"
			udp_4791 "$SROCE_PEER_IP6" "not a RoCE packet $i"
			udp_4791 "$SROCE_PEER_IP4" "runt $i"
			udp_4791 "$SROCE_PEER_IP6" "runt $i"
			sent=$((sent + 4))
		done
		expect_eq "$sent" $((4 * DATAGRAMS)) "datagrams sent"
	fi
	tb_barrier garbage-sent 60 || fail "barrier"
	[ "$SROCE_ROLE" = a ] || return 0
	expect_drops 30 runt "$runt" $((2 * DATAGRAMS))
	expect_drops 30 bad_icrc "$bad" $((2 * DATAGRAMS))
}

# Guest b sends real RoCE v2 packets (IPv4 and IPv6, UDP checksum 0, random
# values in the fields the ICRC does not cover) to a QP number guest a does
# not have: with a valid ICRC they reach the QP lookup (no_qp), with a
# corrupted one they do not (bad_icrc).  Guest b asserts that sroce_roce_send
# sent them all, guest a that it counted each.
t_roce_packets_counted() {
	local noqp bad
	noqp=$(drops no_qp)
	bad=$(drops bad_icrc)
	tb_barrier roce-before 60 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		"$ROCE_SEND" -n $PACKETS -q $NO_QPN \
			valid "$SROCE_IP4" "$SROCE_PEER_IP4" \
			bad-icrc "$SROCE_IP4" "$SROCE_PEER_IP4" \
			valid "$SROCE_IP6" "$SROCE_PEER_IP6" \
			bad-icrc "$SROCE_IP6" "$SROCE_PEER_IP6" ||
			fail "sroce_roce_send"
	fi
	tb_barrier roce-sent 60 || fail "barrier"
	[ "$SROCE_ROLE" = a ] || return 0
	expect_drops 30 no_qp "$noqp" $((2 * PACKETS))
	expect_drops 30 bad_icrc "$bad" $((2 * PACKETS))
}

# RoCE v2 packets guest a sends to its own addresses go through the loopback
# device; the receive path must find sroce0 by the destination address and
# count them as no_qp.  Sent to 127.0.0.1 and ::1 (addresses of lo, which has
# no sroce device) they are no_device.
t_local_roce_packets_counted() {
	only_in_guest a
	local noqp nodev
	noqp=$(drops no_qp)
	nodev=$(drops no_device)
	"$ROCE_SEND" -n $PACKETS -q $NO_QPN \
		valid "$SROCE_IP4" "$SROCE_IP4" valid "$SROCE_IP6" "$SROCE_IP6" \
		valid 127.0.0.1 127.0.0.1 valid ::1 ::1 ||
		fail "sroce_roce_send"
	expect_drops 30 no_qp "$noqp" $((2 * PACKETS))
	expect_drops 30 no_device "$nodev" $((2 * PACKETS))
}

HWC=$SYS/$DEV/ports/1/hw_counters

hwc() {		# NAME: the hw counter NAME of the device's port
	cat "$HWC/$1"
}

# The same packets as above, to guest a's own IPv4 address and to
# 127.0.0.1, counted on sroce0's port rather than module-wide: the ones for
# the device are received (rcvd_pkts, rcvd_bytes: BTH, 16 payload bytes and
# ICRC, 32 bytes each) and dropped as rx_drop_no_qp, exactly once each; the
# ones for no device move none of the device's counters.
t_hw_counters_count_drops() {
	only_in_guest a
	local noqp pkts bytes
	noqp=$(hwc rx_drop_no_qp)
	pkts=$(hwc rcvd_pkts)
	bytes=$(hwc rcvd_bytes)
	"$ROCE_SEND" -n $PACKETS -q $NO_QPN \
		valid "$SROCE_IP4" "$SROCE_IP4" valid 127.0.0.1 127.0.0.1 ||
		fail "sroce_roce_send"
	wait_until 30 "[ \$((\$(hwc rx_drop_no_qp) - $noqp)) -ge $PACKETS ]" ||
		fail "rx_drop_no_qp: $noqp -> $(hwc rx_drop_no_qp), expected +$PACKETS"
	# what no_device or a late duplicate would add, past the cache (10 ms)
	sleep "$SLOW"
	echo "rx_drop_no_qp $noqp -> $(hwc rx_drop_no_qp)," \
		"rcvd_pkts $pkts -> $(hwc rcvd_pkts), rcvd_bytes $bytes -> $(hwc rcvd_bytes)"
	expect_eq "$(($(hwc rx_drop_no_qp) - noqp))" "$PACKETS" "rx_drop_no_qp"
	[ $(($(hwc rcvd_pkts) - pkts)) -ge $PACKETS ] || fail "rcvd_pkts did not grow by $PACKETS"
	[ $(($(hwc rcvd_bytes) - bytes)) -ge $((32 * PACKETS)) ] ||
		fail "rcvd_bytes did not grow by $((32 * PACKETS))"
}

# "rdma statistic show link DEV/1" lists exactly the port's hw_counters, each
# with the value the file has: between a read of the file before and one
# after (counters only grow, and the wire may carry something meanwhile).
# The counters the admin guide documents are all there, and the packets of
# the cases before have moved some.
t_rdma_statistic_matches_hw_counters() {
	only_in_guest a
	local f name val n=0 files
	local -A before
	for f in "$HWC"/*; do
		before[${f##*/}]=$(cat "$f")
	done
	local out
	out=$(rdma statistic show link "$DEV/1") || fail "rdma statistic show link $DEV/1"
	echo "$out"
	# past the counters' cache (10 ms), so the reads below are fresh ones
	sleep "$SLOW"
	# "link sroce0/1 NAME VALUE NAME VALUE ..."
	set -- $out
	expect_eq "$1 $2" "link $DEV/1" "rdma statistic's link"
	shift 2
	while [ $# -ge 2 ]; do
		name=$1 val=$2
		shift 2
		[ -f "$HWC/$name" ] || fail "rdma statistic lists $name, $HWC has no such file"
		[ "${before[$name]}" -le "$val" ] && [ "$val" -le "$(hwc "$name")" ] ||
			fail "$name: rdma statistic says $val, the file ${before[$name]} then $(hwc "$name")"
		n=$((n + 1))
	done
	[ $# -eq 0 ] || fail "rdma statistic: stray word '$1'"
	files=$(find "$HWC" -maxdepth 1 -type f ! -name lifespan | wc -l)
	expect_eq "$n" "$files" "counters listed by rdma statistic"
	for name in sent_pkts rcvd_pkts sent_bytes rcvd_bytes rdma_sends \
		rdma_recvs duplicate_request out_of_seq_request rcvd_rnr_err \
		send_rnr_err rcvd_seq_err retry_exceeded_err \
		retry_rnr_exceeded_err completer_retry_err send_err link_downed \
		req_remote_access_errors resp_remote_access_errors \
		rx_drop_no_qp rx_drop_bad_icrc rx_drop_runt tx_err_no_route; do
		[ -f "$HWC/$name" ] || fail "no hw counter $name"
	done
	# the packets of the cases before (no QP sent any yet)
	[ "$(hwc rcvd_pkts)" -gt 0 ] && [ "$(hwc rx_drop_no_qp)" -gt 0 ] ||
		fail "no packets counted at all"
}

# res_dump_loop STOPFILE [RUNNER...]: dump every QP with the driver details,
# as text and JSON, until STOPFILE exists (at most 1000 times); prints the
# number of dumps and fails if one did.
res_dump_loop() {
	local stop=$1 n=0
	shift
	while [ ! -e "$stop" ] && [ $n -lt 1000 ]; do
		"$@" rdma -dd res show qp >/dev/null || return 1
		"$@" rdma -j -dd res show qp >/dev/null || return 1
		n=$((n + 1))
	done
	echo "$n dumps ${*:-as root}"
}

# flood_loop STOPFILE: valid RC SEND-only packets from this guest to the
# peer's churning QP numbers until STOPFILE exists (at most 200 rounds).
flood_loop() {
	local n=0
	while [ ! -e "$1" ] && [ $n -lt 200 ]; do
		"$ROCE_SEND" -n 500 -q $CHURN_QPNS \
			valid "$SROCE_IP4" "$SROCE_PEER_IP4" >/dev/null || return 1
		n=$((n + 1))
	done
	echo "flooded the peer with $((n * 500)) packets"
}

# Each guest destroys and creates RC, UC and UD QPs with sends, receives and
# retransmission timers in flight (kernel/dp/exec.c, "Lifetime"), for
# CHURN_SECONDS, while the other floods the numbers they get - so received
# packets, transmit completions and timers wake QPs being destroyed - and
# while root and an unprivileged user dump them with their driver details
# (kernel/obj/res.c, the dump racing destroy_qp).  Nothing may complain (the test
# bed reads the kernel log), every dump succeeds, the flood reached live QPs
# (RC packets to the UC and UD QPs: wrong_transport) and the QPs and AH
# destinations are all gone afterwards.
t_qp_churn_under_flood() {
	local stop=/tmp/sroce-churn.stop peer_done=$SROCE_SHARED/churn.$PEER
	local qps ahd wrong rc=0 p pids=()
	rm -f "$stop" "$SROCE_SHARED/churn.$SROCE_ROLE"
	qps=$(awk '$1 == "qps" { print $2 }' /sys/kernel/debug/sroce/objects)
	ahd=$(awk '$1 == "ah_dests" { print $2 }' /sys/kernel/debug/sroce/objects)
	wrong=$(drops wrong_transport)
	tb_barrier "$KTAP_CASE.start" 60 || fail "barrier"
	res_dump_loop "$stop" >/tmp/sroce-dump.root 2>&1 &
	pids+=($!)
	res_dump_loop "$stop" "${NOBODY[@]}" >/tmp/sroce-dump.nobody 2>&1 &
	pids+=($!)
	flood_loop "$peer_done" >/tmp/sroce-flood 2>&1 &
	pids+=($!)
	"$LIFETIME" churn "$SROCE_IP4" "$SROCE_PEER_IP4" "$CHURN_ITERATIONS" \
		$CHURN_SECONDS || rc=1
	touch "$stop" "$SROCE_SHARED/churn.$SROCE_ROLE"
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	cat /tmp/sroce-dump.root /tmp/sroce-dump.nobody /tmp/sroce-flood
	[ $rc = 0 ] || fail "churn, a dump or the flood failed"
	tb_barrier "$KTAP_CASE.end" 180 || fail "barrier"
	cat /sys/kernel/debug/sroce/objects "$DROPS"
	[ "$(drops wrong_transport)" -gt "$wrong" ] ||
		fail "no flood packet reached a live QP"
	expect_eq "$(awk '$1 == "qps" { print $2 }' /sys/kernel/debug/sroce/objects)" \
		"$qps" "live QPs after the churn"
	expect_eq "$(awk '$1 == "ah_dests" { print $2 }' /sys/kernel/debug/sroce/objects)" \
		"$ahd" "live AH destinations after the churn"
}

# The device still carries verified traffic between the guests afterwards.
t_traffic_after_churn() {
	rt_pp_pair ibv_rc_pingpong 18950 ipv4 -c -n 200
}

XSRQ_PORT=18980
XSRQ_CLIENTS=${SROCE_XSRQ_CLIENTS:-4}
XSRQ_ITERS=100
XSRQ_SIZE=4097		# 5 packets at path MTU 1024

# _xsrq_lines FILE local|remote: "RECV_QPN SRQN GID" of each address line
# of that kind ibv_xsrq_pingpong printed ("   local: LID 0000, QPN RECV
# 000012 SEND 000013, PSN 3a4b5c, SRQN 000001, GID ::ffff:10.0.2.1")
_xsrq_lines() {
	awk -v w="$2:" '$1 == w && $4 == "QPN" && $11 == "SRQN" {
		s = $12; sub(/,$/, "", s); print $6, s, $NF }' "$1"
}

# _xsrq_check FILE SIDE N: SIDE's output has N local and N remote address
# lines with this guest's and the peer's GIDs and SRQ numbers other than 0,
# ends with "success" and has no complaint of the tool's; prints what is
# wrong and returns 1 if anything is.
_xsrq_check() {
	local f=$1 side=$2 n=$3 own peer kind want lines=() line q s g e=''
	own=$(rt_gid_text "$SROCE_IP4")
	peer=$(rt_gid_text "$SROCE_PEER_IP4")
	for kind in local remote; do
		want=$own
		[ "$kind" = local ] || want=$peer
		mapfile -t lines < <(_xsrq_lines "$f" "$kind")
		[ "${#lines[@]}" = "$n" ] ||
			e+="$side: ${#lines[@]} $kind address lines, expected $n"$'\n'
		for line in "${lines[@]}"; do
			read -r q s g <<<"$line"
			[ "$g" = "$want" ] || e+="$side: $kind GID $g, expected $want"$'\n'
			[ "$s" != 000000 ] || e+="$side: $kind SRQN 0"$'\n'
		done
	done
	[ "$(tail -n 1 "$f")" = success ] || e+="$side: no \"success\" at the end"$'\n'
	! grep -E "Unable to find qp|Work completion error|Couldn't|Failed" "$f" ||
		e+="$side: the tool complained (above)"$'\n'
	[ -z "$e" ] && return 0
	printf '%s' "$e"
	return 1
}

# _xsrq_distinct N VALUES...: are there exactly N distinct VALUES?
_xsrq_distinct() {
	local n=$1
	shift
	[ "$(printf '%s\n' "$@" | sort -u | wc -l)" = "$n" ]
}

# XRC between the guests with rdma-core's ibv_xsrq_pingpong: the server in
# guest a (-c XSRQ_CLIENTS: one XRC SRQ, and an XRC send and an XRC receive
# QP per client), the clients in guest b, XSRQ_CLIENTS processes at once,
# each with its own XRC SRQ in the one XRC domain they all open through the
# same file (/tmp/xrc_domain).  The server sends to each client round robin
# over the send QPs of all clients in turn: a message to client i arrives
# at the receive QP of client j, which puts it into client i's SRQ, so it
# only arrives if the clients' processes share the domain.  XSRQ_ITERS
# messages of XSRQ_SIZE bytes (several packets) each way per client, every
# one waited for on the receiving SRQ's CQ; a receive completion in error
# ends the tool with a failure, and a lost message leaves it waiting until
# it is killed.  Each side asserts its processes' exit status 0, the
# address lines each printed (its own and the peer's GIDs, SRQ numbers
# other than 0), "success" and no complaint; the server that its N clients
# had N distinct SRQs and receive QPs and its own SRQ was one; the clients
# that they had N distinct SRQs and all sent to the server's one SRQ through
# N distinct receive QPs; and each side's port counted at least the
# messages and packets it received (rdma_recvs, rcvd_pkts).
t_xsrq_pingpong() {
	local name=$KTAP_CASE out donef sdonef other pid pids=() sts=() i st rc=0
	local recvs pkts args loc=() rem=() line q s g srqns=() qpns=() n deadline
	command -v ibv_xsrq_pingpong >/dev/null || fail "no ibv_xsrq_pingpong (ibverbs-utils)"
	rt_sides_pair ipv4 || fail "no RoCE v2 GID for $SROCE_IP4"
	out=$RT_OUT/$name
	donef=$SROCE_SHARED/rt.$name.done		# the clients are done
	sdonef=$donef.server				# the server is done
	rm -f "$out".* "$donef" "$sdonef"
	recvs=$(rt_port_counter "$DEV" rdma_recvs) || fail "no rdma_recvs counter"
	pkts=$(rt_port_counter "$DEV" rcvd_pkts) || fail "no rcvd_pkts counter"
	args=(ibv_xsrq_pingpong -d "$DEV" -p "$XSRQ_PORT" -m 1024 -s "$XSRQ_SIZE" -n "$XSRQ_ITERS")
	deadline=$((SECONDS + RT_LIMIT * SLOW))
	if [ "$SROCE_ROLE" = a ]; then
		args+=(-g "$RT_S_GID" -c "$XSRQ_CLIENTS")
		echo "server: ${args[*]}"
		stdbuf -oL "${args[@]}" >"$out.server" 2>&1 &
		pid=$!
		_rt_wait_ready _rt_ready_tcp "$XSRQ_PORT" "$pid" 60 || rc=1
	fi
	# passed even if the server failed: the clients then fail at once
	tb_barrier "$name.ready" 180 || fail "barrier"
	if [ "$SROCE_ROLE" = b ]; then
		args+=(-g "$RT_C_GID" "$RT_CONNECT")
		echo "clients: $XSRQ_CLIENTS x ${args[*]}"
		for ((i = 1; i <= XSRQ_CLIENTS; i++)); do
			stdbuf -oL "${args[@]}" >"$out.client$i" 2>&1 &
			pids+=($!)
		done
		printf -v other '[ -e %q ]' "$sdonef"
		for i in "${!pids[@]}"; do
			st=0
			_rt_wait_tool "${pids[$i]}" "$deadline" "$other" || st=$?
			sts+=("$st")
		done
		: >"$donef"
	else
		st=0
		if [ "$rc" = 0 ]; then
			printf -v other '[ -e %q ]' "$donef"
			_rt_wait_tool "$pid" "$deadline" "$other" || st=$?
		else
			_rt_kill "$pid"
			wait "$pid" 2>/dev/null || :
			st=125
		fi
		sts=("$st")
		: >"$sdonef"
	fi

	rc=0
	if [ "$SROCE_ROLE" = a ]; then
		if [ "${sts[0]}" != 0 ]; then
			_rt_status server "${sts[0]}"
			rc=1
		fi
		_xsrq_check "$out.server" server "$XSRQ_CLIENTS" || rc=1
		mapfile -t loc < <(_xsrq_lines "$out.server" local)
		mapfile -t rem < <(_xsrq_lines "$out.server" remote)
		for line in "${loc[@]}"; do
			read -r q s g <<<"$line"
			srqns+=("$s")
		done
		_xsrq_distinct 1 "${srqns[@]}" ||
			{ echo "server: its one SRQ printed with several numbers: ${srqns[*]}"; rc=1; }
		srqns=()
		for line in "${rem[@]}"; do
			read -r q s g <<<"$line"
			srqns+=("$s")
			qpns+=("$q")
		done
		_xsrq_distinct "$XSRQ_CLIENTS" "${srqns[@]}" ||
			{ echo "server: the clients' SRQ numbers are not $XSRQ_CLIENTS distinct ones: ${srqns[*]}"; rc=1; }
		_xsrq_distinct "$XSRQ_CLIENTS" "${qpns[@]}" ||
			{ echo "server: the clients' receive QPs are not $XSRQ_CLIENTS distinct ones: ${qpns[*]}"; rc=1; }
		echo "server: the clients' SRQs ${srqns[*]}, their receive QPs ${qpns[*]}"
		[ "$rc" = 0 ] || rt_show "$out.server" "server output"
	else
		for ((i = 1; i <= XSRQ_CLIENTS; i++)); do
			st=${sts[$((i - 1))]}
			if [ "$st" != 0 ] || ! _xsrq_check "$out.client$i" "client $i" 1; then
				[ "$st" = 0 ] || _rt_status "client $i" "$st"
				rt_show "$out.client$i" "client $i output"
				rc=1
			fi
			read -r q s g < <(_xsrq_lines "$out.client$i" local) || :
			srqns+=("$s")
			read -r q s g < <(_xsrq_lines "$out.client$i" remote) || :
			rem+=("$s")
			qpns+=("$q")
		done
		_xsrq_distinct "$XSRQ_CLIENTS" "${srqns[@]}" ||
			{ echo "clients: their SRQ numbers are not $XSRQ_CLIENTS distinct ones: ${srqns[*]}"; rc=1; }
		_xsrq_distinct 1 "${rem[@]}" ||
			{ echo "clients: the server's one SRQ seen with several numbers: ${rem[*]}"; rc=1; }
		_xsrq_distinct "$XSRQ_CLIENTS" "${qpns[@]}" ||
			{ echo "clients: the server's receive QPs are not $XSRQ_CLIENTS distinct ones: ${qpns[*]}"; rc=1; }
		echo "clients: their SRQs ${srqns[*]}, the server's SRQ ${rem[0]:-?}, its receive QPs ${qpns[*]}"
	fi
	# every message of the run received on this side's port: the server's
	# from all clients, the clients' from the server
	n=$((XSRQ_CLIENTS * XSRQ_ITERS))
	recvs=$(($(rt_port_counter "$DEV" rdma_recvs) - recvs))
	pkts=$(($(rt_port_counter "$DEV" rcvd_pkts) - pkts))
	echo "$SROCE_ROLE: rdma_recvs +$recvs, rcvd_pkts +$pkts ($n messages of $XSRQ_SIZE bytes)"
	[ "$recvs" -ge "$n" ] || { echo "rdma_recvs grew by $recvs, expected at least $n"; rc=1; }
	[ "$pkts" -ge $((n * ((XSRQ_SIZE + 1023) / 1024))) ] ||
		{ echo "rcvd_pkts grew by $pkts, expected at least $((n * ((XSRQ_SIZE + 1023) / 1024)))"; rc=1; }
	[ "$rc" = 0 ] || fail "ibv_xsrq_pingpong"
	echo "$SROCE_ROLE: exit status 0, $([ "$SROCE_ROLE" = a ] && echo "$XSRQ_CLIENTS clients served" || echo "$XSRQ_CLIENTS clients"), $n messages each way"
}

SCALE=$TESTS/sroce_rc_scale
SCALE_QPS=${SROCE_SCALE_QPS:-1000}
SCALE_PORT=18970
OBJECTS=/sys/kernel/debug/sroce/objects

# SCALE_QPS (1000) RC QPs in each guest, QP i of guest a connected to QP i
# of guest b (sroce_rc_scale, userspace/tests/device/rc_scale_tool.cc:
# the server in a, the client in b), each moving an RDMA WRITE and a SEND
# of 2 KiB each way, all posted before any is polled; each side checks
# every completion and every byte it got.  Each guest asserts its side's
# success and that every object count of debugfs is back where it was
# once the tool has exited.
t_thousand_rc_qps() {
	local side=client before rc
	[ -x "$SCALE" ] || fail "no $SCALE (make userspace)"
	rt_sides_pair ipv4 || fail "no RoCE v2 GID for $SROCE_IP4"
	before=$(cat "$OBJECTS")
	# the counts are the kernel's: under --netns both sides' at once
	tb_barrier "$KTAP_CASE.before" 60 || fail "barrier"
	RT_LIMIT=240 rt_run "$KTAP_CASE" "$SCALE_PORT" _rt_ready_tcp \
		-- "$SCALE" server "$SCALE_PORT" --qps "$SCALE_QPS" \
		-- "$SCALE" client "$SROCE_PEER_IP4" "$SCALE_PORT" --qps "$SCALE_QPS" || true
	rt_is_server && side=server
	rc=${RT_SRV_RC:-}${RT_CLI_RC:-}
	rt_show "$RT_OUT/$KTAP_CASE.$side" "sroce_rc_scale $side"
	[ "$rc" = 0 ] || fail "$(_rt_status "sroce_rc_scale $side" "$rc")"
	grep -q "^sroce_rc_scale $side: ok qps=$SCALE_QPS " "$RT_OUT/$KTAP_CASE.$side" ||
		fail "no ok line from sroce_rc_scale $side"
	tb_barrier "$KTAP_CASE.after" 60 || fail "barrier"
	wait_until 10 '[ "$(cat "$OBJECTS")" = "$before" ]' ||
		fail "object counts not back: before: $(tr '\n' ' ' <<<"$before"), after: $(tr '\n' ' ' <"$OBJECTS")"
}

# has_field NAME: does the rdma output on stdin have the driver attribute
# NAME (printed drv_NAME)?
has_field() {
	grep -qE "(^|[^[:alnum:]_])(drv_)?$1([^[:alnum:]_]|\$)"
}

# The GSI QP's driver details: the live PSNs and ring positions only for
# CAP_NET_ADMIN, the rest for everyone; text and JSON.
t_res_details_need_cap_net_admin() {
	local fmt root nobody f
	for fmt in "" -j; do
		root=$(rdma $fmt -dd res show qp link "$DEV")
		nobody=$("${NOBODY[@]}" rdma $fmt -dd res show qp link "$DEV")
		printf 'root:\n%s\nnobody:\n%s\n' "$root" "$nobody"
		for f in $PRIV_FIELDS; do
			has_field "$f" <<<"$root" || fail "root does not see $f"
			! has_field "$f" <<<"$nobody" ||
				fail "an unprivileged user sees $f"
		done
		has_field tx_inflight <<<"$nobody" ||
			fail "an unprivileged user sees no driver details at all"
	done
}

# ---- t_injection_under_traffic ------------------------------------------

INJECT=$TESTS/sroce_inject
INJECT_COUNT=${SROCE_INJECT_COUNT:-100000}
# the live traffic, which runs until guest b's injection is over and
# checks every byte (userspace/tests/device/live_tool.cc)
LIVE=$TESTS/sroce_live
# RC, UC, UD servers on this port and the next two, the idle RC pingpong
# on the fourth
INJECT_PORT=18960
# the tools' outputs, in the log dir: a guest killed at its time limit
# leaves them
INJECT_OUT=${SROCE_LOGDIR:-/tmp}/inject
TRACE=/sys/kernel/tracing
# a second address of guest a, which its live QPs do not use
INJECT_ALT4=${SROCE_IP4%.*}.11
[ "$SROCE_ROLE" = a ] || INJECT_ALT4=${SROCE_PEER_IP4%.*}.11
# the live pairs: QP type, message size (UC: one packet of the 1024-byte
# path MTU, so that it is always between messages when a packet arrives)
INJECT_PP=("rc 4096" "uc 1024" "ud 512")

# peer_drop_counts: "peer_REASON COUNT" for the peer's port's rx_drop_
# counters, under scripts/testbed --netns only: its device is in this
# kernel, and debugfs's rx_drops count its drops too (its sysfs is its
# namespace's)
peer_drop_counts() {
	[ -n "${SROCE_PEER_NETNS:-}" ] || return 0
	# shellcheck disable=SC2016 # (expanded by the inner shell)
	ip netns exec "$SROCE_PEER_NETNS" sh -c 'cd "$1" && for f in rx_drop_*; do
		echo "peer_${f#rx_drop_} $(cat "$f")"; done' _ "$SYS/$SROCE_PEER_RDMA_DEV/ports/1/hw_counters"
}

# inject_counts: "REASON COUNT" for every drop reason, the port's
# rx_drop_ counters and debugfs's no_device, then debugfs's (debugfs_REASON)
# and, under --netns, the peer's port's (peer_REASON)
inject_counts() {
	local f
	for f in "$HWC"/rx_drop_*; do
		echo "${f##*/rx_drop_} $(cat "$f")"
	done
	echo "no_device $(drops no_device)"
	awk '{ print "debugfs_" $1, $2 }' "$DROPS"
	peer_drop_counts
}

# inject_field FILE WHICH FIELD: QPN or PSN (as a number) of the local or
# remote address ibv_rc_pingpong or sroce_live printed
inject_field() {
	local v
	v=$(sed -n "s/^  $2 address: .*$3 \(0x[0-9a-f]*\),.*/\1/p" "$1" | head -n 1)
	[ -n "$v" ] && echo $((v))
}

# inject_neigh add|del: guest a's addresses as permanent neighbours of
# guest b, so that no datagram waits for (or is dropped with) an unresolved
# neighbour
inject_neigh() {
	local mac a
	mac=$(ip neigh show "$SROCE_PEER_IP4" dev "$SROCE_NETDEV" | awk '{ for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1) }')
	for a in "$SROCE_PEER_IP4" "$INJECT_ALT4" "$SROCE_PEER_IP6"; do
		if [ "$1" = add ]; then
			[ -n "$mac" ] || return 1
			ip neigh replace "$a" lladdr "$mac" nud permanent dev "$SROCE_NETDEV" || return 1
		else
			ip neigh del "$a" dev "$SROCE_NETDEV" 2>/dev/null || :
		fi
	done
}

inject_cleanup() {
	local p
	for p in "$@"; do
		kill -KILL "$p" 2>/dev/null || :
	done
	echo 0 >"$TRACE/events/sroce/sroce_rx_drop/enable" 2>/dev/null || :
	echo 0 >"$TRACE/events/sroce/sroce_rx_drop/filter" 2>/dev/null || :
	if [ "$SROCE_ROLE" = a ]; then
		ip addr del "$INJECT_ALT4/24" dev "$SROCE_NETDEV" 2>/dev/null || :
	else
		inject_neigh del
	fi
}

# inject_peer_delta REASON: how much the peer's port's count of REASON
# rose (0 without --netns)
inject_peer_delta() {
	awk -v r="peer_$1" 'FNR == NR { if ($1 == r) b = $2; next }
		$1 == r { d = $2 - b } END { print d + 0 }' "$INJECT_OUT/before" "$INJECT_OUT/after"
}

# inject_stale_of QPN [FILE]: stale drops traced for QP number QPN
inject_stale_of() {
	grep -c "qpn=0x$(printf '%06x' "$1") reason=stale" "${2:-$INJECT_OUT/trace}" || :
}

# Live RC, UC and UD traffic (sroce_live, every byte checked) between the
# guests, guest a the servers, while guest b sends sroce_inject's SROCE_INJECT_COUNT
# (100000) malformed and adversarial datagrams at guest a's device, many of
# them aimed at the live QPs (userspace/tests/device/inject_gen.h), and
# prints how many of each drop reason guest a must count.  A fourth RC pair
# is connected and then left idle (its client stopped): the stale datagrams
# go there, because the live RC QP has stale drops of its own (a late
# ACK and the ACK of the retransmission it caused: the second is stale),
# which guest a tells apart by QP number in the sroce:sroce_rx_drop events.
# Guest a: every rx_drop_ counter and every debugfs rx_drops line
# (no_device included) rose by exactly the predicted number, stale by that
# plus the live RC QP's own stale drops; the idle QP's stale drops are
# exactly the predicted ones and no other QP has any; the live servers
# checked every message and answered as many as guest b's clients sent.
# Guest b: the injection went out while all live traffic was running,
# which stops only then, and its clients' checks.
t_injection_under_traffic() {
	local i tool size port gid out pids=() rc st before expect args=() r n d
	local idle_qpn live_qpn live_stale idle_stale all_stale idle_base=0 deadline bfail=
	rm -rf "$INJECT_OUT"
	mkdir -p "$INJECT_OUT"
	trap 'inject_cleanup "${pids[@]}"' EXIT
	if [ "$SROCE_ROLE" = a ]; then
		ip addr add "$INJECT_ALT4/24" dev "$SROCE_NETDEV" || fail "ip addr add $INJECT_ALT4"
		[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE" || fail "no tracefs"
		echo 0 >"$TRACE/tracing_on"
		echo >"$TRACE/trace"
		echo 4096 >"$TRACE/buffer_size_kb" || fail "cannot size the trace buffer"
		echo "reason == \"stale\" && dev == \"$DEV\"" >"$TRACE/events/sroce/sroce_rx_drop/filter" ||
			fail "cannot filter sroce:sroce_rx_drop"
		echo 1 >"$TRACE/events/sroce/sroce_rx_drop/enable"
		echo 1 >"$TRACE/tracing_on"
		inject_counts >"$INJECT_OUT/before"
		# the IP and UDP layers' own drops, before sroce sees a datagram
		NSTAT_HISTORY=$INJECT_OUT/nstat nstat -n
	fi
	gid=$(tb_gid_index "$DEV" "$SROCE_IP4") || fail "no RoCE v2 GID for $SROCE_IP4"
	if [ "$SROCE_ROLE" = b ]; then
		ping -c 1 -W $((10 * SLOW)) "$SROCE_PEER_IP4" >/dev/null &&
			ping -6 -c 1 -W $((10 * SLOW)) "$SROCE_PEER_IP6" >/dev/null ||
			fail "no path to the peer"
		inject_neigh add || fail "permanent neighbours"
	fi
	# the idle pair first
	rm -f "$INJECT_OUT/stop"
	for i in 3 0 1 2; do
		read -r tool size <<<"${INJECT_PP[$i]:-idle 4096}"
		port=$((INJECT_PORT + i))
		if [ $i = 3 ]; then
			args=(ibv_rc_pingpong -d "$DEV" -g "$gid" -p "$port" -e -s "$size" -n 1000)
			[ "$SROCE_ROLE" = a ] || args+=("$SROCE_PEER_IP4")
		elif [ "$SROCE_ROLE" = a ]; then
			args=("$LIVE" server "$tool" "$port" --size "$size")
		else
			args=("$LIVE" client "$tool" "$SROCE_PEER_IP4" "$port" --size "$size" --until "$INJECT_OUT/stop")
		fi
		if [ "$SROCE_ROLE" = a ]; then
			stdbuf -oL "${args[@]}" >"$INJECT_OUT/$tool" 2>&1 &
			pids[$i]=$!
			tb_wait_listen "$port" 60 "$!" || fail "$tool did not listen"
		else
			tb_barrier "$KTAP_CASE.$tool" 120 || fail "barrier"
			stdbuf -oL "${args[@]}" >"$INJECT_OUT/$tool" 2>&1 &
			pids[$i]=$!
			wait_until 60 "grep -q '^  remote address:' $INJECT_OUT/$tool" ||
				{ cat "$INJECT_OUT/$tool"; fail "$tool did not connect"; }
			# connected, then never again: once its first exchange is
			# acknowledged (within milliseconds), the pair is idle
			if [ "$tool" = idle ]; then
				kill -STOP "${pids[$i]}"
				sleep $((2 * SLOW))
			fi
		fi
		[ "$SROCE_ROLE" = b ] || tb_barrier "$KTAP_CASE.$tool" 120 || fail "barrier"
	done
	if [ "$SROCE_ROLE" = b ]; then
		out=$INJECT_OUT/idle
		args=(--rc-idle "$(inject_field "$out" remote QPN):$(inject_field "$out" remote PSN):$(inject_field "$out" local PSN)")
		for i in 0 1; do
			out=$INJECT_OUT/${INJECT_PP[$i]% *}
			args+=("--${INJECT_PP[$i]% *}" "$(inject_field "$out" remote QPN):$(inject_field "$out" remote PSN):$(inject_field "$out" local PSN)")
		done
		out=$INJECT_OUT/ud
		args+=(--ud "$(inject_field "$out" remote QPN):0x11111111" --alt "$INJECT_ALT4")
		tb_barrier "$KTAP_CASE.inject" 120 || fail "barrier"
		echo "$(date +%T) injecting" >>"$INJECT_OUT/progress"
		echo "sroce_inject -n $INJECT_COUNT ${args[*]} $SROCE_IP4 $SROCE_IP6 $SROCE_PEER_IP4 $SROCE_PEER_IP6"
		# a failure here is told after the barrier below, which guest a
		# would otherwise wait at for 600 s
		"$INJECT" -n "$INJECT_COUNT" "${args[@]}" "$SROCE_IP4" "$SROCE_IP6" \
			"$SROCE_PEER_IP4" "$SROCE_PEER_IP6" >"$INJECT_OUT/expect" ||
			bfail="sroce_inject failed"
		cat "$INJECT_OUT/expect"
		for i in 0 1 2; do
			kill -0 "${pids[$i]}" 2>/dev/null ||
				bfail="${bfail:+$bfail; }the ${INJECT_PP[$i]% *} traffic ended before the injection did"
		done
		# the live traffic's last messages
		: >"$INJECT_OUT/stop"
		echo "egress qdisc after the injection:"
		tc -s qdisc show dev "$SROCE_NETDEV"
		ip -s -s link show dev "$SROCE_NETDEV"
		cp "$INJECT_OUT/expect" "$SROCE_SHARED/inject.expect"
		echo "$(date +%T) injected" >>"$INJECT_OUT/progress"
	fi
	if [ "$SROCE_ROLE" = a ]; then
		# the idle pair's first exchange is over: what it dropped as
		# stale (a late ACK) is not the injection's, which starts once
		# this barrier is passed
		idle_qpn=$(inject_field "$INJECT_OUT/idle" local QPN)
		idle_base=$(inject_stale_of "$idle_qpn" "$TRACE/trace")
		tb_barrier "$KTAP_CASE.inject" 120 || fail "barrier"
	fi
	tb_barrier "$KTAP_CASE.sent" 600 || fail "barrier"
	rc=0
	# (guest b's failure is told here, after the barriers guest a waits at)
	[ -z "$bfail" ] || { echo "FAIL: $bfail" >&2; rc=1; }
	if [ "$SROCE_ROLE" = a ]; then
		expect=$SROCE_SHARED/inject.expect
		[ -s "$expect" ] || fail "no expectations from guest b"
		n=$(awk '$1 == "expect" { s += $3 } END { print s + 0 }' "$expect")
		expect_eq "$n" "$INJECT_COUNT" "datagrams expected in all"
		# every datagram counted somewhere
		echo "$(date +%T) counting" >>"$INJECT_OUT/progress"
		wait_until 120 "[ \$(inject_counts | awk 'FNR == NR { b[\$1] = \$2; next } \$1 !~ /^(debugfs|peer)_/ { s += \$2 - b[\$1] } END { print s }' $INJECT_OUT/before -) -ge $n ]" ||
			echo "not every datagram counted after 120 s"
	fi
	echo "$(date +%T) waiting for the live traffic" >>"$INJECT_OUT/progress"
	deadline=$((SECONDS + 120 * SLOW))
	for i in 0 1 2; do
		read -r tool size <<<"${INJECT_PP[$i]}"
		st=0
		_rt_wait_tool "${pids[$i]}" "$deadline" || st=$?
		out=$INJECT_OUT/$tool
		n=$(sed -n "s/^sroce_live [a-z]* $tool: messages=\([0-9]*\) .*/\1/p" "$out")
		if [ "$st" != 0 ] || [ -z "$n" ]; then
			echo "FAIL: the $tool traffic: $(_rt_status "$tool" "$st")" >&2
			cat "$out"
			rc=1
			[ "$SROCE_ROLE" = a ] || tb_put "$KTAP_CASE.$tool" failed
			continue
		fi
		grep '^sroce_live ' "$out"
		# guest b's clients tell how many messages they sent
		if [ "$SROCE_ROLE" = b ]; then
			tb_put "$KTAP_CASE.$tool" "$n"
			continue
		fi
		r=$(tb_get "$KTAP_CASE.$tool" 60)
		[ "$r" = "$n" ] ||
			{ echo "FAIL: the $tool server answered $n messages, the client sent ${r:-nothing}" >&2; rc=1; }
	done
	if [ "$SROCE_ROLE" = a ]; then
		# all quiet now (the idle pair too): a while for any late or second
		# count (the counters are cached 10 ms), then the counts and the
		# stale drops by QP
		sleep $((2 * SLOW))
		inject_counts >"$INJECT_OUT/after"
		ip -s -s link show dev "$SROCE_NETDEV"
		cat /proc/net/softnet_stat
		echo "IP and UDP counters that moved (nstat):"
		NSTAT_HISTORY=$INJECT_OUT/nstat nstat | grep -E '^(Ip|Udp|Ip6|Udp6)' || :
		echo 0 >"$TRACE/tracing_on"
		grep -v '^#' "$TRACE/trace" >"$INJECT_OUT/trace" || :
		d=$(awk '/overrun:/ { n += $2 } END { print n + 0 }' "$TRACE"/per_cpu/cpu*/stats)
		[ "$d" = 0 ] || fail "$d sroce_rx_drop events lost to a full trace buffer"
		live_qpn=$(inject_field "$INJECT_OUT/rc" local QPN)
		live_stale=$(inject_stale_of "$live_qpn")
		idle_stale=$(inject_stale_of "$idle_qpn")
		all_stale=$(grep -c 'reason=stale' "$INJECT_OUT/trace" || :)
		echo "stale drops traced: $all_stale; of the live RC QP $live_qpn: $live_stale;" \
			"of the idle one $idle_qpn: $idle_stale, $idle_base of them before the injection"
		[ "$((idle_stale - idle_base))" = \
		  "$(awk '$1 == "expect" && $2 == "stale" { print $3 }' "$expect")" ] ||
			{ echo "FAIL: the idle RC QP's stale drops during the injection are not the predicted ones" >&2; rc=1; }
		[ "$((all_stale - live_stale - idle_stale))" = 0 ] ||
			{ echo "FAIL: stale drops of other QPs" >&2; rc=1; }
		while read -r r before; do
			# the peer's own drops: no expectation, part of debugfs's
			[ "${r#peer_}" = "$r" ] || continue
			n=$(awk -v r="${r#debugfs_}" '$1 == "expect" && $2 == r { print $3 }' "$expect")
			# the RC pairs' own stale drops, told apart above
			[ "${r#debugfs_}" != stale ] || n=$((n + live_stale + idle_base))
			[ "${r#debugfs_}" = "$r" ] ||
				n=$((n + $(inject_peer_delta "${r#debugfs_}")))
			d=$(awk -v r="$r" '$1 == r { print $2 }' "$INJECT_OUT/after")
			printf '%-24s %8s -> %8s: +%s, expected +%s\n' "$r" "$before" "$d" $((d - before)) "${n:-?}"
			[ "$((d - before))" = "${n:-?}" ] || rc=1
		done <"$INJECT_OUT/before"
		[ "$rc" = 0 ] || echo "FAIL: a drop count is not the predicted one (above)" >&2
	fi
	tb_barrier "$KTAP_CASE.end" 300 || fail "barrier"
	[ "$rc" = 0 ] || fail "see above"
}

# Under scripts/testbed --netns both roles share one kernel, whose debugfs
# object counts the verbs cases take for their device's own (the limits of
# Device.EnforcesMaxPd and others): role b deletes its device before them,
# as if its guest had left, and role a sees it go while its own stays, the
# only device left.
t_netns_peer_leaves() {
	if [ "$SROCE_ROLE" = b ]; then
		td_delete_links "$SROCE_RDMA_DEV"
		return 0
	fi
	local peer=(ip netns exec "$SROCE_PEER_NETNS" rdma link show)
	wait_until $((60 * SLOW)) "! ${peer[*]} $SROCE_PEER_RDMA_DEV/1 >/dev/null 2>&1" ||
		fail "$SROCE_PEER_RDMA_DEV still there: $("${peer[@]}")"
	rdma link show "$DEV/1" | grep -q 'state ACTIVE' || fail "$DEV/1 not ACTIVE: $(rdma link show)"
	expect_eq "$(awk '$1 == "devices" { print $2 }' "$OBJECTS")" 1 "sroce devices"
}

CASES=(
	t_port_active
	t_gids_for_own_addresses
	t_distinct_node_guids
	t_wire_reaches_peer
	t_garbage_datagrams_counted
	t_roce_packets_counted
	t_local_roce_packets_counted
	t_hw_counters_count_drops
	t_rdma_statistic_matches_hw_counters
	t_qp_churn_under_flood
	t_traffic_after_churn
	t_xsrq_pingpong
	t_thousand_rc_qps
	t_res_details_need_cap_net_admin
)
# t_injection_under_traffic runs as namespaces of one guest (selftests/run
# pair), where 100 000 datagrams take 33 s (6.12) to 55 s (6.1) and every
# one was counted; between two guests only by name: over the wire they take
# longer than make check can give, and on 6.12 one datagram of 20 000 was
# once counted under no reason, not even 120 s later ("malformed", in one
# of three runs on 2026-11-27, with no error in the IP and UDP layers'
# counters; the case prints those, the NICs', the sender's qdisc and
# softnet_stat to find where).
[ -z "${SROCE_NETNS:-}" ] || CASES+=(t_injection_under_traffic t_netns_peer_leaves)
CASES+=("gtest@a:$TESTS/verbs_device_tests")
# The SQ poller's cases need a second CPU, which make check's pair guests
# do not have (one vCPU each, both kernels side by side: selftests/run):
# loopback runs them, on two, so that they count once in every run.
case ${GTEST_FILTER:-*} in
*-*) export GTEST_FILTER="$GTEST_FILTER:SqPoll.*" ;;
*) export GTEST_FILTER="${GTEST_FILTER:-*}-SqPoll.*" ;;
esac
# A case list on the command line runs just those cases, verbs_device_tests
# standing for the GoogleTest cases (GTEST_FILTER, e.g. with scripts/testbed
# -e GTEST_FILTER='*Malformed*', selects among them).
if [ $# -gt 0 ]; then
	args=()
	for a in "$@"; do
		if [ "$a" = verbs_device_tests ]; then
			[ -z "${SROCE_NETNS:-}" ] || args+=(t_netns_peer_leaves)
			a=gtest@a:$TESTS/verbs_device_tests
		fi
		args+=("$a")
	done
	ktap_main "${args[@]}" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
rc=$?
# guest b: keep the wire up under guest a's cases (bounded by the bed's limit)
if [ "$SROCE_ROLE" != a ]; then
	until tb_peer_done; do
		_tb_nap 1
	done
fi
exit "$rc"
