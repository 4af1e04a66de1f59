#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the libFuzzer targets of the protocol core with clang into
# build/fuzz and run them for SECONDS of CPU in all (default 60, shared
# between them: fuzz_pkt, the receive-path validator, gets two thirds,
# fuzz_decide, the RC/UC transport decisions, the rest) on the seed corpus
# in userspace/fuzz/seeds (hex files).  With two CPUs or more the two run at
# the same time, each with its own share, so the step takes two thirds of
# SECONDS; their outputs follow each other in the log.  Exits non-zero if
# the build fails or a fuzzer finds a crash, a sanitizer report, a failed
# property or a leak; the reproducer is left in build/fuzz/artifacts/.
#
#   userspace/fuzz/run.sh [SECONDS]
#
# Environment: SROCE_BUILD (default <repo>/build), CC/CXX (default clang,
# clang++), FUZZ_JOBS (parallel fuzzing processes, default 1; their budget
# is wall time), FUZZ_WALL_FACTOR (wall-clock backstop as a multiple of the
# CPU budget, default 40; 0 for none).
set -euo pipefail

secs=${1:-60}
case "$secs" in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${SROCE_BUILD:-$top/build}/fuzz
cc=${CC:-clang}
cxx=${CXX:-clang++}

if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
	echo "fuzz: $cc/$cxx not found (apt-get install -y clang llvm)" >&2
	exit 1
fi

CC=$cc CXX=$cxx cmake -S "$top/userspace/fuzz" -B "$build" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"

corpus=$build/corpus
mkdir -p "$corpus" "$build/artifacts"
# Seeds are hex so they stay reviewable in git; libFuzzer wants raw bytes.
for f in "$top"/userspace/fuzz/seeds/*.hex; do
	grep -v '^#' "$f" | tr -d ' \n' | xxd -r -p >"$corpus/seed-$(basename "$f" .hex)"
done

status=0
# fuzz_decide's inputs are a 12-byte state before the packet: its corpus is
# the same seeds behind 12 zero bytes, then its own finds.
dcorpus=$build/corpus-decide
mkdir -p "$dcorpus"
for f in "$corpus"/seed-*; do
	{ head -c 12 /dev/zero; cat "$f"; } >"$dcorpus/${f##*/}"
done

pkt_secs=$(( secs * 2 / 3 ))
[ "$pkt_secs" -ge 1 ] || pkt_secs=1
decide_secs=$(( secs - pkt_secs ))
[ "$decide_secs" -ge 1 ] || decide_secs=1

# fuzz FUZZER SECONDS CORPUS: one libFuzzer run, its output in
# $build/FUZZER.log.  The budget is CPU time, not wall time: make check
# fuzzes at nice 19 beside the guests, where a wall-clock budget would buy
# whatever CPU they leave.  libFuzzer has no CPU limit of its own, so
# cpu_watch stops it the way libFuzzer's -max_total_time does (SIGUSR1: a
# graceful exit with its final stats); the wall-clock limit is only a
# backstop, and a run it ends short of its CPU fails.  With FUZZ_JOBS the
# work is in forked workers, so the budget is wall time as libFuzzer has it.
fuzz() {
	local jobs=() limit=$2 pid rc=0 watch='' used
	if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
		jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
	else
		limit=$(( $2 * ${FUZZ_WALL_FACTOR:-40} ))
	fi
	echo "fuzz: $1 for ${2}s of CPU" >"$build/$1.log"
	"$build/$1" -max_total_time="$limit" -print_final_stats=1 \
		"${jobs[@]}" -artifact_prefix="$build/artifacts/$1-" \
		"$3" >>"$build/$1.log" 2>&1 &
	pid=$!
	if [ ${#jobs[@]} -eq 0 ]; then
		cpu_watch "$pid" "$2" "$build/$1.cpu" &
		watch=$!
	fi
	wait "$pid" || rc=$?
	[ -z "$watch" ] && return "$rc"
	kill "$watch" 2>/dev/null || true
	wait "$watch" 2>/dev/null || true
	used=$(cat "$build/$1.cpu" 2>/dev/null || echo 0)
	if [ "$rc" -eq 0 ] && [ "$used" -lt "$2" ]; then
		echo "fuzz: $1 had $used of its ${2}s of CPU in ${limit}s" >>"$build/$1.log"
		rc=1
	fi
	return "$rc"
}

# cpu_watch PID SECONDS FILE: SIGUSR1 to PID once it has used SECONDS of CPU
# (user + system); its CPU seconds so far are kept in FILE.
cpu_watch() {
	local hz stat ticks used=0
	hz=$(getconf CLK_TCK)
	echo 0 >"$3"
	while stat=$(cat "/proc/$1/stat" 2>/dev/null); do
		# fields after the ")" that ends the command name: utime is 12th, stime 13th
		ticks=$(awk '{ print $12 + $13 }' <<<"${stat##*) }")
		used=$(( ticks / hz ))
		echo "$used" >"$3"
		if [ "$used" -ge "$2" ]; then
			kill -USR1 "$1" 2>/dev/null
			return 0
		fi
		sleep 1
	done
}

# report FUZZER STATUS: its log, and the verdict if it failed
report() {
	cat "$build/$1.log"
	if [ "$2" -ne 0 ]; then
		echo "fuzz: $1 failed (exit $2), see $build/artifacts/" >&2
		status=$2
	fi
}

pkt_status=0
decide_status=0
if [ "$(nproc)" -ge 2 ]; then
	fuzz fuzz_pkt "$pkt_secs" "$corpus" &
	pkt_pid=$!
	fuzz fuzz_decide "$decide_secs" "$dcorpus" || decide_status=$?
	wait "$pkt_pid" || pkt_status=$?
else
	fuzz fuzz_pkt "$pkt_secs" "$corpus" || pkt_status=$?
	fuzz fuzz_decide "$decide_secs" "$dcorpus" || decide_status=$?
fi
report fuzz_pkt "$pkt_status"
report fuzz_decide "$decide_status"
[ "$status" -eq 0 ] || exit "$status"
echo "fuzz: no failures"
