#!/usr/bin/env bash
# Drives elixir/examples/ecto_app, a small Ecto app, with real mix commands
# against a throwaway testkit cluster: Trellis.Migration through
# ecto.migrate / ecto.rollback, mix trellis.dump as the ecto.dump alias,
# ecto.load into a fresh database, telemetry, and paren-free formatting.
# Ecto and its siblings come from a source mirror (the Hex registry is out of
# reach): $TRELLIS_HEXDEPS when it is set (and then only there), else
# shared/hexdeps beside the repository, else /work/shared/hexdeps. Without a
# complete one the stage fails under CI (TRELLIS_CI=1, as .ci/run sets it),
# naming what is missing, and elsewhere says SKIPPED and why
# (scripts/lib/skip.sh).
# Needs build/port/trellis-port and build/test/testkit/trellis-testkit.
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/skip.sh"
app="$root/elixir/examples/ecto_app"

# What elixir/examples/ecto_app/mix.exs takes from the mirror.
mirrored=(ecto_sql ecto postgrex db_connection decimal telemetry jason)
if [[ -n "${TRELLIS_HEXDEPS:-}" ]]; then
  candidates=("$TRELLIS_HEXDEPS")
else
  candidates=("$root/../shared/hexdeps" /work/shared/hexdeps)
fi
hexdeps=""
for candidate in "${candidates[@]}"; do
  if [[ -d "$candidate/ecto_sql" ]]; then
    hexdeps="$(cd "$candidate" && pwd)"
    break
  fi
done
if [[ -z "$hexdeps" ]]; then
  skip_stage "the Ecto host app (scripts/test-ecto.sh)" \
    "no Ecto source mirror (a directory holding ${mirrored[*]}) at $(printf '%s or ' "${candidates[@]}" | sed 's/ or $//')" \
    "set TRELLIS_HEXDEPS to such a mirror"
