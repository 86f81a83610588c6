#!/usr/bin/env bash
# Stages the trellis_pg Hex package: a directory holding exactly the files the
# `package: [files: ...]` list of elixir/mix.exs names, made from this
# repository (the Elixir code from elixir/, the C++ tree for source builds as
# native/, LICENSE) and the given checksum file. With --bundle <dir>, the
# release binaries in <dir> go in too, as bin/ (the bundled package). Run
# `mix hex.publish` in the staged directory to publish it.
#
# Usage: scripts/stage-package.sh <checksum-file> <dest-dir> [--bundle <bin-dir>]
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
checksum="${1:?usage: stage-package.sh <checksum-file> <dest-dir> [--bundle <bin-dir>]}"
dest="${2:?usage: stage-package.sh <checksum-file> <dest-dir> [--bundle <bin-dir>]}"
bundle=""
if [ "${3:-}" = --bundle ]; then bundle="${4:?--bundle needs a directory}"; fi

rm -rf "$dest"
mkdir -p "$dest"
if [ -n "$bundle" ]; then
  mkdir -p "$dest/bin"
  cp "$bundle"/trellis-port-* "$dest/bin/"
fi
# The list as mix.exs computes it for this directory (bin/ only when bundled).
cp "$root/elixir/mix.exs" "$dest/mix.exs"
files="$(cd "$dest" && MIX_EXS=mix.exs mix run --no-compile --no-start --no-deps-check \
  -e 'IO.puts(Enum.join(Mix.Project.config()[:package][:files], "\n"))')"
rm -rf "$dest/_build" "$dest/deps"

while IFS= read -r entry; do
  case "$entry" in
    native)
      mkdir -p "$dest/native"
      cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/protocol" "$root/engine" "$root/port" \
        "$root/LICENSE" "$dest/native/"
      ;;
    LICENSE) cp "$root/LICENSE" "$dest/LICENSE" ;;
    checksum-trellis_pg.exs) cp "$checksum" "$dest/checksum-trellis_pg.exs" ;;
    bin | mix.exs) ;;
    *) cp -r "$root/elixir/$entry" "$dest/$entry" ;;
  esac
done <<<"$files"
echo "$dest"
