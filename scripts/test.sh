#!/usr/bin/env bash
# Runs every test: the C++ suites (CTest), a bounded fuzzing run, the
# ExUnit suite through the real trellis-port against a throwaway Postgres,
# the Ecto host app, the packaging stage (release binaries, musl, aarch64,
# installing the package), and a formatting check (clang-format, mix format).
# Each suite starts its own cluster through build/test/testkit/trellis-testkit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

status=0
echo "== C++ tests (CTest)"
(cd "$root/build" && ctest --output-on-failure -j2) || status=1

echo "== Fuzzing the frame reader and decoder (${FUZZ_SECONDS:=60} s)"
FUZZ_SECONDS="$FUZZ_SECONDS" "$root/test/protocol/fuzz.sh" || status=1

echo "== Elixir tests (ExUnit)"
export TRELLIS_PORT_PATH="$root/build/port/trellis-port"
export TRELLIS_TESTKIT_PATH="$root/build/test/testkit/trellis-testkit"
export TRELLIS_REQUIRE_PORT=1
(cd "$root/elixir" && MIX_ENV=test mix test --warnings-as-errors 2>&1) || status=1

echo "== Ecto host app (scripts/test-ecto.sh)"
"$root/scripts/test-ecto.sh" || status=1

echo "== Packaging (scripts/test-packaging.sh)"; "$root/scripts/test-packaging.sh" || status=1

echo "== Formatting (clang-format, mix format)"
(cd "$root" && find protocol engine port test bench \( -name '*.cc' -o -name '*.h' \) -print0 |
  xargs -0 clang-format --dry-run --Werror) || status=1
(cd "$root/elixir" && mix format --check-formatted) || status=1

if ((status)); then echo "== FAILED" >&2; else echo "== all suites passed"; fi
exit "$status"
