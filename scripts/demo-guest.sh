#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What `make demo` runs in each guest: show the RDMA device the test bed
# created, fail unless its port is ACTIVE with IPv4 and IPv6 GIDs, then run
# ibv_rc_pingpong between the guests over the IPv4 GIDs (server in guest a,
# client in guest b) with the data check, and print its result lines.

set -eu
. "$SROCE_SRC/selftests/lib/gid.sh"
. "$SROCE_SRC/selftests/lib/rdma_tools.sh"
DEV=$SROCE_RDMA_DEV

show() {
	echo "\$ $*"
	"$@"
	echo
}

echo "guest $SROCE_ROLE ($(uname -r)): $SROCE_NETDEV $SROCE_IP4 $SROCE_IP6"
echo
show rdma link show
show ibv_devices
show ibv_devinfo -v -d "$DEV"

ok=1
grep -q ACTIVE "/sys/class/infiniband/$DEV/ports/1/state" || { echo "port not ACTIVE"; ok=0; }
has_gid "$DEV" "$SROCE_IP4" || { echo "no RoCE v2 GID for $SROCE_IP4"; ok=0; }
has_gid "$DEV" "$SROCE_IP6" || { echo "no RoCE v2 GID for $SROCE_IP6"; ok=0; }
[ "$ok" = 1 ] && echo "$DEV: ACTIVE, RoCE v2 GIDs for $SROCE_IP4 and $SROCE_IP6"
# the peer must not wait for a ping-pong partner that gave up
tb_barrier demo-devices 120 || ok=0
[ "$ok" = 1 ] || exit 1

echo
if [ "$SROCE_ROLE" = a ]; then
	echo "ibv_rc_pingpong server ($SROCE_IP4), 1000 round trips of 4096 bytes, data check:"
else
	echo "ibv_rc_pingpong client, to $SROCE_PEER_IP4:"
fi
rt_sides_pair ipv4
if rt_pingpong demo-pingpong 18515 -c -n 1000; then
	echo "ibv_rc_pingpong: OK"
else
	echo "ibv_rc_pingpong: FAILED"
	exit 1
fi
