#!/usr/bin/env bash
# Builds and runs the protocol libFuzzer target (see README.md).
#   FUZZ_SECONDS=600 test/protocol/fuzz.sh   # run longer (default 60 s)
#   FUZZ_JOBS=2 ...                          # parallel fuzzing jobs (default 1)
# Exits non-zero when the fuzzer finds a crash, leak, sanitizer report or a
# failed check; the reproducer is left in build-fuzz/fuzz-findings/.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/strict.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-1}"

# Only the protocol library and its fuzz targets are built; the top-level
# configure still needs the other components' dependencies to be present.
CXX=clang++-14 CC=clang-14 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRELLIS_FUZZ=ON -DTRELLIS_TESTS=ON >/dev/null
ninja -C "$build" protocol_fuzz protocol_fuzz_seeds

corpus="$build/fuzz-corpus"   # grows across runs: libFuzzer adds what it finds
seeds="$build/fuzz-seeds"     # rewritten from spec/conformance on every run
findings="$build/fuzz-findings"
mkdir -p "$corpus" "$findings"
rm -rf "$seeds"
"$build/test/protocol/protocol_fuzz_seeds" "$root/spec/conformance" "$seeds"

args=(-max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10
      -artifact_prefix="$findings/" -print_final_stats=1)
if [[ "$jobs" -gt 1 ]]; then
  args+=(-jobs="$jobs" -workers="$jobs")
fi

# libFuzzer prints a line per new input; keep that in a log and show its
# tail, or all of it when there is a finding (a non-zero exit).
log="$build/fuzz.log"
if ! "$build/test/protocol/protocol_fuzz" "${args[@]}" "$corpus" "$seeds" >"$log" 2>&1; then
  cat "$log"
  echo "fuzz: FINDING, see $findings/ and $log" >&2
  exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|INFO: .*corpus)' "$log" || tail -n 5 "$log"
echo "fuzz: no findings in ${seconds}s"
