#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Minimal KTAP producer for sroce's guest tests.
#
# A test file defines one shell function per test case and ends with
#     ktap_main test_one test_two ...
# Each case runs in its own subshell with `set -e`; its output becomes KTAP
# diagnostic lines.  A case passes by returning 0, fails on any failing
# command or explicit `fail MSG`, and is skipped (always with a reason) by
# `skip REASON`.  An argument gtest:BINARY stands for every GoogleTest case
# of BINARY, each run as its own KTAP case.  ktap_main prints the plan first,
# one result line per case, and exits 0 only if nothing failed.  A marker is written to the kernel log
# before each case so that dmesg_since_case shows what the case caused.

KTAP_PASS=0
KTAP_FAIL=0
KTAP_SKIP=0

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "$*" >"$KTAP_SKIPFILE"
	exit 4
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
	[ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# expect_match TEXT ERE WHAT
expect_match() {
	printf '%s\n' "$1" | grep -Eq -- "$2" || fail "$3: '$1' does not match /$2/"
}

# wait_for SECONDS CMD... : poll CMD every 0.2 s until it succeeds.
wait_for() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# wait_until SECONDS 'SHELL CONDITION': like wait_for, for conditions that
# contain command substitutions, which must be re-evaluated at every poll
# (wait_for's arguments are expanded once, by the caller).
wait_until() {
	local deadline=$(($(date +%s) + $1))
	until eval "$2"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# must_fail CMD... : CMD must exit non-zero; its output is kept for the log.
must_fail() {
	if "$@"; then
		fail "expected failure: $*"
	fi
	return 0
}

dmesg_since_case() {
	dmesg | sed -n "/sroce-selftest: begin $KTAP_CASE\$/,\$p"
}

# _ktap_us VAR: microseconds since the epoch into VAR (a builtin: every exec
# costs under TCG)
_ktap_us() {
	local t=${EPOCHREALTIME:-}
	t=${t//[!0-9]/}
	printf -v "$1" '%s' "${t:-$((SECONDS * 1000000))}"
}

# ktap_run_case N NAME CMD [ARGS...]: run one case, print its result line.
ktap_run_case() {
	local n=$1 name=$2 out rc reason t0 t1 line
	shift 2
	[ -n "${KTAP_DIR:-}" ] || KTAP_DIR=$(mktemp -d)
	out=$KTAP_DIR/out
	KTAP_SKIPFILE=$KTAP_DIR/skip
	: >"$KTAP_SKIPFILE"
	export KTAP_SKIPFILE
	echo "sroce-selftest: begin $name" >/dev/kmsg 2>/dev/null || true
	_ktap_us t0
	( KTAP_CASE=$name; set -e; "$@" ) >"$out" 2>&1 </dev/null
	rc=$?
	_ktap_us t1
	while IFS= read -r line || [ -n "$line" ]; do
		printf '# %s\n' "$line"
	done <"$out"
	t1=$(((10#$t1 - 10#$t0) / 100000))
	printf '# %s: %d.%d s\n' "$name" $((t1 / 10)) $((t1 % 10))
	case $rc in
	0)
		echo "ok $n $name"
		KTAP_PASS=$((KTAP_PASS + 1))
		;;
	4)
		reason=
		read -r reason <"$KTAP_SKIPFILE" || :
		echo "ok $n $name # SKIP ${reason:-no reason given}"
		KTAP_SKIP=$((KTAP_SKIP + 1))
		;;
	*)
		echo "not ok $n $name"
		KTAP_FAIL=$((KTAP_FAIL + 1))
		;;
	esac
}

# gtest_cases BINARY: the Suite.Case names of a GoogleTest binary.
gtest_cases() {
	"$1" --gtest_list_tests | awk '
		/^[^ ]/ { suite = $1; next }
		/^  /   { print suite $1 }'
}

# A GoogleTest case that GTEST_SKIP()s exits 0: report it as a KTAP skip,
# with GoogleTest's message (printed above) as the reason.
ktap_gtest_case() {
	local out
	out=$("$KTAP_GTEST_BIN" --gtest_filter="$1" --gtest_color=no 2>&1)
	local rc=$?
	printf '%s\n' "$out"
	[ "$rc" -eq 0 ] || return "$rc"
	if printf '%s\n' "$out" | grep -q '^\[  SKIPPED \]'; then
		skip "GoogleTest skipped $1: $(printf '%s\n' "$out" |
			grep -B1 -m1 '^\[  SKIPPED \]' | head -n1)"
	fi
}

ktap_main() {
	local n=0 name bin cases=()
	for name in "$@"; do
		case $name in
		gtest:*)
			bin=${name#gtest:}
			[ -x "$bin" ] || { cases+=("missing:$bin"); continue; }
			for name in $(gtest_cases "$bin"); do
				cases+=("gtest:$bin:$name")
			done
			;;
		*) cases+=("$name") ;;
		esac
	done
	echo "KTAP version 1"
	echo "1..${#cases[@]}"
	for name in "${cases[@]}"; do
		n=$((n + 1))
		case $name in
		missing:*)
			echo "# test binary ${name#missing:} is not built"
			echo "not ok $n ${name##*/}"
			KTAP_FAIL=$((KTAP_FAIL + 1))
			;;
		gtest:*)
			name=${name#gtest:}
			KTAP_GTEST_BIN=${name%:*} ktap_run_case "$n" "${name##*:}" ktap_gtest_case "${name##*:}"
			;;
		*) ktap_run_case "$n" "$name" "$name" ;;
		esac
	done
	echo "# totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	[ -z "${KTAP_DIR:-}" ] || rm -rf "$KTAP_DIR"
	[ "$KTAP_FAIL" -eq 0 ]
}
