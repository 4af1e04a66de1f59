#!/bin/bash
# scripts/kernels.sh - resolve the two guest/test kernels of sroce.
#
# The project tests against two Debian kernels:
#   6.1   the kernel Debian 12 (bookworm / bookworm-security) ships, i.e. what
#         `apt-cache depends linux-image-amd64` names at its default candidate
#   6.12  the bookworm-backports kernel, i.e. what
#         `apt-cache depends -t bookworm-backports linux-image-amd64` names
# The ABI number in the package name changes over time, so the names are
# resolved from the apt lists, never hard-coded.  The result is cached in
# $SROCE_CACHE/kernel-names and re-resolved whenever an apt list is newer
# than the cache (i.e. after every `apt-get update` that changed something).
#
# Usage (runnable):
#   scripts/kernels.sh kver 6.1      -> 6.1.0-56-amd64           (uname -r)
#   scripts/kernels.sh pkg  6.12     -> linux-image-6.12.95+deb12-amd64
#   scripts/kernels.sh hdrpkg 6.1    -> linux-headers-6.1.0-56-amd64
#   scripts/kernels.sh kdir 6.12     -> /usr/src/linux-headers-6.12.95+deb12-amd64
#   scripts/kernels.sh list          -> one line per kernel: "<series> <kver>"
#   scripts/kernels.sh kdir 6.1-debug -> the object tree of the debug kernel
#                                       that scripts/debug-kernel/build made
#   scripts/kernels.sh refresh       -> drop the cache and resolve again
# Usage (sourced):
#   . scripts/kernels.sh; kver=$(sroce_kver 6.12); kdir=$(sroce_kdir 6.12)
#
# 6.1-debug is not a Debian package: it is built from linux-source-6.1 by
# scripts/debug-kernel/build (make check-debug) into the cache; kver/kdir/
# kroot of it fail until that build finished.  It is not in `list`.
#
# Overrides: SROCE_KVER_6_1 / SROCE_KVER_6_12 force a kver (e.g. to test a
# locally installed kernel); SROCE_CACHE moves the cache.
#
# If apt cannot resolve a name (no lists, no backports source yet), the
# highest installed /usr/src/linux-headers-<series>.*-amd64 is used as a
# fallback, with a warning on stderr (not with SROCE_KERNELS_STRICT=1).

SROCE_KERNEL_SERIES="6.1 6.12"

sroce_cache_dir() {
	printf '%s\n' "${SROCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sroce}"
}

# _sroce_series_ok SERIES: is it one of ours?
_sroce_series_ok() {
	case "$1" in
	6.1|6.12|6.1-debug) return 0 ;;
	*) echo "kernels.sh: unknown kernel series '$1' (use 6.1, 6.12 or 6.1-debug)" >&2; return 1 ;;
	esac
}

# _sroce_resolve_apt SERIES: print the versioned image package name from apt.
_sroce_resolve_apt() {
	local series=$1 out pkg
	if [ "$series" = 6.12 ]; then
		out=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null) || return 1
	else
		out=$(apt-cache depends linux-image-amd64 2>/dev/null) || return 1
	fi
	pkg=$(printf '%s\n' "$out" | sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1)
	# Sanity: the name must belong to the requested series.
	case "$pkg" in
	"linux-image-$series".[0-9]*|"linux-image-$series"-*) printf '%s\n' "$pkg" ;;
	*) return 1 ;;
	esac
}

# _sroce_resolve_installed SERIES: fallback from installed headers.
_sroce_resolve_installed() {
	local series=$1 d best=
	for d in /usr/src/linux-headers-"$series".*-amd64 /usr/src/linux-headers-"$series"-*-amd64; do
		[ -d "$d" ] || continue
		best=$(printf '%s\n%s\n' "$best" "${d#/usr/src/linux-headers-}" | sed '/^$/d' | sort -V | tail -n1)
	done
	[ -n "$best" ] && printf 'linux-image-%s\n' "$best"
}

# _sroce_cache_fresh FILE: cache exists and no apt list is newer.
_sroce_cache_fresh() {
	local f=$1
	[ -s "$f" ] || return 1
	if [ -d /var/lib/apt/lists ] &&
	   [ -n "$(find /var/lib/apt/lists -maxdepth 1 -type f -newer "$f" -print -quit 2>/dev/null)" ]; then
		return 1
	fi
	# preferences / sources changes can change the answer as well
	if [ -n "$(find /etc/apt/sources.list /etc/apt/sources.list.d /etc/apt/preferences /etc/apt/preferences.d \
	        -maxdepth 1 -newer "$f" -print -quit 2>/dev/null)" ]; then
		return 1
	fi
	return 0
}

# sroce_debug_env NAME: KVER, KDIR or KROOT of the built debug kernel
sroce_debug_env() {
	local f v
	f=$(sroce_cache_dir)/debug-kernel/current.env
	v=$(sed -n "s/^$1=//p" "$f" 2>/dev/null)
	if [ -z "$v" ]; then
		echo "kernels.sh: the 6.1-debug kernel is not built; run scripts/debug-kernel/build (or make check-debug)" >&2
		return 1
	fi
	printf '%s\n' "$v"
}

