# shellcheck shell=bash
# sroce test bed: helpers for guest test scripts (bash).
#
#   . "$SROCE_SRC/scripts/guest/lib.sh"
#
# Performance: under TCG every exec of a (dynamically linked) program costs
# ~0.1 s of emulated CPU, more on a loaded host, so these helpers use bash
# builtins in their loops; do the same in tests (read -r x <file, not
# x=$(cat file); _tb_nap, not sleep, in polling loops).
#
# All functions return non-zero on failure (they do not exit), so use them as
# `tb_barrier listening || exit 1` or under `set -e`.  Messages go to stderr,
# i.e. into the guest's script.log.
#
#   tb_log MSG...                 timestamped message (guest uptime, role)
#   tb_die MSG...                 tb_log + exit 1
#   tb_barrier NAME [TIMEOUT]     wait until every guest reached NAME (default 300 s);
#                                 fails early if the peer already finished
#   tb_put KEY VALUE              publish a value for the peer
#   tb_get KEY [TIMEOUT]          print the value the peer published under KEY
#   tb_wait_port_active DEV [TIMEOUT]   wait until port 1 of DEV is ACTIVE (default 30 s)
#   tb_gid_of ADDR                the GID of an IPv4/IPv6 address as sysfs prints it
#   tb_gid_index DEV ADDR [TYPE]  print the GID index of IPv4/IPv6 ADDR on port 1
#                                 of DEV (TYPE default "RoCE v2")
#   tb_gids DEV                   list the used GID entries of port 1: "index gid type"
#   tb_link_add [DRIVER [DEV [NETDEV]]]  load DRIVER (sroce|rdma_rxe) and create
#                                 the RDMA link DEV on NETDEV, wait for ACTIVE
#                                 (defaults: $SROCE_DRIVER, sroce0/rxe0, $SROCE_NETDEV)
#   tb_wait_listen PORT [TIMEOUT [PID]]  wait until a TCP socket listens on
#                                 PORT in this guest (default 60 s), e.g. before
#                                 telling the peer a server is ready; fails at
#                                 once if process PID (the server) exits
#   tb_wait_pid PID [TIMEOUT]     wait for background process PID (e.g. a
#                                 server) and return its exit status; kills it
#                                 and fails if the peer guest finishes first
#                                 (its client failed) or after TIMEOUT (300 s)
#   tb_peer_done                  true if the peer guest has finished its script
#
# Barrier and tb_put/tb_get files live in $SROCE_SHARED (9p, cache=none, so
# the peer's files are seen at once).  A barrier name may be reused: the n-th
# call of tb_barrier NAME in one guest pairs with the n-th call in the other.

if [ -z "${SROCE_ROLE:-}" ] && [ -r /run/sroce/env ]; then
	# shellcheck disable=SC1091
	. /run/sroce/env
fi

_tb_up() { local u _; read -r u _ </proc/uptime; printf '%s\n' "$u"; }

# _tb_nap SECONDS: sleep without an exec (an exec costs ~0.1 s of emulated CPU,
# which a polling loop would steal from everything else): read with a time
# out from a fifo nobody writes to.
_tb_nap() {
	if [ -z "${_TB_NAPFD:-}" ] || [ "${_TB_NAPPID:-}" != "$BASHPID" ]; then
		local f
		f=$(mktemp -u "${TMPDIR:-/tmp}/.tb-nap.XXXXXX") && mkfifo "$f" && exec {_TB_NAPFD}<>"$f" && rm -f "$f" ||
			{ sleep "$1"; return 0; }
		_TB_NAPPID=$BASHPID
	fi
	read -r -t "$1" -u "$_TB_NAPFD" _ || :
	return 0
}

tb_log() { printf '[%8s %s] %s\n' "$(_tb_up)" "${SROCE_ROLE:-?}" "$*" >&2; }
tb_die() { tb_log "FATAL: $*"; exit 1; }

_tb_peer() { [ "${SROCE_ROLE:-a}" = a ] && echo b || echo a; }

