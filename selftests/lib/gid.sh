#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# GID helpers for guest tests, in plain shell: starting an interpreter from
# the 9p-shared root costs seconds in a TCG guest.

# ip6_explode ADDR: full form of an IPv6 address, as sysfs prints GIDs
# (fd53:726f:6365::1 -> fd53:726f:6365:0000:0000:0000:0000:0001).
ip6_explode() {
	local a=$1 head tail g out= i n
	local -a h=() t=()
	if [[ $a == *::* ]]; then
		head=${a%%::*}
		tail=${a#*::}
	else
		head=$a
		tail=
	fi
	[ -z "$head" ] || IFS=: read -ra h <<<"$head"
	[ -z "$tail" ] || IFS=: read -ra t <<<"$tail"
	n=$((8 - ${#h[@]} - ${#t[@]}))
	for g in "${h[@]}"; do out+=$(printf '%04x:' "0x$g"); done
	for ((i = 0; i < n; i++)); do out+="0000:"; done
	for g in "${t[@]}"; do out+=$(printf '%04x:' "0x$g"); done
	echo "${out%:}"
}

# gid_of ADDR: the RoCE GID of an IPv4 or IPv6 address.
gid_of() {
	local o1 o2 o3 o4
	case $1 in
	*:*) ip6_explode "$1" ;;
	*)
		IFS=. read -r o1 o2 o3 o4 <<<"$1"
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$o1" "$o2" "$o3" "$o4"
		;;
	esac
}

# gid_index DEV GID: index of a RoCE v2 entry of port 1 holding GID.  One
# grep over the whole table: a process per entry is slow in a TCG guest.
gid_index() {
	local p=/sys/class/infiniband/$1/ports/1 f i
	for f in $(grep -lx -- "$2" "$p"/gids/* 2>/dev/null); do
		i=${f##*/}
		[ "$(cat "$p/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$i"
		return 0
	done
	return 1
}

has_gid() { gid_index "$1" "$(gid_of "$2")" >/dev/null; }
lacks_gid() { ! has_gid "$1" "$2"; }
