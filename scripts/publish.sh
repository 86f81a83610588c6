#!/usr/bin/env bash
# The last step of a release (RELEASING.md): writes the package's checksum
# file from the binaries <base-url> serves, so the package vouches for exactly
# what users will download, then stages the package to publish.
#
# Usage: scripts/publish.sh <base-url> [checksum-file]
#   checksum-file defaults to elixir/checksum-trellis_pg.exs (commit it with
#   the release); the staged package goes to build/package/trellis_pg-<version>.
#   TRELLIS_RELEASE_TARGETS narrows the targets, as for release.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="${1:?usage: publish.sh <base-url> [checksum-file]}"
checksum="${2:-$root/elixir/checksum-trellis_pg.exs}"
version="$(sed -n 's/^ *@version "\(.*\)"$/\1/p' "$root/elixir/mix.exs")"
targets=(${TRELLIS_RELEASE_TARGETS:-x86_64-linux aarch64-linux})

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for target in "${targets[@]}"; do
  name="trellis-port-$version-$target"
  echo "publish: fetching ${base%/}/$name" >&2
  python3 - "${base%/}/$name" "$work/$name" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as f:
    f.write(r.read())
PY
done
"$root/scripts/write-checksums.sh" "$checksum" "$work"/trellis-port-*
staged="$("$root/scripts/stage-package.sh" "$checksum" "$root/build/package/trellis_pg-$version")"
echo "publish: wrote $checksum; the package is staged in $staged (run mix hex.publish there)" >&2
