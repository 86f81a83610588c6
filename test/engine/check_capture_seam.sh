#!/usr/bin/env bash
# Checks that captured changes are reached through the capture feed only
# (spec/engine.md "Capture feeds"): outside engine/src/capture/, no code
# names the trigger feed's buffer, the catalog's `capture` table
# (`{schema}.capture`, `"schema".capture`, sql::Qualified(schema,
# "capture")); it asks capture::CatalogFeed instead. Not checked, and why:
#  - engine/src/catalog/migration_*.cc: steps of the catalog's history,
#    which create and alter the table, run once and never edited;
#  - comments (from // to the end of a line).
# Prints each violation; exits 1 on any.
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"

status=0
table='\.capture([^_[:alnum:]]|$)|"capture"\)'

# Source lines matching $1 in their code, as file:line:text: a comment
# (from // to the end of the line) is not code.
code_lines() {
  grep -rnE --include='*.h' --include='*.cc' "$1" engine/src port/src engine/include |
    while IFS= read -r hit; do
      local where="${hit%%:*}:" rest="${hit#*:}"
      where+="${rest%%:*}"
      local text="${rest#*:}"
      if grep -qE "$1" <<<"${text%%//*}"; then echo "$where:$text"; fi
    done || true
}

while IFS= read -r hit; do
  file="${hit%%:*}"
  case "$file" in
    engine/src/capture/* | engine/src/catalog/migration_*.cc) continue ;;
  esac
  echo "$hit"
  echo "  ^ the capture table named outside engine/src/capture/: ask the feed (capture/feed.h)"
  status=1
done < <(code_lines "$table")

if [[ $status -eq 0 ]]; then
  # The check must be able to fail: it finds the table where the feed reads it.
  if ! grep -qE "$table" engine/src/capture/trigger_feed.cc; then
    echo "check_capture_seam.sh: the capture table is not found in engine/src/capture/trigger_feed.cc; is the pattern stale?"
    status=1
  fi
fi
exit $status
