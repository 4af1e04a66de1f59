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
# of BINARY, each reported as its own KTAP case.  ktap_main prints the plan first,
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

# SROCE_TEST_SLOW=N (default 1) multiplies every time limit and every
# "nothing arrives" window of the suites (Documentation/testing.md):
# $((30 * SLOW)), or wait_for/wait_until, which apply it themselves.
SLOW=${SROCE_TEST_SLOW:-1}

# wait_for SECONDS CMD... : poll CMD every 0.2 s until it succeeds, for at
# most SECONDS x SLOW.
wait_for() {
	local deadline=$(($(date +%s) + $1 * SLOW))
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
	local deadline=$(($(date +%s) + $1 * SLOW))
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
	out=$KTAP_DIR/out
	KTAP_SKIPFILE=$KTAP_DIR/skip
	: >"$KTAP_SKIPFILE"
	export KTAP_SKIPFILE
	[ -n "${KTAP_CASE_MS:-}" ] ||
		echo "sroce-selftest: begin $name" >/dev/kmsg 2>/dev/null || true
	_ktap_us t0
	( KTAP_CASE=$name; set -e; "$@" ) >"$out" 2>&1 </dev/null
	rc=$?
	_ktap_us t1
	while IFS= read -r line || [ -n "$line" ]; do
		printf '# %s\n' "$line"
	done <"$out"
	t1=$(((10#$t1 - 10#$t0) / 100000))
	# A replayed GoogleTest case: its time as GoogleTest measured it
	[ -z "${KTAP_CASE_MS:-}" ] || t1=$((KTAP_CASE_MS / 100))
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

# The cases of a GoogleTest binary run in one process: starting a C++ test
# binary costs about a second under TCG, minutes over all verbs tests.
# GoogleTest's "[ RUN ]" and "[ OK ]" / "[ FAILED ]" / "[ SKIPPED ]" lines
# split the output into one KTAP case each.  A process that dies inside a
# case fails that case, with what it printed, and the cases after it run in
# a fresh process.  The binary marks each case in the kernel log itself
# (userspace/tests/device/test_main.cc).

# _ktap_gtest_split DIR: read one run's output, leave for each case C that
# finished DIR/C.out (its lines), DIR/C.rc (0 pass, 1 fail, 4 skip) and
# DIR/C.ms (with any "/" of a parameterized case's name as "%"); print the
# name of a case that started and never finished.
_ktap_gtest_split() {
	awk -v dir="$1" '
		$1 == "[" && $2 == "RUN" && $3 == "]" {
			cur = $4
			base = cur
			gsub("/", "%", base)
			base = dir "/" base
			out = base ".out"
			print > out
			next
		}
		cur != "" && $1 == "[" && $3 == "]" && $4 == cur &&
		($2 == "OK" || $2 == "FAILED" || $2 == "SKIPPED") {
			print > out
			close(out)
			ms = $5
			gsub(/[^0-9]/, "", ms)
			print ($2 == "OK" ? 0 : $2 == "FAILED" ? 1 : 4) > (base ".rc")
			print ms + 0 > (base ".ms")
			close(base ".rc")
			close(base ".ms")
			cur = ""
			next
		}
		cur != "" { print > out }
		END { if (cur != "") print cur }'
}

# ktap_gtest_batch BINARY CASE...: run the CASEs, leaving their results in
# $KTAP_GTEST_DIR as _ktap_gtest_split describes.
ktap_gtest_batch() {
	local bin=$1 dir=$KTAP_GTEST_DIR log=$KTAP_GTEST_DIR/run.log
	local rc died c f want left filter
	shift
	want=("$@")
	while [ ${#want[@]} -gt 0 ]; do
		filter=$(IFS=:; echo "${want[*]}")
		# (in braces: bash's own "Segmentation fault" report goes to the log)
		{ "$bin" --gtest_filter="$filter" --gtest_color=no; } >"$log" 2>&1 </dev/null
		rc=$?
		died=$(_ktap_gtest_split "$dir" <"$log")
		if [ -n "$died" ]; then
			f=$dir/${died//\//%}
			echo "$bin ended with status $rc inside $died" >>"$f.out"
			echo 1 >"$f.rc"
			echo 0 >"$f.ms"
		fi
		left=()
		for c in "${want[@]}"; do
			[ -e "$dir/${c//\//%}.rc" ] || left+=("$c")
		done
		if [ -z "$died" ]; then
			# Nothing died in a case, yet cases did not run: say why and
			# do not try again.
			for c in "${left[@]}"; do
				f=$dir/${c//\//%}
				{
					echo "$bin (status $rc) did not run $c; its output:"
					cat "$log"
				} >"$f.out"
				echo 1 >"$f.rc"
				echo 0 >"$f.ms"
			done
			left=()
		fi
		want=("${left[@]}")
	done
}

# ktap_gtest_case NAME: replay the result ktap_gtest_batch left for NAME.  A
# case that GTEST_SKIP()s is a KTAP skip with GoogleTest's message (the
# lines between "FILE:LINE: Skipped" and "[ SKIPPED ]") as the reason.
ktap_gtest_case() {
	local f=$KTAP_GTEST_DIR/${1//\//%} rc
	printf '%s\n' "$(<"$f.out")"
	read -r rc <"$f.rc"
	case $rc in
	0) return 0 ;;
	4)
		skip "GoogleTest skipped $1: $(awk '
			/^\[  SKIPPED \]/ { exit }
			msg && NF { printf "%s%s", sep, $0; sep = " " }
			/: Skipped$/ { msg = 1 }' "$f.out")"
		;;
	*) return 1 ;;
	esac
}

ktap_main() {
	local n=0 name bin batched= case_bin case_name ms cases=() group=()
	KTAP_DIR=$(mktemp -d)
	KTAP_GTEST_DIR=$KTAP_DIR/gtest
	mkdir "$KTAP_GTEST_DIR"
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
			case_bin=${name%:*}
			case_name=${name##*:}
			if [ "$batched" != "$case_bin" ]; then
				group=()
				for bin in "${cases[@]}"; do
					[ "${bin%:*}" != "gtest:$case_bin" ] ||
						group+=("${bin##*:}")
				done
				ktap_gtest_batch "$case_bin" "${group[@]}"
				batched=$case_bin
			fi
			ms=
			read -r ms 2>/dev/null \
				<"$KTAP_GTEST_DIR/${case_name//\//%}.ms" || :
			KTAP_CASE_MS=$ms ktap_run_case "$n" "$case_name" ktap_gtest_case "$case_name"
			;;
		*) ktap_run_case "$n" "$name" "$name" ;;
		esac
	done
	echo "# totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	rm -rf "$KTAP_DIR"
	[ "$KTAP_FAIL" -eq 0 ]
}
