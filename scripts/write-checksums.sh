#!/usr/bin/env bash
# Writes the package's checksum file (an Elixir map, read as data by
# lib/trellis/port_binary/checksum.ex) for the given binaries, keyed by their
# file names, in name order (so the file depends only on the binaries, not on
# the order they are given in: release.sh and publish.sh must agree).
# Usage: scripts/write-checksums.sh <checksum-file> <binary>...
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
dest="${1:?usage: write-checksums.sh <checksum-file> <binary>...}"
shift
binaries=()
while IFS=$'\t' read -r _ path; do binaries+=("$path"); done < <(
  for binary in "$@"; do printf '%s\t%s\n' "$(basename "$binary")" "$binary"; done | LC_ALL=C sort)
set -- "${binaries[@]}"
{
  echo "%{"
  n=0
  for binary in "$@"; do
    n=$((n + 1))
    sep=","
    [ "$n" -eq "$#" ] && sep=""
    printf '  "%s" => "sha256:%s"%s\n' "$(basename "$binary")" \
      "$(sha256sum "$binary" | cut -d' ' -f1)" "$sep"
  done
  echo "}"
} >"$dest.partial"
mv "$dest.partial" "$dest"
