#!/usr/bin/env bash
# Builds a release into <out-dir>: every target's trellis-port as a raw,
# stripped, static executable named trellis-port-<version>-<target> (what the
# release page serves and the package downloads), the checksum file the
# package ships (checksum-trellis_pg.exs), and the staged package twice:
# package/trellis_pg-<version> (downloads its binary) and
# bundled/trellis_pg-<version> (carries the binaries in bin/).
#
# Usage: scripts/release.sh <out-dir>
#   TRELLIS_RELEASE_TARGETS="x86_64-linux aarch64-linux" (the default) narrows it.
# See RELEASING.md for the whole release.
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: release.sh <out-dir>}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
version="$(sed -n 's/^ *@version "\(.*\)"$/\1/p' "$root/elixir/mix.exs")"
targets=(${TRELLIS_RELEASE_TARGETS:-x86_64-linux aarch64-linux})

for target in "${targets[@]}"; do
  "$root/scripts/build-port.sh" "$target" "$out/bin" >/dev/null
done

binaries=()
for target in "${targets[@]}"; do binaries+=("$out/bin/trellis-port-$version-$target"); done
"$root/scripts/write-checksums.sh" "$out/checksum-trellis_pg.exs" "${binaries[@]}"

"$root/scripts/stage-package.sh" "$out/checksum-trellis_pg.exs" "$out/package/trellis_pg-$version" >/dev/null
"$root/scripts/stage-package.sh" "$out/checksum-trellis_pg.exs" "$out/bundled/trellis_pg-$version" \
  --bundle "$out/bin" >/dev/null
ls -l "$out/bin" >&2
echo "release: $out (version $version)" >&2
