#!/bin/bash
# Example test bed script: ibv_srq_pingpong (several RC QPs receiving through
# one SRQ on each side) over the RDMA device the bed set up.
#
#   scripts/testbed -k 6.1 scripts/guest/examples/srq_pingpong.sh
#   scripts/testbed -k 6.12 -a rdma_rxe scripts/guest/examples/srq_pingpong.sh
#
# Two guests: server in guest a, client in guest b (connecting to a's IPv4
# address).  One guest: server and client in the same guest.  Uses the RoCE
# v2 GID of the guest's IPv4 address; -c makes each side check the data of
# the receives.  SRQ_PINGPONG_ARGS overrides the QP count, size and
# iterations (default: 4 QPs, 200 exchanges each of 4096 bytes).
set -euo pipefail
. "$SROCE_SRC/scripts/guest/lib.sh"

dev=${SROCE_RDMA_DEV:?no RDMA device set up (--no-link or driver none?)}
port=18516
read -r -a args <<<"${SRQ_PINGPONG_ARGS:--q 4 -n 200 -s 4096}"

tb_log "device $dev on $SROCE_NETDEV, driver $SROCE_DRIVER, kernel $(uname -r)"
peer=${SROCE_PEER_IP4:-$SROCE_IP4}
gidx=$(tb_gid_index "$dev" "$SROCE_IP4") || tb_die "$SROCE_IP4 is not in the GID table of $dev"

run() {
	ibv_srq_pingpong -d "$dev" -g "$gidx" -p "$port" -c "${args[@]}" "$@"
}

server() {
	run &
	spid=$!
	tb_wait_listen "$port" 60 "$spid" || { kill "$spid" 2>/dev/null; tb_die "server did not start"; }
}

if [ "$SROCE_GUESTS" = 1 ]; then
	server
	run "$peer"
	wait "$spid"
elif [ "$SROCE_ROLE" = a ]; then
	server
	tb_barrier server-listening
	tb_wait_pid "$spid" 300
else
	tb_barrier server-listening
	run "$peer"
fi
tb_barrier finished
tb_log "ok"
