#!/usr/bin/env bash
# Builds one release binary of trellis-port, the way a release does:
# fully static (libpq, OpenSSL, libstdc++ and glibc linked in, host names
# resolved with c-ares; see cmake/StaticPort.cmake), stripped, checked to have
# no dynamic dependencies, and written as <out-dir>/trellis-port-<version>-<target>.
#
# Usage: scripts/build-port.sh <target> <out-dir>
#   target: x86_64-linux (native) or aarch64-linux (cross-built)
#
# Debian 12 only: installs what it needs with apt-get (a no-op once present),
# including the arm64 multiarch libraries and the PostgreSQL source package,
# from which it builds libpq without GSSAPI/LDAP (Debian's libpq.a needs
# Kerberos and OpenLDAP, which Debian ships only as shared libraries).
#
# What is slow to make and does not depend on this checkout is cached outside
# it, in TRELLIS_BUILD_CACHE (default /var/cache/trellis-build), so a fresh
# clone on the same machine (CI) reuses it: the PostgreSQL source (by
# version), libpq per target (keyed by target, PostgreSQL version and
# compiler), and a ccache of the port's objects (keyed by content, with paths
# taken relative to the checkout). The CMake trees live in build/release/.
set -Eeuo pipefail # -E: functions and $(...) inherit the ERR trap below
shopt -s inherit_errexit # a failure inside $(...) stops the build too
# Under errexit a failing command ends the script without a word; say which.
trap 'echo "build-port (${target:-?}): line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:?usage: build-port.sh <target> <out-dir>}"
out="${2:?usage: build-port.sh <target> <out-dir>}"
version="$(sed -n 's/^ *@version "\(.*\)"$/\1/p' "$root/elixir/mix.exs")"
work="$root/build/release"
cache="${TRELLIS_BUILD_CACHE:-/var/cache/trellis-build}"
max_bytes=$((10 * 1024 * 1024))

case "$target" in
  x86_64-linux) triplet=x86_64-linux-gnu arch=amd64 cross=() ;;
  aarch64-linux)
    triplet=aarch64-linux-gnu arch=arm64
    cross=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake")
    ;;
  *) echo "build-port: unknown target $target (x86_64-linux, aarch64-linux)" >&2; exit 2 ;;
esac

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

ensure_packages() {
  local wanted=(build-essential cmake ninja-build file binutils bzip2 dpkg-dev ccache
    libboost-dev libmsgpack-cxx-dev libspdlog-dev libfmt-dev libssl-dev libc-ares-dev)
  if [ "$arch" = arm64 ]; then
    wanted+=(g++-aarch64-linux-gnu binutils-aarch64-linux-gnu libssl-dev:arm64 libc-ares-dev:arm64)
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      dpkg --add-architecture arm64
      apt-get update -qq
    fi
  fi
  local missing=()
  for p in "${wanted[@]}"; do installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "build-port: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null; }
  fi
}

# The postgresql-15 source versions the configured deb-src entries list.
source_versions() {
  local listing
  listing="$(apt-cache showsrc postgresql-15 2>/dev/null)" || return 1
  awk '/^Version:/ {print $2}' <<<"$listing"
}

# The PostgreSQL 15 source, unpacked once into the cache. Downloaded and
# unpacked in a private directory and renamed into place, so two builds
# sharing the cache never see half a tree.
postgres_source() {
  local src="$cache/src"
  mkdir -p "$src"
  local tree
  tree="$(find "$src" -maxdepth 1 -type d -name 'postgresql-15.*' -print -quit)"
  if [ -n "$tree" ] && [ -f "$tree/configure" ]; then echo "$tree"; return; fi
  # apt-cache showsrc exits non-zero when no deb-src entry is configured (a
  # fresh machine), so its failure means "none known yet", not an error.
  local versions
  versions="$(source_versions)" || versions=""
  if [ -z "$versions" ]; then
    echo "build-port: no deb-src entry serves postgresql-15; adding Debian's" >&2
    # Debian's deb-src entries for the same mirror, so apt-get source works.
    cat >/etc/apt/sources.list.d/trellis-deb-src.sources <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    apt-get update -qq || { echo "build-port: apt-get update failed after adding deb-src entries" >&2; exit 1; }
    versions="$(source_versions)" ||
      { echo "build-port: apt-cache showsrc postgresql-15 failed even with deb-src entries" >&2; exit 1; }
    [ -n "$versions" ] || { echo "build-port: no postgresql-15 source version is listed by the mirror" >&2; exit 1; }
  fi
  local tmp v got=""
  tmp="$(mktemp -d "$src/.download.XXXXXX")"
  # The mirror may lack the newest source; take the first version it serves.
  for v in $versions; do
    if (cd "$tmp" && apt-get source --download-only -qq "postgresql-15=$v" >/dev/null 2>&1); then
      got="$v"
      break
    fi
  done
  [ -n "$got" ] || { echo "build-port: could not download the postgresql-15 source" >&2; exit 1; }
  local tarball
  tarball="$(find "$tmp" -maxdepth 1 -name 'postgresql-15_*.orig.tar.bz2' -print -quit)"
  tar -C "$tmp" -xjf "$tarball"
  tree="$(find "$tmp" -maxdepth 1 -type d -name 'postgresql-15.*' -print -quit)"
  mv -T "$tree" "$src/$(basename "$tree")" 2>/dev/null || true # another build may have won
  rm -rf "$tmp"
  echo "$src/$(basename "$tree")"
}

