#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Interoperability between two guests that may run different RoCE drivers
# (selftests/run runs it with sroce in guest a and rdma_rxe in guest b, and
# the other way round, so each driver is server and client): every
# transport with the real tools - ibv_rc_pingpong, ibv_uc_pingpong,
# ibv_ud_pingpong and ibv_srq_pingpong with their data check; perftest
# SEND, RDMA WRITE, RDMA READ and atomic bandwidth and latency over RC, SEND
# over UD (bandwidth, latency) and UC, RDMA WRITE over UC; rping over rdma_cm with every buffer
# verified - over the IPv4-mapped and the IPv6 GIDs; RC recovery across
# drivers with 2 % of one side's packets lost, and transport retries used
# up in time when all of them are.  Then the packets on
# the wire: guest a captures RC, UD and rdma_cm traffic with dumpcap and
# tshark must decode every frame as RoCE v2 (BTH over UDP 4791) without a
# malformed packet or an expert warning.  Servers run in guest a, clients
# in guest b.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 2 -a sroce -b rdma_rxe selftests/interop.sh
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/interop.sh   # reference

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/netem.sh"
. "$(dirname "$0")/lib/rc_retry.sh"
. "$(dirname "$0")/lib/pmem.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
IF=${SROCE_NETDEV:?}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "interop.sh needs two guests (-n 2)" >&2; exit 2; }

# Every case has its own block of TCP ports (the tools' connection set-up)
# and rdma_cm ports, so a server left over from a failed case cannot answer
# the next one.
port_of() { echo $((21000 + 20 * $1)); }

t_gids_and_wire() { rt_pair_ready; }

# ---- the pingpongs ----------------------------------------------------------

pp() {			# TOOL PORTSLOT FAMILY ARGS...
	rt_pp_pair "$1" "$(port_of "$2")" "${@:3}"
}

t_rc_pingpong()		{ pp ibv_rc_pingpong 1 ipv4 -c -s 4097 -n 200; }
t_rc_pingpong_ipv6()	{ pp ibv_rc_pingpong 2 ipv6 -c -e -s 65536 -n 20; }
t_uc_pingpong()		{ pp ibv_uc_pingpong 3 ipv4 -c -s 4097 -n 200; }
# UD messages are single packets: at most the path MTU (1024 on a 1500-byte
# wire)
t_ud_pingpong()		{ pp ibv_ud_pingpong 4 ipv4 -c -s 1024 -n 200; }
t_ud_pingpong_ipv6()	{ pp ibv_ud_pingpong 5 ipv6 -c -s 512 -n 100; }
# 16 QPs sharing one SRQ per side; -n counts the exchanges of all QPs
t_srq_pingpong()	{ pp ibv_srq_pingpong 6 ipv4 -c -s 4097 -n 320; }

# ---- perftest ---------------------------------------------------------------

perf() {		# PORTSLOT FAMILY KIND TOOL ARGS...
	local port
	port=$(port_of "$1")
	rt_sides_pair "$2" || fail "no GID"
	shift 2
	rt_perf "$KTAP_CASE" "$port" "$@" || fail "$2 ${*:3}"
}

