#include "pg/libpq_connect.h"

#include "pg/connection.h"
#include "pg/resolve.h"

namespace trellis::pg {
namespace {

void DropNotice(void*, const char*) {}

}  // namespace

Result<PGconn*> OpenLibpqSession(
    const std::string& conninfo,
    const std::vector<std::pair<const char*, std::string>>& parameters) {
  auto pinned = PinHostAddresses(conninfo);  // resolved here where NSS is missing (pg/resolve.h)
  if (!pinned.ok()) {
    return Status::Connection("could not connect to the database at " + RedactConninfo(conninfo) +
                              ": " + pinned.status().message());
  }
  std::vector<const char*> keys = {"dbname"};
  std::vector<const char*> values = {conninfo.c_str()};
  for (const auto& [key, value] : parameters) {
    keys.push_back(key);
    values.push_back(value.c_str());
  }
  keys.push_back("fallback_application_name");
  values.push_back("trellis");
  for (const auto& [key, value] : *pinned) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (!conn) return Status::Connection("out of memory while connecting to the database");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return Status::Connection("could not connect to the database at " + RedactConninfo(conninfo) +
                              ": " + message);
  }
  PQsetNoticeProcessor(conn, DropNotice, nullptr);
  return conn;
}

}  // namespace trellis::pg
