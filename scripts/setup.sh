#!/usr/bin/env bash
# Installs what Trellis needs from Debian 12's packages (only when something
# is missing, so a second run is a no-op) and builds the C++ tree into build/.
# Usage: scripts/setup.sh            (RelWithDebInfo build in build/)
source "$(dirname "${BASH_SOURCE[0]}")/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  build-essential cmake ninja-build git
  elixir erlang-dev
  libboost-dev libmsgpack-cxx-dev libspdlog-dev catch2 libpq-dev libssl-dev openssl
  postgresql postgresql-contrib
  clang-14 libclang-rt-14-dev clang-format
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Debian postgresql package starts a cluster of its own; Trellis never
# uses it (the testkit makes throwaway clusters), so leave it alone.

# The shipped code as unity builds (CMakeLists.txt says why): a fresh
# machine's first build takes minutes less. A tree you edit is better built
# without (the option's default, in a build directory of your own): a change
# then recompiles one file rather than its batch of 16.
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRELLIS_UNITY_BUILD=ON >/dev/null
ninja -C "$root/build" -j"$(nproc)" >&2