t_send_bw()		{ perf 10 ipv4 bw ib_send_bw -s 65536 -n 50; }
t_write_bw()		{ perf 11 ipv4 bw ib_write_bw -s 65536 -n 50; }
t_read_bw()		{ perf 12 ipv4 bw ib_read_bw -s 65536 -n 50; }
t_atomic_bw()		{ perf 13 ipv4 bw ib_atomic_bw -A FETCH_AND_ADD -n 100; }
t_atomic_cmp_swap_bw()	{ perf 14 ipv6 bw ib_atomic_bw -A CMP_AND_SWAP -n 100; }
t_send_lat()		{ perf 15 ipv4 lat ib_send_lat -s 4097 -n 100; }
t_write_lat()		{ perf 16 ipv4 lat ib_write_lat -n 100; }
t_read_lat()		{ perf 17 ipv6 lat ib_read_lat -s 4097 -n 100; }
# UD: single-packet messages; fewer than the receive queue's 512 entries, so
# that no SEND can find the receiver without a receive posted (UD and UC
# have no RNR flow control: such a message would be dropped)
t_ud_send_bw()		{ perf 19 ipv4 bw ib_send_bw -c UD -s 1024 -n 100; }
t_ud_send_lat()		{ perf 20 ipv6 lat ib_send_lat -c UD -s 256 -n 100; }
t_uc_send_bw()		{ perf 21 ipv4 bw ib_send_bw -c UC -s 4097 -n 100; }
t_uc_write_bw()		{ perf 22 ipv6 bw ib_write_bw -c UC -s 65536 -n 50; }

# ---- rping (rdma_cm) --------------------------------------------------------

t_rping() {
	rt_sides_pair ipv4 || fail "no GID"
	rt_rping "$KTAP_CASE" "$(port_of 30)" -V -C 200 || fail "rping"
}

t_rping_ipv6() {
	rt_sides_pair ipv6 || fail "no GID"
	rt_rping "$KTAP_CASE" "$(port_of 31)" -V -S 5000 -C 100 || fail "rping"
}

# ---- the wire, decoded by tshark ----------------------------------------------

CAP=$SROCE_LOGDIR/interop.pcapng

cap_stop() {
	[ -n "${CAP_PID:-}" ] || return 0
	kill -INT "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	CAP_PID=
}