# sroce_kernel_pkg SERIES: linux-image-<kver>
sroce_kernel_pkg() {
	local series=$1 cache_dir cache pkg tmp
	_sroce_series_ok "$series" || return 1
	if [ "$series" = 6.1-debug ]; then
		pkg=$(sroce_debug_env KVER) || return 1
		printf 'linux-image-%s\n' "$pkg"
		return 0
	fi
	case "$series" in
	6.1)  [ -n "${SROCE_KVER_6_1:-}" ]  && { printf 'linux-image-%s\n' "$SROCE_KVER_6_1"; return 0; } ;;
	6.12) [ -n "${SROCE_KVER_6_12:-}" ] && { printf 'linux-image-%s\n' "$SROCE_KVER_6_12"; return 0; } ;;
	esac
	cache_dir=$(sroce_cache_dir)
	cache=$cache_dir/kernel-names
	if _sroce_cache_fresh "$cache"; then
		pkg=$(sed -n "s/^$series //p" "$cache" | head -n1)
		[ -n "$pkg" ] && { printf '%s\n' "$pkg"; return 0; }
	fi
	# (Re-)resolve both series at once and rewrite the cache atomically.
	local s p lines='' ok=1
	for s in $SROCE_KERNEL_SERIES; do
		if p=$(_sroce_resolve_apt "$s"); then
			lines="$lines$s $p"$'\n'
		else
			ok=0
		fi
	done
	if [ "$ok" = 1 ] && mkdir -p "$cache_dir" 2>/dev/null; then
		tmp=$(mktemp "$cache.XXXXXX" 2>/dev/null) &&
			printf '%s' "$lines" >"$tmp" && mv -f "$tmp" "$cache"
	fi
	pkg=$(printf '%s' "$lines" | sed -n "s/^$series //p" | head -n1)
	if [ -z "$pkg" ]; then
		if [ "${SROCE_KERNELS_STRICT:-0}" = 1 ]; then
			echo "kernels.sh: apt cannot resolve the $series kernel" >&2
			return 1
		fi
		pkg=$(_sroce_resolve_installed "$series") || true
		if [ -z "$pkg" ]; then
			echo "kernels.sh: cannot resolve the $series kernel: apt knows no matching linux-image-amd64" \
			     "and no /usr/src/linux-headers-$series.*-amd64 is installed; run scripts/install-deps.sh" >&2
			return 1
		fi
		echo "kernels.sh: warning: apt cannot resolve the $series kernel, using installed headers: ${pkg#linux-image-}" >&2
	fi
	printf '%s\n' "$pkg"
}

# sroce_kver SERIES: full uname -r of that kernel
sroce_kver() {
	local pkg
	pkg=$(sroce_kernel_pkg "$1") || return 1
	printf '%s\n' "${pkg#linux-image-}"
}

# sroce_headers_pkg SERIES
sroce_headers_pkg() {
	local kver
	kver=$(sroce_kver "$1") || return 1
	printf 'linux-headers-%s\n' "$kver"
}

# sroce_kdir SERIES: the kbuild dir external modules are built against
sroce_kdir() {
	local kver
	[ "$1" = 6.1-debug ] && { sroce_debug_env KDIR; return; }
	kver=$(sroce_kver "$1") || return 1
	printf '/usr/src/linux-headers-%s\n' "$kver"
}

_sroce_kernels_main() {
	set -u
	local cmd=${1:-}
	case "$cmd" in
	kver)   [ $# -eq 2 ] || { echo "usage: $0 kver 6.1|6.12|6.1-debug" >&2; return 2; }; sroce_kver "$2" ;;
	pkg)    [ $# -eq 2 ] || { echo "usage: $0 pkg 6.1|6.12" >&2; return 2; }; sroce_kernel_pkg "$2" ;;
	hdrpkg) [ $# -eq 2 ] || { echo "usage: $0 hdrpkg 6.1|6.12" >&2; return 2; }; sroce_headers_pkg "$2" ;;
	kdir)   [ $# -eq 2 ] || { echo "usage: $0 kdir 6.1|6.12|6.1-debug" >&2; return 2; }; sroce_kdir "$2" ;;
	list)   local s k; for s in $SROCE_KERNEL_SERIES; do k=$(sroce_kver "$s") || return 1; echo "$s $k"; done ;;
	refresh) rm -f "$(sroce_cache_dir)/kernel-names"; _sroce_kernels_main list ;;
	-h|--help|help|'')
		sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
		[ -n "$cmd" ] ;;
	*) echo "kernels.sh: unknown command '$cmd' (try --help)" >&2; return 2 ;;
	esac
}

# Run main only when executed, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	_sroce_kernels_main "$@"
	exit $?
fi
