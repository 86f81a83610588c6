#!/usr/bin/env bash
# Installs trellis_pg as a new user would: a throwaway Mix app outside the
# repository depends on an unpacked copy of the staged package (exactly the
# files mix.exs's package: list names; no build/ anywhere), and its
# `mix deps.get && mix compile` puts the engine binary in place, which
# install_check.exs then uses to define a transform and watch it follow writes.
#
#   1. download over HTTPS from a local server (throwaway CA), verified;
#   2. download over plain http:// (a mirror), verified;
#   3. the bundled package's own binary, with no server at all;
#   4. a tampered binary fails the compile, naming both digests;
#   5. a tampered checksum file fails the compile, naming both digests;
#   6. a target with no release fails, naming it and TRELLIS_PG_BUILD;
#   7. the compile-time choice, in one app: `config :trellis_pg, force_build:
#      true` builds the package's C++ tree with CMake; with the setting gone,
#      a plain `mix compile` keeps that binary and `mix deps.compile
#      trellis_pg --force` installs the released one; with TRELLIS_PG_BUILD=1,
#      a plain compile keeps the released one and --force builds from source
#      again (the object cache makes that second build quick).
#
# Usage: test/packaging/install_test.sh <release-dir>   (from scripts/release.sh)
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/strict.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rel="$(cd "${1:?usage: install_test.sh <release-dir>}" && pwd)"
version="$(sed -n 's/^ *@version "\(.*\)"$/\1/p' "$root/elixir/mix.exs")"
# A fixed place outside the repository, so ccache recognises the source
# build of step 7 from one run to the next.
work=/tmp/trellis-install-test
rm -rf "$work"
mkdir -p "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  exec 7>&- 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
unset TRELLIS_PORT_PATH TRELLIS_PG_BUILD TRELLIS_PG_BASE_URL TRELLIS_PG_CACERTFILE TRELLIS_PG_TARGET
export MIX_ENV=dev

fail() { echo "install_test: FAILED: $*" >&2; exit 1; }

# A throwaway cluster; the testkit tears it down when fd 7 closes.
mkfifo "$work/testkit-in"
"$root/build/test/testkit/trellis-testkit" <"$work/testkit-in" >"$work/url" &
pids+=($!)
exec 7>"$work/testkit-in"
for _ in $(seq 1 300); do [ -s "$work/url" ] && break; sleep 0.1; done
export DATABASE_URL="$(head -n1 "$work/url")"
[ -n "$DATABASE_URL" ] || fail "the testkit did not start"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# serve <dir> <port> [cert key]: a static file server on 127.0.0.1.
serve() {
  python3 - "$@" <<'PY' >/dev/null 2>&1 &
import functools, http.server, ssl, sys
directory, port = sys.argv[1], int(sys.argv[2])
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
if len(sys.argv) > 3:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
PY
  pids+=($!)
  for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return; sleep 0.1; done
  fail "the file server on port $2 did not start"
}

# A throwaway CA and a certificate for localhost.
tls="$work/tls"
mkdir -p "$tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=trellis-install-test-ca \
  -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$tls/server.key" \
  -out "$tls/server.csr" 2>/dev/null
printf 'subjectAltName = DNS:localhost, IP:127.0.0.1\n' >"$tls/server.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -set_serial 1 \
  -days 1 -extfile "$tls/server.ext" -out "$tls/server.crt" 2>/dev/null

