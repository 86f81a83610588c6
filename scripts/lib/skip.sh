# shellcheck shell=bash
# Sourced by the test stages that cannot run without something outside this
# repository (scripts/test-ecto.sh: an Ecto source mirror).
#
# skip_stage STAGE MISSING FIX: the stage cannot run because MISSING is
# absent. Under CI (TRELLIS_CI=1, which .ci/run exports) a stage that does
# not run must not pass: it fails, naming what is missing and the fix.
# Elsewhere it skips loudly and exits 0, and records itself in
# $TRELLIS_SKIPPED_STAGES (when scripts/test.sh set it) so the run's summary
# lists it instead of reading "all suites passed".
skip_stage() {
  local stage="$1" missing="$2" fix="$3" rule
  rule="$(printf '!%.0s' {1..72})"
  if [[ "${TRELLIS_CI:-}" == 1 || "${TRELLIS_CI:-}" == true ]]; then
    printf '%s\nFAILED: %s cannot run under CI (TRELLIS_CI=%s): %s.\nFix: %s.\n%s\n' \
      "$rule" "$stage" "$TRELLIS_CI" "$missing" "$fix" "$rule" >&2
    exit 1
  fi
  printf '%s\nSKIPPED: %s did not run: %s.\nFix: %s. (Under CI, TRELLIS_CI=1, this fails.)\n%s\n' \
    "$rule" "$stage" "$missing" "$fix" "$rule" >&2
  if [[ -n "${TRELLIS_SKIPPED_STAGES:-}" ]]; then
    echo "$stage: $missing" >>"$TRELLIS_SKIPPED_STAGES"
  fi
  exit 0
}
