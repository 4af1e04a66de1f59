#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What `make demo` runs in each guest: show the sroce device the test bed
# created, and fail unless its port is ACTIVE with IPv4 and IPv6 GIDs.

set -eu
. "$SROCE_SRC/selftests/lib/gid.sh"
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
[ "$ok" = 1 ]
