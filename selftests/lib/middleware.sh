# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# What selftests/middleware.sh (the middleware suite) and
# scripts/bench-guest.sh (the middleware rows of make bench) share about
# running UCX and libfabric over a verbs device.
#
#   MW_UCX_WORKAROUND, MW_FI_WORKAROUND
#       the environment that UCX 1.13 and libfabric 1.17 need on rdma_rxe
#       (VAR=VALUE words for env(1)): UCX reads the IPv4 datagram's GRH as
#       what it is; ofi_rxm asks for a CQ that rdma_rxe's max_cqe allows
#       (Documentation/admin-guide.md).  Never set for sroce.
#   mw_ucx_lanes LOG SIDE TLS DEV N
#       UCX's log (UCX_LOG_LEVEL=info) of one side of N tests: at least N
#       tag lanes (ep_cfg lines), each led by TLS on DEV's port 1 (e.g.
#       tag(rc_verbs/sroce0:1 ...)), none over TCP.  Prints what it found
#       (SIDE names the side); non-zero if not so.

# shellcheck disable=SC2034 # for the scripts that source this file
MW_UCX_WORKAROUND=(UCX_UD_ETH_DGID_CHECK=n)
# shellcheck disable=SC2034
MW_FI_WORKAROUND=(FI_UNIVERSE_SIZE=16)

mw_ucx_lanes() {
	local log=$1 side=$2 tls=$3 dev=$4 n=$5 lanes want
	lanes=$(grep -c 'ep_cfg\[[0-9]*\]: tag(' "$log" || :)
	want=$(grep -c "ep_cfg\\[[0-9]*\\]: tag($tls/$dev:1[ )]" "$log" || :)
	echo "$side: $lanes tag lanes, $want of them over $tls/$dev:1"
	grep -m 2 'ep_cfg' "$log" || :
	[ "$lanes" -ge "$n" ] || { echo "$side: $lanes tag lanes for $n tests"; return 1; }
	[ "$want" = "$lanes" ] || { echo "$side: a tag lane not led by $tls/$dev:1"; return 1; }
	! grep -q 'tag(.*tcp/' "$log" || { echo "$side: a tag lane over TCP"; return 1; }
}