https_port="$(free_port)"
serve "$rel/bin" "$https_port" "$tls/server.crt" "$tls/server.key"
http_port="$(free_port)"
serve "$rel/bin" "$http_port"
mkdir -p "$work/tampered-bin"
cp "$rel"/bin/trellis-port-* "$work/tampered-bin/"
for f in "$work"/tampered-bin/*; do printf 'x' >>"$f"; done
tampered_port="$(free_port)"
serve "$work/tampered-bin" "$tampered_port"

# unpack <staged-package-dir>: a fresh copy as deps would hold it, and a
# fresh host app depending on it by path.
unpack() {
  rm -rf "$work/pkg" "$work/app"
  mkdir -p "$work/pkg" "$work/app/config"
  cp -r "$1" "$work/pkg/trellis_pg"
  if find "$work/pkg" \( -name build -o -name _build -o -name deps \) | grep -q .; then
    fail "the package carries a build tree"
  fi
  cat >"$work/app/mix.exs" <<MIX
defmodule HostApp.MixProject do
  use Mix.Project
  def project, do: [app: :host_app, version: "0.1.0", elixir: "~> 1.14", deps: deps()]
  def application, do: [extra_applications: [:logger]]
  defp deps, do: [{:trellis_pg, path: "$work/pkg/trellis_pg"}]
end
MIX
  printf 'import Config\nconfig :logger, level: :warning\n' >"$work/app/config/config.exs"
  cp "$root/test/packaging/install_check.exs" "$work/app/check.exs"
}

compile() { (cd "$work/app" && mix deps.get >/dev/null && mix compile 2>&1); }

installed_binary() { echo "$work/app/_build/dev/lib/trellis_pg/priv/trellis-port"; }

expect_install() {
  local what="$1" log
  log="$(compile)" || fail "$what: mix compile failed:"$'\n'"$log"
  cmp -s "$(installed_binary)" "$rel/bin/trellis-port-$version-x86_64-linux" ||
    fail "$what: priv/trellis-port is not the released binary"
  (cd "$work/app" && mix run check.exs) || fail "$what: the host app could not use it"
  echo "install_test: $what: ok"
}

expect_refusal() {
  local what="$1" pattern="$2" log
  if log="$(compile)"; then fail "$what: mix compile succeeded"; fi
  grep -Eq "$pattern" <<<"$log" || fail "$what: the error does not match /$pattern/:"$'\n'"$log"
  [ ! -e "$(installed_binary)" ] || fail "$what: a binary was installed anyway"
  echo "install_test: $what: refused: $(grep -Eo "$pattern" <<<"$log" | head -n1)"
}

digests='expected sha256:[0-9a-f]{64}, got sha256:[0-9a-f]{64}'

unpack "$rel/package/trellis_pg-$version"
TRELLIS_PG_BASE_URL="https://localhost:$https_port" TRELLIS_PG_CACERTFILE="$tls/ca.crt" \
  expect_install "download over HTTPS"

unpack "$rel/package/trellis_pg-$version"
TRELLIS_PG_BASE_URL="http://127.0.0.1:$http_port" expect_install "download over http"

unpack "$rel/bundled/trellis_pg-$version"
TRELLIS_PG_BASE_URL="http://127.0.0.1:1" expect_install "binary shipped in the package"

unpack "$rel/package/trellis_pg-$version"
TRELLIS_PG_BASE_URL="http://127.0.0.1:$tampered_port" expect_refusal "tampered binary" "$digests"

unpack "$rel/package/trellis_pg-$version"
# Every digest's first hex digit changed (0 -> 1, anything else -> 0).
sed -i -E 's/sha256:0/sha256:X/; s/sha256:[1-9a-f]/sha256:0/; s/sha256:X/sha256:1/' \
  "$work/pkg/trellis_pg/checksum-trellis_pg.exs"
TRELLIS_PG_BASE_URL="http://127.0.0.1:$http_port" expect_refusal "tampered checksum file" "$digests"

unpack "$rel/package/trellis_pg-$version"
TRELLIS_PG_TARGET=riscv64-linux expect_refusal "unknown target" "riscv64-linux.*TRELLIS_PG_BUILD=1"

unpack "$rel/package/trellis_pg-$version"
# The release build's object cache (scripts/build-port.sh), paths relative to $work.
export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1
export CCACHE_DIR="${TRELLIS_BUILD_CACHE:-/var/cache/trellis-build}/ccache"
released="$rel/bin/trellis-port-$version-x86_64-linux"
# host_config [line]: the host app's config/config.exs, with `line` added.
host_config() { printf 'import Config\nconfig :logger, level: :warning\n%s\n' "${1:-}" >"$work/app/config/config.exs"; }
force_compile() { (cd "$work/app" && mix deps.compile trellis_pg --force 2>&1); }
source_built() {
  "$(installed_binary)" --version | grep -q "trellis-port $version " || fail "$1: priv/trellis-port is not trellis-port $version"
  ! cmp -s "$(installed_binary)" "$released" || fail "$1: priv/trellis-port is the released binary, not a source build"
}
kept() {
  cmp -s "$(installed_binary)" "$2" || fail "$1: a plain mix compile replaced the binary"
  grep -q "trellis_pg: keeping the .* installed when the package compiled" <<<"$log" ||
    fail "$1: mix compile did not say it kept the binary:"$'\n'"$log"
}

host_config "config :trellis_pg, force_build: true"
log="$(compile)" || fail "config force_build: mix compile failed:"$'\n'"$log"
source_built "config force_build"
(cd "$work/app" && mix run check.exs) || fail "config force_build: the host app could not use it"
cp "$(installed_binary)" "$work/source-built"
echo "install_test: config :trellis_pg, force_build: true source build: ok"

host_config
log="$(TRELLIS_PG_BASE_URL="http://127.0.0.1:$http_port" compile)" ||
  fail "setting removed: mix compile failed:"$'\n'"$log"
kept "setting removed" "$work/source-built"
log="$(TRELLIS_PG_BASE_URL="http://127.0.0.1:$http_port" force_compile)" ||
  fail "setting removed, --force: mix deps.compile failed:"$'\n'"$log"
cmp -s "$(installed_binary)" "$released" || fail "setting removed, --force: not the released binary"
echo "install_test: setting removed: plain compile kept the source build, --force installed the release: ok"

log="$(TRELLIS_PG_BUILD=1 compile)" || fail "TRELLIS_PG_BUILD=1: mix compile failed:"$'\n'"$log"
kept "TRELLIS_PG_BUILD=1" "$released"
log="$(TRELLIS_PG_BUILD=1 force_compile)" || fail "TRELLIS_PG_BUILD=1 --force: failed:"$'\n'"$log"
source_built "TRELLIS_PG_BUILD=1 --force"
echo "install_test: TRELLIS_PG_BUILD=1: plain compile kept the release, --force built from source: ok"
