#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the libFuzzer targets of the protocol core with clang into
# build/fuzz and run each for SECONDS (default 60) on the seed corpus in
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
for fuzzer in fuzz_pkt; do
	echo "fuzz: $fuzzer for ${secs}s"
	jobs=()
	if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
		jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
	fi
	"$build/$fuzzer" -max_total_time="$secs" -print_final_stats=1 \
		"${jobs[@]}" -artifact_prefix="$build/artifacts/$fuzzer-" \
		"$corpus" || status=$?
	if [ "$status" -ne 0 ]; then
		echo "fuzz: $fuzzer failed (exit $status), see $build/artifacts/" >&2
		exit "$status"
	fi
done
echo "fuzz: no failures"
