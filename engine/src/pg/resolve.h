// Host-name resolution that does not depend on glibc's NSS.
//
// The release binary is linked fully statically (cmake/StaticPort.cmake) so
// one file runs on every glibc and on musl (Alpine). glibc's getaddrinfo, which
// libpq calls, loads NSS modules (libnss_files, libnss_dns) at run time even
// in a static binary; a musl host has none, so libpq could reach the database
// only by address. Builds with TRELLIS_RESOLVE_WITH_CARES therefore resolve
// the conninfo's host names here, with c-ares (which reads /etc/hosts and
// /etc/resolv.conf itself), and hand libpq the addresses as `hostaddr`.
// `host` stays as written, so TLS still verifies the server's certificate
// against the name (sslmode=verify-full) and .pgpass still matches it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trellis/status.h"

namespace trellis::pg {

// Connection keywords and values to add after the conninfo (later keywords
// win in PQconnectdbParams).
using ConnParams = std::vector<std::pair<std::string, std::string>>;

// The keywords that pin libpq to addresses resolved for `conninfo`'s host
// names (PGHOST/PGPORT when it names none). Empty when there is nothing to
// pin: the build resolves through libpq (no TRELLIS_RESOLVE_WITH_CARES), the
// conninfo (or PGHOSTADDR) already gives hostaddr, or every host is a socket
// directory. A name that does not resolve is skipped as libpq would skip it;
// when none resolves, the connection error names the last one.
Result<ConnParams> PinHostAddresses(const std::string& conninfo);

// The addresses (numeric text) a name resolves to, or a connection error.
using Resolver = std::function<Result<std::vector<std::string>>(const std::string& name)>;

// The expansion behind PinHostAddresses, on libpq's comma-separated `host`
// and `port` lists: each host becomes one entry per address it resolves to,
// its port repeated alongside, so libpq still tries every address in order.
Result<ConnParams> PinHostAddresses(std::string_view hosts, std::string_view ports,
                                    const Resolver& resolve);

}  // namespace trellis::pg
