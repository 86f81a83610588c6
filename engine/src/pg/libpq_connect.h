// The one way a libpq session is opened (pg::Connection, pg::ListenSession):
// the URL's host names resolved here (pg/resolve.h), the given connection
// parameters over the URL's own, notices dropped (a warning the server sends
// is the caller's statement's business, not a line on the port's stderr).
// A failure is a connection error naming the URL without its password.
#pragma once

#include <libpq-fe.h>

#include <string>
#include <utility>
#include <vector>

#include "trellis/status.h"

namespace trellis::pg {

// Opens a session to `conninfo` with `parameters` (libpq keyword, value)
// added after it, and fallback_application_name "trellis". The caller owns
// the PGconn (PQfinish).
Result<PGconn*> OpenLibpqSession(
    const std::string& conninfo,
    const std::vector<std::pair<const char*, std::string>>& parameters);

}  // namespace trellis::pg
