#!/usr/bin/env bash
# The packaging stage of CI (scripts/test.sh runs it): builds the release
# (both targets, static, cross-built for aarch64; scripts/release.sh) and tests
# what users install:
#   1. the release binaries: static, no NEEDED entries, stripped, < 10 MiB
#      (scripts/build-port.sh checks and reports);
#   2. the x86_64 binary in a chroot with no glibc, and the aarch64 binary
#      under qemu-aarch64-static, each answering a protocol session against
#      throwaway clusters, plain and TLS (test/packaging/release_binaries_test.exs);
#   3. scripts/publish.sh writes the same checksum file from what an HTTP
#      server serves;
#   4. installing the staged package into a new Mix app outside the repository
#      (test/packaging/install_test.sh).
# The CMake trees live under build/release/; the PostgreSQL source, libpq
# per target and the object cache live in TRELLIS_BUILD_CACHE (default
# /var/cache/trellis-build, see scripts/build-port.sh), so later runs on the
# same machine, fresh clones included, take minutes instead of a cold build.
# Needs the tree scripts/setup.sh builds (the testkit); scripts/test.sh runs
# this after it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
started=$SECONDS
version="$(sed -n 's/^ *@version "\(.*\)"$/\1/p' "$root/elixir/mix.exs")"
out="$root/build/release/out"
work="$(mktemp -d)"
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "== packaging: $* (at $((SECONDS - started)) s)"; }

[ -x "$root/build/test/testkit/trellis-testkit" ] || "$root/scripts/setup.sh"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in musl busybox-static qemu-user-static python3 openssl; do installed "$p" || missing+=("$p"); done
if ((${#missing[@]})); then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

step "release build (static x86_64 and aarch64)"
"$root/scripts/release.sh" "$out"
x86="$out/bin/trellis-port-$version-x86_64-linux"
arm="$out/bin/trellis-port-$version-aarch64-linux"

step "a root with no glibc (musl + busybox), and qemu for aarch64"
chroot_dir="$work/musl-root"
mkdir -p "$chroot_dir"/{bin,etc,lib,tmp}
cp /bin/busybox "$chroot_dir/bin/busybox"
ln -s busybox "$chroot_dir/bin/sh"
cp -L /lib/ld-musl-x86_64.so.1 "$chroot_dir/lib/"
cp "$x86" "$chroot_dir/trellis-port"
printf '127.0.0.1 localhost pg.trellis.test\n' >"$chroot_dir/etc/hosts"
printf 'nameserver 127.0.0.1\n' >"$chroot_dir/etc/resolv.conf"
if find "$chroot_dir" -name 'libc.so*' -o -name 'ld-linux*' | grep -q .; then
  echo "test-packaging: the chroot has glibc in it" >&2
  exit 1
fi
chroot "$chroot_dir" /bin/sh -c 'test ! -e /lib/x86_64-linux-gnu && /trellis-port --version'
printf '#!/bin/sh\nexec chroot %s /trellis-port "$@"\n' "$chroot_dir" >"$work/musl-port"
printf '#!/bin/sh\nexec qemu-aarch64-static %s "$@"\n' "$arm" >"$work/aarch64-port"
chmod +x "$work/musl-port" "$work/aarch64-port"
qemu-aarch64-static "$arm" --version

step "protocol sessions through the release binaries"
(cd "$root/elixir" &&
  TRELLIS_MUSL_PORT="$work/musl-port" TRELLIS_MUSL_ROOT="$chroot_dir" TRELLIS_AARCH64_PORT="$work/aarch64-port" \
    TRELLIS_TESTKIT_PATH="$root/build/test/testkit/trellis-testkit" \
    MIX_ENV=test mix run ../test/packaging/release_binaries_test.exs)

step "publish.sh writes the checksum file from what a server serves"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
python3 -m http.server --bind 127.0.0.1 --directory "$out/bin" "$port" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 1 50); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break; sleep 0.1; done
"$root/scripts/publish.sh" "http://127.0.0.1:$port" "$work/published-checksum.exs"
cmp "$work/published-checksum.exs" "$out/checksum-trellis_pg.exs"
kill "$server_pid"
server_pid=""

step "install into a new Mix app"
"$root/test/packaging/install_test.sh" "$out"

echo "== packaging: passed in $((SECONDS - started)) s"
