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
# of BINARY, each reported as its own KTAP case, then one more case,
# BINARY.process_exit, that fails if a GoogleTest process exited otherwise
# than its results say or printed a sanitizer report; a listing that fails
# or lists nothing is one failing case, BINARY.listing.  gtest@ROLE:BINARY
# runs them only in the guest whose $SROCE_ROLE is ROLE (a device-local
# binary in a two-guest suite); the other guest lists the same cases and
# skips each as one-sided, so that both plans match and selftests/run counts
# each case once.  ktap_main prints the plan first, one result line per
# case, and exits 0 only if nothing failed.  A marker is written to the
# kernel log before each case so that dmesg_since_case shows what the case
# caused.

# (KTAP_KMSG: where the case markers go, /dev/kmsg unless a host test says)
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

# only_in_guest ROLE: the rest of this case runs in guest ROLE only; in the
# other guest of a two-guest suite the case is a one-sided skip, which
# selftests/run folds into ROLE's result (lib/collect.sh).  Call it where
# this guest has nothing left to assert, after the steps it shares (its
# sends, its barriers), so that those still fail the case.
only_in_guest() {
	[ "${SROCE_ROLE:-a}" = "$1" ] || skip "one-sided: asserted in guest $1"
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
		echo "sroce-selftest: begin $name" >"${KTAP_KMSG:-/dev/kmsg}" 2>/dev/null || true
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

# gtest_cases BINARY: the Suite.Case names of a GoogleTest binary; fails
# (saying why on stderr) if the listing fails or lists nothing.
gtest_cases() {
	local list rc
	list=$("$1" --gtest_list_tests)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		printf '%s\n' "$list" >&2
		echo "$1 --gtest_list_tests exited with status $rc" >&2
		return 1
	fi
	list=$(printf '%s\n' "$list" | awk '
		/^[^ ]/ { suite = $1; next }
		/^  /   { print suite $1 }')
	if [ -z "$list" ]; then
		echo "$1 --gtest_list_tests listed no case" >&2
		return 1
	fi
	printf '%s\n' "$list"
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
		# (a failed parameterized case: "[  FAILED  ] P/S.C/0, where
		# GetParam() = 2 (30 ms)")
		cur != "" && $1 == "[" && $3 == "]" &&
		($4 == cur || ($2 == "FAILED" && $4 == cur ",")) &&
		($2 == "OK" || $2 == "FAILED" || $2 == "SKIPPED") {
			print > out
			close(out)
			ms = $(NF - 1)
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

# What a sanitizer prints (ASan, LSan, TSan, MSan, UBSan's "runtime error")
KTAP_SANITIZER_ERE='(ERROR|WARNING|SUMMARY): [A-Za-z]*Sanitizer|: runtime error: '

# _ktap_gtest_exit_check BINARY STATUS DIED CASE...: after one process ran
# CASEs (DIED: the case it died in, if any), add to $KTAP_GTEST_DIR/.exit-NAME
# what is wrong with how it ended: GoogleTest exits 1 if a case failed and 0
# otherwise, so any other status of a process that did not die in a case
# (LeakSanitizer's report at exit, a crash in a destructor) is a failure, and
# so is a sanitizer report anywhere in its output (UBSan lets a case pass).
_ktap_gtest_exit_check() {
	local bin=$1 rc=$2 died=$3 c r want=0
	local f=$KTAP_GTEST_DIR/.exit-${1##*/} log=$KTAP_GTEST_DIR/run.log
	shift 3
	if [ -z "$died" ]; then
		for c in "$@"; do
			r=
			{ read -r r <"$KTAP_GTEST_DIR/${c//\//%}.rc"; } 2>/dev/null
			[ "$r" != 1 ] || want=1
		done
		[ "$rc" = "$want" ] ||
			echo "$bin exited with status $rc after its last case (expected $want)" >>"$f"
	fi
	if grep -Eq -- "$KTAP_SANITIZER_ERE" "$log"; then
		echo "$bin printed a sanitizer report:" >>"$f"
		grep -E -A5 -- "$KTAP_SANITIZER_ERE" "$log" >>"$f"
	fi
	return 0
}

# ktap_gtest_exit BINARY: the BINARY.process_exit case
ktap_gtest_exit() {
	local f=$KTAP_GTEST_DIR/.exit-${1##*/}
	if [ -s "$f" ]; then
		cat "$f"
		return 1
	fi
	echo "$1: every process exited as its results said, no sanitizer report"
}

# ktap_gtest_nolist BINARY: the BINARY.listing case: why there is no case
ktap_gtest_nolist() {
	cat "$KTAP_DIR/.list-${1##*/}"
	return 1
}

# ktap_gtest_batch BINARY CASE...: run the CASEs, leaving their results in
# $KTAP_GTEST_DIR as _ktap_gtest_split describes, and how the processes
# ended as _ktap_gtest_exit_check does.
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
		_ktap_gtest_exit_check "$bin" "$rc" "$died" "${want[@]}"
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

# _ktap_gtest_list gtest[@ROLE]:BINARY: add BINARY's cases to ktap_main's
# list: gtest:BINARY:CASE each, then gtest-exit:BINARY; or, in a guest other
# than ROLE, peer:ROLE:NAME for each of these; or one failing case if BINARY
# is missing or lists no case.
_ktap_gtest_list() {
	local bin=${1#*:} role='' prefix=gtest names name
	case $1 in gtest@*) role=${1%%:*}; role=${role#gtest@} ;; esac
	[ -z "$role" ] || [ "${SROCE_ROLE:-a}" = "$role" ] || prefix=peer:$role
	if [ ! -x "$bin" ]; then
		cases+=("missing:$bin")
		return
	fi
	if ! names=$(gtest_cases "$bin" 2>"$KTAP_DIR/.list-${bin##*/}"); then
		cases+=("nolist:$bin")
		return
	fi
	for name in $names; do
		cases+=("$prefix:$bin:$name")
	done
	if [ "$prefix" = gtest ]; then
		cases+=("gtest-exit:$bin")
	else
		cases+=("$prefix:$bin:${bin##*/}.process_exit")
	fi
}

ktap_main() {
	local n=0 name bin batched='' case_bin case_name ms cases=() group=()
	KTAP_DIR=$(mktemp -d)
	KTAP_GTEST_DIR=$KTAP_DIR/gtest
	mkdir "$KTAP_GTEST_DIR"
	for name in "$@"; do
		case $name in
		gtest:*|gtest@*:*) _ktap_gtest_list "$name" ;;
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
		nolist:*)
			bin=${name#nolist:}
			ktap_run_case "$n" "${bin##*/}.listing" ktap_gtest_nolist "$bin"
			;;
		gtest-exit:*)
			bin=${name#gtest-exit:}
			ktap_run_case "$n" "${bin##*/}.process_exit" ktap_gtest_exit "$bin"
			;;
		peer:*)
			name=${name#peer:}
			KTAP_CASE_MS=0 ktap_run_case "$n" "${name##*:}" \
				skip "one-sided: runs in guest ${name%%:*} only"
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