fi
absent=()
for package in "${mirrored[@]}"; do [[ -d "$hexdeps/$package" ]] || absent+=("$package"); done
if ((${#absent[@]})); then
  skip_stage "the Ecto host app (scripts/test-ecto.sh)" \
    "the Ecto source mirror $hexdeps lacks ${absent[*]}" "add them to it, or set TRELLIS_HEXDEPS to a complete one"
fi

export TRELLIS_HEXDEPS="$hexdeps" MIX_ENV=test
export TRELLIS_PORT_PATH="$root/build/port/trellis-port"
# The testkit's cluster lives until its stdin closes, i.e. until this script exits.
coproc TESTKIT { exec "$root/build/test/testkit/trellis-testkit"; }
read -r url <&"${TESTKIT[0]}"
export DATABASE_URL="${url%/*}/ecto_app"
scratch="$app/tmp"
rm -rf "$scratch" && mkdir -p "$scratch"
cd "$app"

step() { echo "-- $*"; }
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
# must_fail PATTERN CMD...: CMD exits non-zero and its output matches PATTERN.
must_fail() {
  local pattern="$1" out="$scratch/out"
  shift
  if "$@" >"$out" 2>&1; then fail "'$*' succeeded; expected it to be refused"; fi
  grep -Eq "$pattern" "$out" || {
    cat "$out" >&2
    fail "'$*' failed without saying /$pattern/"
  }
}
# phase NAME [ARGS]: the host app's tests tagged `phase: :NAME`.
phase() { mix test --only "phase:$1" --warnings-as-errors "${@:2}"; }

step "compile (deps cached in $app/_build)"
mix compile --warnings-as-errors
# trellis_pg must compile without a warning beside real Ecto and :telemetry
# too, where Elixir checks calls into applications it does not declare.
mix deps.compile trellis_pg --force >"$scratch/out" 2>&1 || fail "$(cat "$scratch/out")"
if grep -q "warning:" "$scratch/out"; then fail "trellis_pg warns beside Ecto: $(cat "$scratch/out")"; fi

step "ecto.create, ecto.migrate: transforms defined, live once the app writes through the Repo"
mix ecto.create
# Before any migration used Trellis there is no catalog: the dump says so.
mix ecto.dump -d "$scratch/before.sql" | tee "$scratch/out"
grep -q "has no Trellis catalog yet: no definitions appended" "$scratch/out" ||
  fail "a dump before the first Trellis migration did not say it appended nothing"
mix ecto.migrate
phase migrated

step "ecto.rollback --step 2: down/0 resumes, pauses and drops"
mix ecto.rollback --step 2
phase rolled_back
mix ecto.migrate

step "the guard: migration 3 runs again over what it made and leaves it as it is"
psql -q "$DATABASE_URL" -c "DELETE FROM schema_migrations WHERE version = 20260101000003"
mix ecto.migrate 2>&1 | tee "$scratch/out"
grep -q 'trellis define .*gadget_labels.* => {:already_defined, "gadget_labels"}' "$scratch/out" ||
  fail "the guarded define did not report already_defined"

step "refused migrations apply nothing"
must_fail 'add `@disable_ddl_transaction true`' mix ecto.migrate --migrations-path priv/bad_migrations/no_ddl_flag
must_fail "cannot run inside the migration's transaction" mix ecto.migrate --migrations-path priv/bad_migrations/in_transaction
must_fail 'define up/0 and down/0 instead' mix ecto.migrate --migrations-path priv/bad_migrations/change
must_fail 'already exists as `TRANSFORM gadget_labels' mix ecto.migrate --migrations-path priv/bad_migrations/guard_mismatch
phase refused

step "ecto.dump (the trellis.dump alias): DDL and definitions in one file"
mix ecto.dump --prefix public --prefix trellis
dump=priv/repo/structure.sql
grep -q '^CREATE TABLE public.widgets' "$dump" || fail "$dump lacks the widgets table"
grep -q '^CREATE TABLE public.widget_prices' "$dump" || fail "$dump lacks the widget_prices target"
grep -q '^INSERT INTO "trellis".transforms .*'"'widget_prices'" "$dump" || fail "$dump lacks the definitions"
grep -q '^INSERT INTO public."schema_migrations"' "$dump" || fail "$dump lacks schema_migrations"
if grep -q '^CREATE SCHEMA public;' "$dump"; then fail "$dump has a CREATE SCHEMA public that ecto.load refuses"; fi
mix ecto.dump -q --prefix public --prefix trellis -d "$scratch/quiet.sql" >"$scratch/out" 2>&1
[[ ! -s "$scratch/out" ]] || fail "mix ecto.dump -q printed: $(cat "$scratch/out")"
# pg_dump's \restrict lines carry a random key; everything else must match.
unkeyed() { grep -v '^\\\(un\)\?restrict ' "$1"; }
cmp -s <(unkeyed "$dump") <(unkeyed "$scratch/quiet.sql") || fail "-d wrote something else than the default path got"
must_fail 'leave out \["trellis"\].*--prefix trellis' mix ecto.dump --prefix public -d "$scratch/refused.sql"
[[ ! -e "$scratch/refused.sql" ]] || fail "a refused dump wrote $scratch/refused.sql"
phase dump_race

step "ecto.drop, ecto.create, ecto.load, then the app: every target rebuilt"
mix ecto.drop
mix ecto.create
mix ecto.load
mix ecto.migrate 2>&1 | tee "$scratch/out"
grep -q "Migrations already up" "$scratch/out" || fail "ecto.migrate after ecto.load ran migrations again"
phase loaded_before_start --no-start
phase loaded

step "mix format --check-formatted keeps the helpers free of parentheses"
mix format --check-formatted
# Without :trellis_pg's exported formatter settings the same files would
# change, so the check above is the export at work.
cat >"$scratch/no_trellis.formatter.exs" <<'EOF'
[import_deps: [:ecto, :ecto_sql], inputs: ["priv/repo/migrations/*.exs"]]
EOF
must_fail 'not formatted' mix format --check-formatted --dot-formatter "$scratch/no_trellis.formatter.exs"

echo "-- the Ecto host app passed"