# Guest a captures the RoCE v2 traffic (UDP port 4791) of an RC and a UC
# pingpong, a UD pingpong (over both GID types) and rping (rdma_cm's MADs on
# QP1, then RC with RDMA READ and WRITE), and tshark decodes the capture: frames are
# counted by the BTH opcode's transport (RC 0x00-0x1f, UC 0x20-0x3f, UD
# 0x60-0x7f; UD to QP1, the GSI, apart) and the CM MADs (management class
# 0x07); every class that was generated must be there, and no frame may be
# malformed or carry an expert item of severity warning or error.
t_wire_decodes_as_roce_v2() {
	local failed=() out counts kv
	local why='dumpcap/tshark not installed (scripts/install-deps.sh installs tshark)' st
	if [ "$SROCE_ROLE" = a ]; then
		if ! command -v dumpcap >/dev/null || ! command -v tshark >/dev/null; then
			tb_put "$KTAP_CASE.cap" skip
			skip "$why"
		fi
		rm -f "$CAP"
		trap cap_stop EXIT
		dumpcap -q -i "$IF" -f 'udp port 4791' -w "$CAP" 2>"$CAP.log" &
		CAP_PID=$!
		if ! wait_for 60 [ -s "$CAP" ]; then
			tb_put "$KTAP_CASE.cap" failed
			cat "$CAP.log"
			fail "dumpcap did not start"
		fi
		tb_put "$KTAP_CASE.cap" ready
	else
		st=$(tb_get "$KTAP_CASE.cap" 120) || fail "guest a did not start its capture"
		case $st in
		ready) ;;
		skip) skip "$why" ;;
		*) fail "guest a could not start its capture" ;;
		esac
	fi
	rt_sides_pair ipv4 || fail "no GID"
	RT_PP=ibv_rc_pingpong rt_pingpong "$KTAP_CASE.rc" "$(port_of 40)" -c -s 3000 -n 20 || failed+=("ibv_rc_pingpong")
	RT_PP=ibv_uc_pingpong rt_pingpong "$KTAP_CASE.uc" "$(port_of 44)" -c -s 3000 -n 20 || failed+=("ibv_uc_pingpong")
	RT_PP=ibv_ud_pingpong rt_pingpong "$KTAP_CASE.ud" "$(port_of 41)" -c -s 1024 -n 20 || failed+=("ibv_ud_pingpong")
	rt_sides_pair ipv6 || fail "no GID"
	RT_PP=ibv_ud_pingpong rt_pingpong "$KTAP_CASE.ud6" "$(port_of 42)" -c -s 100 -n 20 || failed+=("ibv_ud_pingpong IPv6")
	rt_sides_pair ipv4 || fail "no GID"
	rt_rping "$KTAP_CASE.cm" "$(port_of 43)" -V -C 5 || failed+=("rping")
	tb_barrier "$KTAP_CASE.done" 120 || failed+=("the peer did not finish")
	[ "$SROCE_ROLE" = a ] || { [ ${#failed[@]} -eq 0 ] || fail "${failed[*]}"; return 0; }
	cap_stop
	cat "$CAP.log"
	# One pass: per frame, the BTH opcode and destination QP, the MAD class,
	# expert severities
	# (0x600000 warning, 0x800000 error), whether it is malformed, and the
	# IP version.  RoCE v2 senders (rdma_rxe and sroce) leave the UDP
	# checksum 0 over IPv6 as over IPv4: the ICRC protects the packet, as
	# RFC 6935/6936 allow for tunnel protocols.  Wireshark flags that as an
	# error unless told, with the preference that exists for this case.
	out=$(tshark -n -r "$CAP" -o udp.ignore_ipv6_zero_checksum:TRUE \
		-T fields -E separator=';' \
		-e frame.number -e infiniband.bth.opcode -e infiniband.mad.mgmtclass \
		-e _ws.expert.severity -e _ws.malformed -e ip.version -e ipv6.version \
		-e infiniband.bth.destqp \
		2>"$CAP.tshark.err") || { cat "$CAP.tshark.err"; fail "tshark cannot read the capture"; }
	counts=$(printf '%s\n' "$out" | awk -F';' '
		function n(x,  i, v) {
			if (x !~ /^0x/) return x + 0
			x = tolower(substr(x, 3))
			for (i = 1; i <= length(x); i++)
				v = v * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1
			return v
		}
		$1 !~ /^[0-9]+$/ { other++; next }
		{ frames++ }
		$2 == "" { nobth++ }
		$2 != "" {
			op = n($2)
			c = op < 32 ? "rc" : op < 64 ? "uc" : op >= 96 && op < 128 ? "ud" : "other"
			if (c == "ud" && n($8) == 1) c = "gsi"
			bth[c]++
		}
		$3 != "" && n($3) == 7 { cm++ }
		$5 != "" { malformed++ }
		$6 == "4" { ip4++ }
		$7 != "" { ip6++ }
		$4 != "" { split($4, s, ","); for (i in s) if (n(s[i]) >= 6291456) { warn++; break } }
		END {
			printf "frames=%d ipv4=%d ipv6=%d bth_rc=%d bth_uc=%d bth_ud=%d bth_gsi=%d bth_other=%d cm_mads=%d no_bth=%d malformed=%d expert_warn=%d unparsed=%d\n",
				frames, ip4, ip6, bth["rc"], bth["uc"], bth["ud"], bth["gsi"], bth["other"], cm, nobth, malformed, warn, other
		}')
	echo "tshark: $counts"
	local -A n=()
	for kv in $counts; do
		n[${kv%%=*}]=${kv#*=}
	done
	[ "${n[frames]}" -gt 0 ] || failed+=("no frames captured")
	[ "${n[ipv4]}" -gt 0 ] || failed+=("no IPv4 frames")
	[ "${n[ipv6]}" -gt 0 ] || failed+=("no IPv6 frames")
	[ "${n[bth_rc]}" -gt 0 ] || failed+=("no RC frames decoded")
	[ "${n[bth_uc]}" -gt 0 ] || failed+=("no UC frames decoded")
	[ "${n[bth_ud]}" -gt 0 ] || failed+=("no UD frames (to QPs other than 1) decoded")
	[ "${n[cm_mads]}" -gt 0 ] || failed+=("no CM MADs decoded")
	[ "${n[no_bth]}" -eq 0 ] || failed+=("${n[no_bth]} frames to UDP 4791 without a BTH")
	[ "${n[malformed]}" -eq 0 ] || failed+=("${n[malformed]} malformed frames")
	[ "${n[expert_warn]}" -eq 0 ] || failed+=("${n[expert_warn]} frames with expert warnings or errors")
	[ "${n[unparsed]}" -eq 0 ] || failed+=("${n[unparsed]} lines of tshark output not understood")
	if [ $((n[malformed] + n[expert_warn] + n[unparsed])) -gt 0 ]; then
		tshark -n -r "$CAP" -o udp.ignore_ipv6_zero_checksum:TRUE -q -z expert,warn 2>/dev/null | head -n 60
		printf '%s\n' "$out" | awk -F';' '$1 !~ /^[0-9]+$/ || $4 != "" || $5 != ""' | head -n 20
	fi
	[ ${#failed[@]} -eq 0 ] || fail "${failed[*]} (capture: $CAP)"
}

# ---- recovery across drivers ------------------------------------------------

# 2 % of the RoCE packets each guest sends are lost (selftests/lib/netem.sh):
# guest b's RDMA WRITEs, READ requests and ping-pong messages, so a's
# responder sees gaps and asks for a resend (a PSN sequence NAK) or lets
# the requester time out; and a's ACKs, READ responses and ping-pong
# messages, so b's requester retransmits and a's responder answers the
# duplicates.  selftests/run runs this suite with the drivers both ways
# round, so each driver recovers from the other's losses as requester and
# as responder.  During the ping-pong the ACKs are spared (netem.sh says
# why).
t_netem_loss() {
	local port failed=()
	port=$(port_of 25)
	netem_begin --both loss 2%
	rt_sides_pair ipv4 || fail "no GID"
	rt_perf "$KTAP_CASE.write" "$port" bw ib_write_bw -s 65536 -n 10 || failed+=("ib_write_bw -s 65536")
	rt_perf "$KTAP_CASE.read" $((port + 2)) bw ib_read_bw -s 65536 -n 10 || failed+=("ib_read_bw -s 65536")
	netem_pingpong "$KTAP_CASE.pingpong" $((port + 4)) -c -s 4097 -n 50 || failed+=("ibv_rc_pingpong -c -s 4097")
	netem_seen 50 || failed+=("netem saw too few packets")
	[ ${#failed[@]} -eq 0 ] || fail "under netem loss 2%: ${failed[*]}"
}

# Guest a drops every RoCE packet it sends, and the requester in b must use
# up its transport retries in time, whichever driver each side runs
# (selftests/lib/rc_retry.sh).
t_netem_retry_exhausted() { retry_exhausted_case "$(port_of 26)"; }

# ATOMIC WRITE from guest b into guest a, and a misaligned one refused
# (selftests/lib/pmem.sh).
t_atomic_write() { atomic_write_case "$(port_of 27)"; }

# Arguments name a subset of the cases (the first one is always run).
CASES=(
	t_gids_and_wire
	t_rc_pingpong
	t_rc_pingpong_ipv6
	t_uc_pingpong
	t_ud_pingpong
	t_ud_pingpong_ipv6
	t_srq_pingpong
	t_send_bw
	t_write_bw
	t_read_bw
	t_atomic_bw
	t_atomic_cmp_swap_bw
	t_send_lat
	t_write_lat
	t_read_lat
	t_ud_send_bw
	t_ud_send_lat
	t_uc_send_bw
	t_uc_write_bw
	t_rping
	t_rping_ipv6
	t_netem_loss
	t_netem_retry_exhausted
	t_atomic_write
	t_wire_decodes_as_roce_v2
)
if [ $# -gt 0 ]; then
	ktap_main t_gids_and_wire "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
