#!/usr/bin/env bash
# Checks that a transform's kind is decided in the plan room only
# (engine/README.md, "Plans and workers"): outside engine/src/plan/,
#  1. no code spells a kind's catalog name ("projection", "group_by",
#     "join", in double or single quotes) to compare or match it, and
#  2. no code outside the catalog's model names a TransformKind value;
# it asks the transform's plan instead. The names are defined once, in
# engine/src/catalog/transform_kind.h. Not checked, and why:
#  - engine/src/grammar/: below the catalog, it cannot see a kind; "join"
#    there is the SQL keyword;
#  - engine/src/catalog/migration_*.cc: steps of the catalog's history,
#    run once and never edited (step 1's CHECK lists the names);
#  - comments (from // to the end of a line).
# No exceptions: a grouped join's hidden part, once found by its group's
# kind, is a stage recorded in the catalog (catalog step 15).
# Prints each violation; exits 1 on any.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

status=0
names='"(projection|group_by|join)"'"|'(projection|group_by|join)'"

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
    engine/src/plan/* | engine/src/grammar/* | engine/src/catalog/migration_*.cc) continue ;;
    engine/src/catalog/transform_kind.h) continue ;;
  esac
  echo "$hit"
  echo "  ^ a transform kind's name outside engine/src/plan/: ask the plan (plan/transform_plan.h)"
  status=1
done < <(code_lines "$names")

while IFS= read -r hit; do
  file="${hit%%:*}"
  case "$file" in
    engine/src/plan/* | engine/src/catalog/transform_kind.h | engine/src/catalog/model.*) continue ;;
  esac
  echo "$hit"
  echo "  ^ a decision by TransformKind outside engine/src/plan/: ask the plan (plan/transform_plan.h)"
  status=1
done < <(code_lines 'TransformKind::')

if [[ $status -eq 0 ]]; then
  # The check must be able to fail: it finds the names where they are defined.
  if ! grep -qE "$names" engine/src/catalog/transform_kind.h; then
    echo "check_kinds.sh: no kind name found in engine/src/catalog/transform_kind.h; is the pattern stale?"
    status=1
  fi
fi
exit $status
