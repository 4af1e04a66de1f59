#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the libFuzzer targets of the protocol core with clang into
# build/fuzz and run them for SECONDS in all (default 60, shared between
# them: fuzz_pkt, the receive-path validator, gets two thirds, fuzz_decide,
# the RC/UC transport decisions, the rest) on the seed corpus in
# userspace/fuzz/seeds (hex files).  Exits non-zero if the build fails or a
# fuzzer finds a crash, a sanitizer report, a failed property or a leak;
# the reproducer is left in build/fuzz/artifacts/.
#
#   userspace/fuzz/run.sh [SECONDS]
#
# Environment: SROCE_BUILD (default <repo>/build), CC/CXX (default clang,
# clang++), FUZZ_JOBS (parallel fuzzing processes, default 1).
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
for spec in "fuzz_pkt:$pkt_secs:$corpus" "fuzz_decide:$decide_secs:$dcorpus"; do
	IFS=: read -r fuzzer fsecs fcorpus <<<"$spec"
	echo "fuzz: $fuzzer for ${fsecs}s"
	jobs=()
	if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
		jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
	fi
	"$build/$fuzzer" -max_total_time="$fsecs" -print_final_stats=1 \
		"${jobs[@]}" -artifact_prefix="$build/artifacts/$fuzzer-" \
		"$fcorpus" || status=$?
	if [ "$status" -ne 0 ]; then
		echo "fuzz: $fuzzer failed (exit $status), see $build/artifacts/" >&2
		exit "$status"
	fi
done
echo "fuzz: no failures"
