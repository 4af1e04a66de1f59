#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sroce devices in network namespaces of one guest, for the suites that
# build their own (netns.sh, chaos.sh): new namespaces, a device inside
# one, a namespace's addresses, its TCP listeners, its device's GIDs, a
# verified pingpong between two of them, the live object counts sroce's
# debugfs keeps and whether a process is gone.  Source after ktap.sh,
# scripts/guest/lib.sh and rdma_tools.sh.

NS_SYS=/sys/class/infiniband
NS_OBJS=/sys/kernel/debug/sroce/objects

objects() {		# KIND: a live count from debugfs
	awk -v k="$1" '$1 == k { print $2 }' "$NS_OBJS"
}

# gone PID: exited (a zombie until this shell reaps it) or never there
gone() {
	local st
	st=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

dev_gone() { [ ! -e "$NS_SYS/$1" ] && ! rdma link show "$1/1" >/dev/null 2>&1; }

# ns_listening NS PORT: is a TCP socket listening on PORT in NS?
ns_listening() {
	local hex
	hex=$(printf ':%04X' "$2")
	ip netns exec "$1" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# ns_tb NS FUNCTION ARGS...: a function of scripts/guest/lib.sh run in NS,
# which reads NS's sysfs: in ib_core's exclusive mode a namespace's RDMA
# devices are in its own sysfs only
ns_tb() {
	local ns=$1
	shift
	ip netns exec "$ns" bash -c '. "$0" && "$@"' "$SROCE_SRC/scripts/guest/lib.sh" "$@"
}

# ns_gids_ready DEV ADDR... (as the initial namespace sees DEV), or
# ns_gids_ready -n NS DEV ADDR... (as NS sees it)
ns_gids_ready() {
	local run=() d a
	if [ "$1" = -n ]; then
		run=(ns_tb "$2")
		shift 2
	fi
	d=$1
	shift
	for a in "$@"; do
		"${run[@]}" tb_gid_index "$d" "$a" >/dev/null 2>&1 || return 1
	done
}

# ns_dev_ready [-n NS] DEV ADDR...: DEV's port ACTIVE and its GIDs for
# ADDR... there (as NS sees it, if given), 30 s for each; fails the case
ns_dev_ready() {
	local run=() ns=
	if [ "$1" = -n ]; then
		ns=$2
		run=(ns_tb "$2")
		shift 2
	fi
	local dev=$1
	shift
	"${run[@]}" tb_wait_port_active "$dev" 30 || fail "$dev not ACTIVE${ns:+ in $ns}"
	wait_for 30 ns_gids_ready ${ns:+-n "$ns"} "$dev" "$@" ||
		{ "${run[@]}" tb_gids "$dev"; fail "$dev's GIDs${ns:+ in $ns}"; }
}

# ns_pp NAME TOOL PORT SNS SDEV SADDR CNS CDEV CADDR CONNECT ARGS...: TOOL
# (a pingpong) as the server in SNS on SDEV over SADDR's GID and as the
# client in CNS on CDEV over CADDR's GID (each GID as its namespace sees
# it), their TCP exchange to CONNECT.
# Both must exit 0 and print what rdma_tools.sh's _rt_pp_check expects.
ns_pp() {
	local name=$1 tool=$2 port=$3 sns=$4 sdev=$5 saddr=$6 cns=$7 cdev=$8
	local caddr=$9 connect=${10} size iters sgid cgid spid rc=0
	local srv=$RT_OUT/$name.server cli=$RT_OUT/$name.client lim=$((120 * SLOW))
	shift 10
	local args=("$@")
	read -r size iters < <(rt_pp_size_iters "$@")
	sgid=$(ns_tb "$sns" tb_gid_index "$sdev" "$saddr") ||
		{ ns_tb "$sns" tb_gids "$sdev"; fail "no GID for $saddr on $sdev"; }
	cgid=$(ns_tb "$cns" tb_gid_index "$cdev" "$caddr") ||
		{ ns_tb "$cns" tb_gids "$cdev"; fail "no GID for $caddr on $cdev"; }
	echo "server in $sns: $tool -d $sdev -g $sgid -p $port ${args[*]}"
	ip netns exec "$sns" timeout "$lim" "$tool" -d "$sdev" -g "$sgid" -p "$port" "${args[@]}" \
		>"$srv" 2>&1 &
	spid=$!
	if ! wait_for 60 ns_listening "$sns" "$port"; then
		kill "$spid" 2>/dev/null
		rt_show "$srv" "server output"
		fail "the server in $sns did not listen on $port"
	fi
	echo "client in $cns: $tool -d $cdev -g $cgid -p $port ${args[*]} $connect"
	ip netns exec "$cns" timeout "$lim" "$tool" -d "$cdev" -g "$cgid" -p "$port" "${args[@]}" \
		"$connect" >"$cli" 2>&1 || { echo "client: exit status $?"; rc=1; }
	wait "$spid" || { echo "server: exit status $?"; rc=1; }
	_rt_pp_check "$srv" server "$size" "$iters" "$saddr" "$caddr" || rc=1
	_rt_pp_check "$cli" client "$size" "$iters" "$caddr" "$saddr" || rc=1
	if [ "$rc" != 0 ]; then
		rt_show "$srv" "server output"
		rt_show "$cli" "client output"
		return 1
	fi
	grep -hE '^[0-9]+ (bytes|iters) in ' "$srv" "$cli"
}

ns_new() {		# NS...: new namespaces, their loopback up
	local ns
	for ns in "$@"; do
		ip netns add "$ns" || fail "ip netns add $ns"
		ip -n "$ns" link set lo up
	done
}

ns_link() {		# NS DEV NETDEV: rdma link add DEV inside NS
	ip netns exec "$1" rdma link add "$2" type sroce netdev "$3" || fail "rdma link add $2 in $1"
}

ns_addr() {		# NS NETDEV IPV4 IPV6
	ip -n "$1" addr add "$3/24" dev "$2"
	ip -n "$1" -6 addr add "$4/64" dev "$2" nodad
	ip -n "$1" link set "$2" up
}
