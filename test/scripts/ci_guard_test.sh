#!/usr/bin/env bash
# No stage passes without running under CI, and a failing script says where.
#   1. scripts/test-ecto.sh with no Ecto mirror: under TRELLIS_CI=1 it fails,
#      naming the mirror's place and packages; without it, it skips loudly
#      (exit 0, "SKIPPED") and records itself for scripts/test.sh's summary;
#   2. a mirror that lacks packages fails under CI, naming them;
#   3. scripts/lib/strict.sh's ERR trap names the script, line and command of
#      a failure, also one inside $(...).
# Needs nothing built: test-ecto.sh stops before it starts a cluster.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "ci_guard_test: FAILED: $*" >&2
  exit 1
}
# expect WHAT STATUS PATTERN: the last run exited STATUS and its stderr
# ($work/err) matches the extended regex PATTERN.
expect() {
  [[ "$status" == "$2" ]] || fail "$1: exit $status, expected $2; stderr:"$'\n'"$(cat "$work/err")"
  grep -Eq "$3" "$work/err" || fail "$1: stderr does not match /$3/:"$'\n'"$(cat "$work/err")"
  echo "ci_guard_test: $1: ok"
}
# run_ecto ENV...: scripts/test-ecto.sh under exactly these settings.
run_ecto() {
  status=0
  env -u TRELLIS_CI -u TRELLIS_SKIPPED_STAGES "$@" timeout 60 "$root/scripts/test-ecto.sh" \
    >"$work/out" 2>"$work/err" || status=$?
}

empty="$work/no-mirror"
mkdir -p "$empty"

run_ecto TRELLIS_CI=1 TRELLIS_HEXDEPS="$empty"
expect "no mirror under CI fails" 1 \
  "FAILED: the Ecto host app .* cannot run under CI.*no Ecto source mirror \(a directory holding ecto_sql ecto postgrex .*\) at $empty"
grep -q "Fix: set TRELLIS_HEXDEPS" "$work/err" || fail "no mirror under CI: the fix is not named"

run_ecto TRELLIS_CI=true TRELLIS_HEXDEPS="$empty"
expect "TRELLIS_CI=true counts as CI" 1 "cannot run under CI"

: >"$work/skipped"
run_ecto TRELLIS_HEXDEPS="$empty" TRELLIS_SKIPPED_STAGES="$work/skipped"
expect "no mirror outside CI skips loudly" 0 "SKIPPED: the Ecto host app .* did not run: no Ecto source mirror"
grep -q "^the Ecto host app (scripts/test-ecto.sh): no Ecto source mirror" "$work/skipped" ||
  fail "the skip was not recorded for scripts/test.sh's summary: $(cat "$work/skipped")"

partial="$work/partial-mirror"
mkdir -p "$partial/ecto_sql" "$partial/ecto" "$partial/decimal"
run_ecto TRELLIS_CI=1 TRELLIS_HEXDEPS="$partial"
expect "a partial mirror under CI fails naming what it lacks" 1 \
  "mirror $partial lacks postgrex db_connection telemetry jason"

cat >"$work/failing.sh" <<SH
source "$root/scripts/lib/strict.sh"
echo before
value="\$(echo partial; ls "$work/not-there")"
echo "not reached: \$value"
SH
status=0
bash "$work/failing.sh" >"$work/out" 2>"$work/err" || status=$?
expect "the ERR trap names script, line and command" 2 \
  "^failing.sh: line 3: \"ls \"?$work/not-there\"?\" failed \(exit 2\)"
if grep -q "not reached" "$work/out"; then fail "a failing \$(...) did not stop the script"; fi
