# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# An RC requester running out of transport retries over the wire, for the
# two-guest suites (rc.sh, interop.sh).  Source after rdma_tools.sh and
# netem.sh; needs DEV and IF (the guest's RDMA device and netdev).

# retry_exhausted_case PORT: the case of both guests.  Guest a drops every
# RoCE packet it sends (netem loss 100%, so every ACK), and guest b's RC
# requester (sroce_rc_retry, a server in a and a client in b, TCP PORT)
# posts RETRY_N RDMA WRITEs with the local ACK timeout RETRY_T and
# retry_cnt RETRY_R.  The transport timer is T = 4.096 us * 2^RETRY_T
# (IBTA 9.7.6.1.3); RETRY_R + 1 transmissions each wait at least T, so the
# first WR ends with RETRY_EXC_ERR no sooner than T * (RETRY_R + 1) after the
# post, and no later than 3 times that (times SROCE_TEST_SLOW).  sroce backs
# off to 2T and then 4T after consecutive timeouts (kernel/dp/req.c), so it
# takes T + 2T + 4T = 7T at retry_cnt 2: inside [3T, 9T] with 2T to spare
# (about 1.9 s in [805, 2415] ms; a longer T than 15 makes the guest's
# scheduling delays, tens of ms, small against that margin); at retry_cnt 4
# and up it would be 15T and more, past the 3x bound.  rdma_rxe does not
# back off: 3T.  The port counters are read in both guests, so the drivers
# may differ (interop.sh); rdma_rxe has the same counters under the same
# names.
RETRY_TOOL=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_rc_retry
RETRY_T=16		# T = 268.4 ms
RETRY_R=2
RETRY_N=3
RETRY_COUNTERS=(sent_pkts rcvd_pkts duplicate_request completer_retry_err retry_exceeded_err)

# retry_hwc NAME: a port counter of $DEV (through netlink: the test bed's
# --netns runs this in two namespaces)
retry_hwc() {
	rt_port_counter "$DEV" "$1"
}

# retry_field KEY LINE: the value of KEY=value in LINE
retry_field() {
	local w
	for w in $2; do
		[ "${w%%=*}" = "$1" ] && { echo "${w#*=}"; return 0; }
	done
	return 1
}

retry_exhausted_case() {
	local port=$1 name side line k ms lo_ns lo hi dropped wc i
	local -A before delta
	name=$KTAP_CASE
	[ -x "$RETRY_TOOL" ] || fail "no $RETRY_TOOL (make userspace)"
	netem_begin loss 100%
	rt_sides_pair ipv4 || fail "no GID"
	for k in "${RETRY_COUNTERS[@]}"; do
		before[$k]=$(retry_hwc "$k") || fail "cannot read the hw counter $k of $DEV"
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
	if [ "${RT_SRV_RC:-0}" != 0 ] || [ "${RT_CLI_RC:-0}" != 0 ]; then
		fail "sroce_rc_retry $side exited ${RT_SRV_RC:-}${RT_CLI_RC:-}"
	fi
	line=$(grep "^sroce_rc_retry $side: " "$RT_OUT/$name.$side") ||
		fail "no result line from sroce_rc_retry $side"
	for k in "${RETRY_COUNTERS[@]}"; do
		delta[$k]=$(( $(retry_hwc "$k") - before[$k] ))
		echo "$DEV $k: +${delta[$k]}"
	done

	if rt_is_server; then
		# a received every retransmission, executed nothing twice and
		# completed nothing; its netem dropped its ACKs
		dropped=$(netem_dropped)
		tc -s qdisc show dev "$IF"
		expect_eq "$(retry_field completions "$line")" 0 "completions at the responder"
		expect_eq "$(retry_field qp_state "$line")" RTS "the responder's QP state"
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
	expect_eq "$(retry_field wc "$line")" "$wc" "completion statuses"
	expect_eq "$(retry_field qp_state "$line")" ERR "the requester's QP state"
	ms=$(retry_field elapsed_ms "$line") || fail "no elapsed_ms"
	lo_ns=$(( (4096 << RETRY_T) * (RETRY_R + 1) ))
	lo=$((lo_ns / 1000000))
	hi=$((3 * lo_ns * SLOW / 1000000))
	echo "retry exceeded after $ms ms: bounds [$lo, $hi] ms (T = $(( (4096 << RETRY_T) / 1000 )) us, retry_cnt $RETRY_R; with sroce's back-off 7T = $(( 7 * (4096 << RETRY_T) / 1000000 )) ms)"
	[ "$ms" -ge "$lo" ] || fail "gave up after $ms ms, before its $((RETRY_R + 1)) timeouts ($lo ms)"
	[ "$ms" -le "$hi" ] || fail "gave up after $ms ms, later than $hi ms: timer not honoured"
	expect_eq "${delta[completer_retry_err]}" "$RETRY_R" "completer_retry_err rise (retransmissions)"
	expect_eq "${delta[retry_exceeded_err]}" 1 "retry_exceeded_err rise"
	expect_eq "${delta[rcvd_pkts]}" 0 "rcvd_pkts rise (netem drops all a sends)"
	[ "${delta[sent_pkts]}" -ge $((RETRY_N + RETRY_R)) ] ||
		fail "sent_pkts rose by ${delta[sent_pkts]}, want >= $((RETRY_N + RETRY_R))"
}
