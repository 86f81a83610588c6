#!/usr/bin/env bash
# The fleet soak (bench/README.md, "Fleet soak"): three BEAM nodes, one
# durable PostgreSQL from the testkit, 8 writers, faults and an operator's
# statements for SOAK_MINUTES (default 3), then the final checks.
#   bench/soak/run.sh            # the 3-minute variant (CI)
#   SOAK_MINUTES=30 SOAK_FAULT_EVERY_MS=45000 bench/soak/run.sh
# Needs build/port/trellis-port and build/test/testkit/trellis-testkit.
# Keeps its logs, node logs and port captures in SOAK_DIR (a new directory
# under $TMPDIR by default) and prints where.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

export TRELLIS_PORT_PATH="${TRELLIS_PORT_PATH:-$root/build/port/trellis-port}"
export TRELLIS_TESTKIT_PATH="${TRELLIS_TESTKIT_PATH:-$root/build/test/testkit/trellis-testkit}"
for binary in "$TRELLIS_PORT_PATH" "$TRELLIS_TESTKIT_PATH"; do
  [[ -x $binary ]] || { echo "soak: $binary is missing; build it first (ninja -C build)" >&2; exit 1; }
done

if [[ -z ${SOAK_DIR:-} ]]; then
  SOAK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/trellis-soak-XXXXXX")"
fi
export SOAK_DIR
echo "soak: logs in $SOAK_DIR"

cd "$root/elixir"
MIX_ENV=test mix compile >"$SOAK_DIR/compile.log" 2>&1 ||
  { echo "soak: mix compile failed:" >&2; tail -20 "$SOAK_DIR/compile.log" >&2; exit 1; }
status=0
# A node killed and started again under its old name must not make
# `global` cut the conductor off from the others.
MIX_ENV=test elixir --sname "soak$$" --cookie "soak$$$RANDOM" \
  --erl "-kernel prevent_overlapping_partitions false" -S mix run --no-compile --no-start \
  "$root/bench/soak/conductor.exs" 2>&1 | tee "$SOAK_DIR/conductor.log" || status=$?
# A conductor stopped from outside (SIGTERM ends a BEAM with status 0) has
# written no result: that is a failure too.
if ((status == 0)) && [[ ! -s $SOAK_DIR/result.json ]]; then
  echo "soak: the conductor ended without writing $SOAK_DIR/result.json" >&2
  status=1
fi
if ((status)); then
  echo "soak: FAILED (status $status); the last lines of each node's log:" >&2
  for log in "$SOAK_DIR"/node*.log; do
    [[ -e $log ]] && { echo "--- $log" >&2; tail -15 "$log" >&2; }
  done
fi
exit "$status"