tb_peer_done() {
	[ "${SROCE_GUESTS:-1}" -ge 2 ] && [ -e "$SROCE_SHARED/.done.$(_tb_peer)" ]
}

# _tb_wait_for FILE TIMEOUT WHAT: poll FILE, fail early if the peer finished.
_tb_wait_for() {
	local f=$1 timeout=$2 what=$3 deadline
	deadline=$(( SECONDS + timeout * ${SROCE_TEST_SLOW:-1} ))
	while [ ! -e "$f" ]; do
		if tb_peer_done && [ ! -e "$f" ]; then
			tb_log "$what: peer guest $(_tb_peer) finished without getting there"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tb_log "$what: timed out after ${timeout}s"
			return 1
		fi
		_tb_nap 0.1
	done
}

tb_barrier() {
	local name=${1:?tb_barrier NAME [TIMEOUT]} timeout=${2:-300} safe cntf n tag
	safe=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_')
	mkdir -p /run/sroce
	cntf=/run/sroce/barrier.${SROCE_ROLE:-a}.$safe
	n=$(( $(cat "$cntf" 2>/dev/null || echo 0) + 1 ))
	echo "$n" >"$cntf"
	tag=$safe.$n
	: >"$SROCE_SHARED/.barrier.$tag.${SROCE_ROLE:-a}" || { tb_log "barrier $name: cannot write to $SROCE_SHARED"; return 1; }
	[ "${SROCE_GUESTS:-1}" -ge 2 ] || return 0
	_tb_wait_for "$SROCE_SHARED/.barrier.$tag.$(_tb_peer)" "$timeout" "barrier $name"
}

tb_put() {
	local key=${1:?tb_put KEY VALUE} safe
	safe=$(printf '%s' "$key" | tr -c 'A-Za-z0-9_.-' '_')
	printf '%s\n' "$2" >"$SROCE_SHARED/.kv.$safe.${SROCE_ROLE:-a}.tmp" &&
		mv -f "$SROCE_SHARED/.kv.$safe.${SROCE_ROLE:-a}.tmp" "$SROCE_SHARED/.kv.$safe.${SROCE_ROLE:-a}"
}

tb_get() {
	local key=${1:?tb_get KEY [TIMEOUT]} timeout=${2:-300} safe f
	safe=$(printf '%s' "$key" | tr -c 'A-Za-z0-9_.-' '_')
	f=$SROCE_SHARED/.kv.$safe.$(_tb_peer)
	[ "${SROCE_GUESTS:-1}" -ge 2 ] || f=$SROCE_SHARED/.kv.$safe.${SROCE_ROLE:-a}
	_tb_wait_for "$f" "$timeout" "tb_get $key" && cat "$f"
}

# _tb_listening PORT: is some TCP (v4 or v6) socket listening on PORT?
_tb_listening() {
	local hex f _sl laddr _rest st
	hex=$(printf '%04X' "$1")
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		while read -r _sl laddr _rest st _rest; do
			[ "$st" = 0A ] && [ "${laddr##*:}" = "$hex" ] && return 0
		done <"$f"
	done
	return 1
}

tb_wait_listen() {
	local port=${1:?tb_wait_listen PORT [TIMEOUT [PID]]} timeout=${2:-60} pid=${3:-} deadline
	deadline=$(( SECONDS + timeout * ${SROCE_TEST_SLOW:-1} ))
	until _tb_listening "$port"; do
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			tb_log "process $pid exited before listening on TCP port $port"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tb_log "nothing listens on TCP port $port after ${timeout}s"
			return 1
		fi
		_tb_nap 0.1
	done
}

tb_wait_pid() {
	local pid=${1:?tb_wait_pid PID [TIMEOUT]} timeout=${2:-300} deadline rc=0
	deadline=$(( SECONDS + timeout * ${SROCE_TEST_SLOW:-1} ))
	while kill -0 "$pid" 2>/dev/null; do
		if tb_peer_done; then
			# give it a moment: the peer may have finished just after talking to it
			_tb_nap 2
			kill -0 "$pid" 2>/dev/null || break
			tb_log "peer guest $(_tb_peer) finished while process $pid still runs; killing it"
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tb_log "process $pid still runs after ${timeout}s; killing it"
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 1
		fi
		_tb_nap 0.2
	done
	wait "$pid" || rc=$?
	return "$rc"
}

