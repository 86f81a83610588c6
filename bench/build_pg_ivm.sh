#!/usr/bin/env bash
# Builds pg_ivm (the synchronous anchor of group_bench's write-cost row) from
# the anchors' source in a scratch copy and installs it into the server's
# library and extension folders. Needs root and postgresql-server-dev-15.
#   bash bench/build_pg_ivm.sh [SOURCE_DIR]
set -euo pipefail
# The anchors sit beside the repository (../shared/anchors) on the team's
# machines; worktrees are one level deeper.
repo=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-}
for guess in "$repo/../shared/anchors/pg_ivm" "$repo/../../shared/anchors/pg_ivm"; do
  [ -n "$src" ] || [ ! -f "$guess/pg_ivm.control" ] || src=$guess
done
src=${src:-$repo/../shared/anchors/pg_ivm}
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
[ -f "$src/pg_ivm.control" ] || { echo "no pg_ivm source at $src" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work"
make -C "$work" USE_PGXS=1 PG_CONFIG="$pg_config" -j2 >/dev/null
make -C "$work" USE_PGXS=1 PG_CONFIG="$pg_config" install >/dev/null
echo "pg_ivm installed into $("$pg_config" --pkglibdir)"
