#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transports beyond RC and the connection manager between two guests
# (with sroce: two network namespaces of one guest, scripts/testbed --netns),
# with the real tools: ibv_ud_pingpong, ibv_uc_pingpong and ibv_srq_pingpong
# with their data check, and over rdma_cm (ib_core's CM on the GSI QP1):
# rping with every buffer verified (-V), ucmatose (RC), udaddy (UD) and
# mckey (UD multicast, IPv4 only), over the IPv4-mapped and the IPv6 GIDs.
# Servers (and the multicast receiver) run in guest a, clients in guest b;
# each guest reports its side of every case.  Emits KTAP.
#
#   scripts/testbed -k 6.1 -n 2 --netns selftests/cm.sh         # sroce, as make check
#   scripts/testbed -k 6.1 -n 2 selftests/cm.sh                 # sroce on a wire
#   scripts/testbed -k 6.1 -n 2 -a rdma_rxe selftests/cm.sh     # the reference

. "$(dirname "$0")/lib/ktap.sh"
. "${SROCE_SRC:?run me through scripts/testbed}/scripts/guest/lib.sh"
. "$(dirname "$0")/lib/rdma_tools.sh"
. "$(dirname "$0")/lib/teardown.sh"

DEV=${SROCE_RDMA_DEV:?no RDMA device set up}
[ "${SROCE_GUESTS:-1}" = 2 ] || { echo "cm.sh needs two guests (-n 2)" >&2; exit 2; }

# Every case has its own block of TCP ports (the tools' connection set-up)
# and rdma_cm ports, so a server left over from a failed case cannot answer
# the next one.  (udaddy has a fixed port: 7174.)
port_of() { echo $((20000 + 20 * $1)); }

t_gids_and_wire() { rt_pair_ready; }

# ---- UD, UC, SRQ pingpong ---------------------------------------------------

pp() {			# TOOL PORTSLOT FAMILY ARGS...
	rt_pp_pair "$1" "$(port_of "$2")" "${@:3}"
}

# UD messages are single packets: at most the path MTU (1024 on a 1500-byte
# wire), the 40-byte GRH in front of them in the receive buffer
t_ud_pingpong()		{ pp ibv_ud_pingpong 1 ipv4 -c -s 1024 -n 200; }
t_ud_pingpong_ipv6()	{ pp ibv_ud_pingpong 2 ipv6 -c -e -s 1 -n 100; }
t_uc_pingpong()		{ pp ibv_uc_pingpong 3 ipv4 -c -s 4097 -n 200; }
t_uc_pingpong_ipv6()	{ pp ibv_uc_pingpong 4 ipv6 -c -e -s 65536 -n 20; }
# 16 QPs sharing one SRQ per side; -n counts the exchanges of all QPs
t_srq_pingpong()	{ pp ibv_srq_pingpong 5 ipv4 -c -s 4097 -n 320; }
t_srq_pingpong_ipv6()	{ pp ibv_srq_pingpong 6 ipv6 -c -q 4 -s 1024 -n 100; }

# ---- rdma_cm ----------------------------------------------------------------

cm() {			# FUNC PORTSLOT FAMILY ARGS...
	local fn=$1 port
	port=$(port_of "$2")
	rt_sides_pair "$3" || fail "no GID"
	shift 3
	"$fn" "$KTAP_CASE" "$port" "$@" || fail "${fn#rt_} $*"
}

# rping -V: the client sends its buffer's address, the server RDMA READs it
# and RDMA WRITEs it back, the client compares every byte, per ping
t_rping()		{ cm rt_rping 10 ipv4 -V -C 500; }
t_rping_ipv6()		{ cm rt_rping 11 ipv6 -V -C 200; }
t_rping_multi_packet()	{ cm rt_rping 12 ipv4 -V -S 10000 -C 100; }
t_ucmatose()		{ cm rt_cmatose 13 ipv4 -c 4 -C 50; }
t_ucmatose_ipv6()	{ cm rt_cmatose 14 ipv6 -c 2 -C 50 -S 4000; }

t_udaddy() {
	rt_sides_pair ipv4 || fail "no GID"
	rt_udaddy "$KTAP_CASE" -c 2 -C 20 || fail "udaddy"
}

t_udaddy_ipv6() {
	rt_sides_pair ipv6 || fail "no GID"
	rt_udaddy "$KTAP_CASE" -c 1 -C 20 -S 1000 || fail "udaddy"
}

t_mckey() {
	rt_sides_pair ipv4 || fail "no GID"
	rt_mckey "$KTAP_CASE" 239.0.2.7 -c 2 -C 20 || fail "mckey"
}

# No IPv6 multicast: rdma_cm refuses to join an IPv6 group on a RoCE v2
# port (ENOTSUPP, 524, from cma_iboe_join_multicast on 6.1 and 6.12), on
# any RoCE driver.

# Arguments name a subset of the cases (the first one is always run).
CASES=(
	t_gids_and_wire
	t_ud_pingpong
	t_ud_pingpong_ipv6
	t_uc_pingpong
	t_uc_pingpong_ipv6
	t_srq_pingpong
	t_srq_pingpong_ipv6
	t_rping
	t_rping_ipv6
	t_rping_multi_packet
	t_ucmatose
	t_ucmatose_ipv6
	t_udaddy
	t_udaddy_ipv6
	t_mckey
)
if [ $# -gt 0 ]; then
	ktap_main t_gids_and_wire "$@" t_teardown_clean
else
	ktap_main "${CASES[@]}" t_teardown_clean
fi