tb_wait_port_active() {
	local dev=${1:?tb_wait_port_active DEV [TIMEOUT]} timeout=${2:-30} st deadline
	deadline=$(( SECONDS + timeout * ${SROCE_TEST_SLOW:-1} ))
	while :; do
		st=$(cat "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null)
		case "$st" in *ACTIVE*) return 0 ;; esac
		if [ "$SECONDS" -ge "$deadline" ]; then
			tb_log "port 1 of $dev not ACTIVE after ${timeout}s (state: ${st:-no such device})"
			return 1
		fi
		_tb_nap 0.1
	done
}

# tb_gid_of ADDR: the 8-group sysfs form of an IPv4 (mapped) or IPv6 address
tb_gid_of() {
	local a=$1 head tail i n out=() h t
	case "$a" in
	*.*.*.*)
		local IFS=.
		# shellcheck disable=SC2086
		set -- $a
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
		return ;;
	esac
	a=${a%%/*}
	if [[ $a == *::* ]]; then head=${a%%::*}; tail=${a#*::}; else head=$a; tail=; fi
	IFS=: read -r -a h <<<"$head"
	IFS=: read -r -a t <<<"$tail"
	n=$(( 8 - ${#h[@]} - ${#t[@]} ))
	for i in "${h[@]}"; do out+=("$(printf '%04x' "0x$i")"); done
	for ((i = 0; i < n; i++)); do out+=(0000); done
	for i in "${t[@]}"; do out+=("$(printf '%04x' "0x$i")"); done
	(IFS=:; echo "${out[*]}")
}

tb_gid_index() {
	local dev=${1:?tb_gid_index DEV ADDR [TYPE]} addr=${2:?tb_gid_index DEV ADDR [TYPE]} type=${3:-RoCE v2}
	local want f idx gid gtype p=/sys/class/infiniband/$1/ports/1
	want=$(tb_gid_of "$addr")
	# builtins only: the table has up to 1024 entries (unused ones fail to read)
	for f in "$p"/gids/*; do
		read -r gid <"$f" 2>/dev/null || continue
		[ "$gid" = "$want" ] || continue
		idx=${f##*/}
		read -r gtype <"$p/gid_attrs/types/$idx" 2>/dev/null || continue
		[ "$gtype" = "$type" ] || continue
		echo "$idx"
		return 0
	done
	tb_log "no $type GID for $addr ($want) on $dev"
	return 1
}

# tb_gids DEV: print the used GID table entries of port 1: "index gid type"
tb_gids() {
	local dev=${1:?tb_gids DEV} f gid gtype p=/sys/class/infiniband/$1/ports/1
	for f in "$p"/gids/*; do
		read -r gid <"$f" 2>/dev/null || continue
		[ "$gid" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
		read -r gtype <"$p/gid_attrs/types/${f##*/}" 2>/dev/null || gtype="?"
		echo "${f##*/} $gid $gtype"
	done
}

tb_link_add() {
	local drv=${1:-$SROCE_DRIVER} dev=${2:-} nd=${3:-$SROCE_NETDEV}
	case "$drv" in
	sroce)
		dev=${dev:-sroce0}
		modprobe sroce || { tb_log "modprobe sroce failed"; return 1; }
		rdma link add "$dev" type sroce netdev "$nd" || { tb_log "rdma link add $dev type sroce netdev $nd failed"; return 1; } ;;
	rdma_rxe|rxe)
		dev=${dev:-rxe0}
		modprobe crc32_generic 2>/dev/null
		modprobe rdma_rxe || { tb_log "modprobe rdma_rxe failed"; return 1; }
		rdma link add "$dev" type rxe netdev "$nd" || { tb_log "rdma link add $dev type rxe netdev $nd failed"; return 1; } ;;
	*) tb_log "tb_link_add: unknown driver '$drv'"; return 1 ;;
	esac
	tb_wait_port_active "$dev" 30
}