# libpq (with libpgcommon/libpgport) for the target, static, no GSSAPI/LDAP.
# Prints its install prefix, which is keyed by what goes into it.
build_libpq() {
  local tree="$1" host=() cc=gcc
  if [ "$arch" = arm64 ]; then host=(--host="$triplet"); cc="$triplet-gcc"; fi
  local flags=(--without-readline --without-zlib --without-icu --without-gssapi --without-ldap
    --without-llvm --without-perl --without-python --without-tcl --without-lz4 --without-zstd
    --with-openssl)
  local key
  key="$target-$(basename "$tree")-$( ("$cc" --version | sed -n 1p; echo "${flags[*]}") |
    sha256sum | cut -c1-12)"
  local prefix="$cache/libpq/$key"
  if [ -f "$prefix/lib/libpq.a" ]; then
    echo "$prefix"
    return
  fi
  local dir
  mkdir -p "$cache/libpq"
  dir="$(mktemp -d "$cache/libpq/.$key.XXXXXX")"
  cc="ccache $cc"
  echo "build-port: building libpq for $target" >&2
  (cd "$dir" && CC="$cc" "$tree/configure" "${host[@]}" --prefix="$prefix" "${flags[@]}" \
    >configure.log 2>&1) ||
    { tail -20 "$dir/configure.log" >&2; exit 1; }
  local d
  for d in src/interfaces/libpq src/common src/port; do
    make -s -C "$dir/$d" -j"$(nproc)" >/dev/null
  done
  # Installed into a staging root, then renamed to the prefix it was built for.
  for d in src/interfaces/libpq src/common src/port src/include; do
    make -s -C "$dir/$d" install DESTDIR="$dir/stage" >/dev/null
  done
  mv -T "$dir/stage$prefix" "$prefix" 2>/dev/null || true # another build may have won
  rm -rf "$dir"
  [ -f "$prefix/lib/libpq.a" ] || { echo "build-port: libpq for $target was not built" >&2; exit 1; }
  echo "$prefix"
}

build_port() {
  local libpq="$1" dir="$work/$target/cmake"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_STATIC=ON \
    -DTRELLIS_TESTS=OFF -DTRELLIS_UNITY_BUILD=ON -DTRELLIS_LIBPQ_PREFIX="$libpq" "${cross[@]}" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
  ninja --quiet -C "$dir" -j"$(nproc)" trellis-port >&2
}

# A release binary has no dynamic section at all (so no NEEDED entries and
# no interpreter), which is what lets it run on musl and old glibc alike.
check_static() {
  local file="$1" strip_tool=strip
  [ "$arch" = arm64 ] && strip_tool="$triplet-strip"
  "$strip_tool" "$file"
  if readelf -d "$file" | grep -q NEEDED || readelf -l "$file" | grep -q INTERP; then
    echo "build-port: $file is not static:" >&2
    readelf -d "$file" >&2
    exit 1
  fi
  file "$file" | grep -q "statically linked" || { file "$file" >&2; exit 1; }
  local size
  size="$(stat -c %s "$file")"
  echo "build-port: $(basename "$file"): static, stripped, $size bytes" >&2
  if ((size > max_bytes)); then
    echo "build-port: $file is larger than 10 MiB" >&2
    exit 1
  fi
}

ensure_packages
mkdir -p "$cache"
export CCACHE_DIR="$cache/ccache" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
ccache --max-size=2G >/dev/null
tree="$(postgres_source)"
libpq="$(build_libpq "$tree")"
build_port "$libpq"
mkdir -p "$out"
dest="$out/trellis-port-$version-$target"
cp "$work/$target/cmake/port/trellis-port" "$dest.partial"
check_static "$dest.partial"
mv "$dest.partial" "$dest"
echo "$dest"
