#!/usr/bin/env bash
# The demo: builds Trellis, starts a throwaway PostgreSQL, and from Elixir
# (elixir/examples/demo.exs) defines a projection, a GROUP BY over a join and
# a transform over that GROUP BY, follows live writes with their measured
# freshness, shows status/2, quarantines a bad row and heals it, and runs a
# self_check/3 of each target. Once built it takes well under 2 minutes.
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

work="$(mktemp -d)"
trap 'exec 7>&- 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkfifo "$work/stdin"
# The testkit tears its cluster down when its stdin closes (fd 7 below).
"$root/build/test/testkit/trellis-testkit" <"$work/stdin" >"$work/url" &
exec 7>"$work/stdin"
for _ in $(seq 1 300); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -n1 "$work/url")"
[ -n "$url" ] || { echo "demo: the testkit did not start" >&2; exit 1; }

export TRELLIS_PORT_PATH="$root/build/port/trellis-port"
cd "$root/elixir"
# The demo writes rows with the small SQL client of the test support code.
TRELLIS_DEMO_URL="$url" MIX_ENV=test mix run examples/demo.exs
