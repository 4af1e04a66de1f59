#!/bin/bash
# Example test bed script: RC ping-pong over the RDMA device the bed set up.
#
#   scripts/testbed -k 6.1 -a rdma_rxe scripts/guest/examples/rc_pingpong.sh
#   scripts/testbed -k 6.12 -n 1 -a rdma_rxe scripts/guest/examples/rc_pingpong.sh
#
# Two guests: server in guest a, client in guest b (connecting to a's IPv4
# address).  One guest: server and client in the same guest over its own
# address.  Uses the RoCE v2 GID of the guest's IPv4 (or, with argument
# "ipv6", IPv6) address; the out-of-band TCP exchange of ibv_rc_pingpong
# always uses IPv4 (its server listens on IPv4 only).
set -euo pipefail
. "$SROCE_SRC/scripts/guest/lib.sh"

family=${1:-ipv4}
dev=${SROCE_RDMA_DEV:?no RDMA device set up (--no-link or driver none?)}
port=18515
iters=${PINGPONG_ITERS:-200}

tb_log "device $dev on $SROCE_NETDEV, driver $SROCE_DRIVER, kernel $(uname -r)"
rdma link show
ibv_devinfo -d "$dev"

peer=${SROCE_PEER_IP4:-$SROCE_IP4}
if [ "$family" = ipv6 ]; then
	addr=$SROCE_IP6
else
	addr=$SROCE_IP4
fi

# the GID table must contain our address as a RoCE v2 GID
tb_gids "$dev"
gidx=$(tb_gid_index "$dev" "$addr") || tb_die "$addr is not in the GID table of $dev"
tb_log "$addr is RoCE v2 GID index $gidx"

server() {
	ibv_rc_pingpong -d "$dev" -g "$gidx" -p "$port" -n "$iters" &
	spid=$!
	tb_wait_listen "$port" 60 "$spid" || { kill "$spid" 2>/dev/null; tb_die "server did not start"; }
}

if [ "$SROCE_GUESTS" = 1 ]; then
	server
	ibv_rc_pingpong -d "$dev" -g "$gidx" -p "$port" -n "$iters" "$peer"
	wait "$spid"
elif [ "$SROCE_ROLE" = a ]; then
	server
	tb_barrier server-listening
	tb_wait_pid "$spid" 120
else
	tb_barrier server-listening
	ibv_rc_pingpong -d "$dev" -g "$gidx" -p "$port" -n "$iters" "$peer"
fi
tb_barrier finished
tb_log "ok"
