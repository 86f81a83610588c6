#!/usr/bin/env bash
# The demo: builds Trellis, starts a throwaway PostgreSQL, and from Elixir
# defines a transform, writes rows, and shows the target following them.
set -euo pipefail
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
