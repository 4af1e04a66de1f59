# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# ATOMIC WRITE (IBTA 1.5 memory placement extensions) between the two
# guests, whatever driver each runs, for rc.sh and interop.sh.  Source after
# rdma_tools.sh.
#
# atomic_write_case PORT: sroce_pmem (userspace/tests/device/pmem_tool.cc)
# as server in guest a and client in guest b, TCP PORT: b posts 4 ATOMIC
# WRITEs through ibv_wr_atomic_write() to a's buffer, each completing with
# IBV_WC_ATOMIC_WRITE, then one to a misaligned address, which a's
# responder must refuse (IBV_WC_REM_INV_REQ_ERR at b, both QPs in ERR);
# a checks that exactly the 4 words changed.  Both skip if either device
# does not announce ATOMIC WRITE (rdma_rxe before Linux 6.2).
PMEM_TOOL=${SROCE_BUILD:-$SROCE_SRC/build}/userspace/tests/sroce_pmem

atomic_write_case() {
	local port=$1 name side out rc
	name=$KTAP_CASE
	[ -x "$PMEM_TOOL" ] || fail "no $PMEM_TOOL (make userspace)"
	rt_sides_pair ipv4 || fail "no GID"
	# (|| true: a failed side must still show its output below)
	RT_LIMIT=60 rt_run "$name" "$port" _rt_ready_tcp \
		-- "$PMEM_TOOL" server "$port" \
		-- "$PMEM_TOOL" client "$SROCE_PEER_IP4" "$port" || true
	side=client
	rt_is_server && side=server
	out=$RT_OUT/$name.$side
	rt_show "$out" "sroce_pmem $side"
	rc=${RT_SRV_RC:-}${RT_CLI_RC:-}
	if [ "$rc" = 3 ] && grep -q "^sroce_pmem $side: skip " "$out"; then
		skip "$(sed -n "s/^sroce_pmem $side: skip //p" "$out")"
	fi
	[ "${rc:-0}" = 0 ] || fail "sroce_pmem $side exited $rc"
	grep -q "^sroce_pmem $side: ok " "$out" ||
		fail "no ok line from sroce_pmem $side"
}
