# shellcheck shell=bash
# Sourced first by every script in scripts/ and test/packaging/: stop at the
# first failing command and say which one. Under errexit alone a failing
# command ends a script without a word (a failing `$(...)` in an assignment
# too, with inherit_errexit), leaving CI a bare exit status; the ERR trap
# names the script, the line and the command. -E hands the trap on to
# functions, subshells and command substitutions. Commands whose failure a
# script handles (`if`, `||`, `&&`, `!`) trigger neither errexit nor the trap.
set -Eeuo pipefail
shopt -s inherit_errexit
# One line: a line break inside the trap's text would shift $LINENO.
trap 'trellis_failed=$?; echo "${BASH_SOURCE[0]##*/}: line $LINENO: \"$BASH_COMMAND\" failed (exit $trellis_failed)" >&2' ERR
