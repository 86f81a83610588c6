#include "pg/listen_session.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "pg/error_text.h"
#include "pg/libpq_connect.h"

namespace trellis::pg {
namespace {

// "name" with embedded quotes doubled (sql/ sits above pg/ in the layers).
std::string QuotedIdent(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

}  // namespace

Result<std::unique_ptr<ListenSession>> ListenSession::Open(const std::string& conninfo,
                                                           const std::string& application_name) {
  auto conn = OpenLibpqSession(conninfo, {{"application_name", application_name}});
  if (!conn.ok()) return conn.status();
  return std::unique_ptr<ListenSession>(new ListenSession(conn.value()));
}

ListenSession::~ListenSession() { PQfinish(conn_); }

Status ListenSession::Run(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  const bool ok =
      res && (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK);
  std::string message = ok ? "" : MessageLines(res ? PQresultErrorMessage(res) : "");
  PQclear(res);
  if (ok) return Status::OK();
  if (PQstatus(conn_) != CONNECTION_OK) return Lost();
  return Status::Database(message.empty() ? MessageLines(PQerrorMessage(conn_)) : message);
}

Status ListenSession::Listen(const std::vector<std::string>& channels) {
  std::string sql;
  for (const auto& channel : channels) sql += "LISTEN " + QuotedIdent(channel) + ";";
  return Run(sql);
}

Status ListenSession::Check() { return Run("SELECT 1"); }

int ListenSession::backend_pid() const { return PQbackendPID(conn_); }

std::vector<Notification> ListenSession::Take() {
  std::vector<Notification> out;
  while (PGnotify* n = PQnotifies(conn_)) {
    out.push_back({n->relname, n->extra ? n->extra : "", n->be_pid});
    PQfreemem(n);
  }
  return out;
}

Status ListenSession::Lost() const {
  std::string why = MessageLines(PQerrorMessage(conn_));
  if (why.empty()) why = "the server closed the connection";
  return Status::Connection("the connection was lost: " + why);
}

Result<std::vector<Notification>> ListenSession::Await(std::chrono::milliseconds timeout) {
  if (PQstatus(conn_) != CONNECTION_OK) return Lost();
  // Notifications that came with a statement's reply (Check) are queued.
  if (auto queued = Take(); !queued.empty()) return queued;
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0) return Lost();
  const int ready = poll(&fd, 1, static_cast<int>(timeout.count()));
  if (ready < 0) {
    if (errno == EINTR) return std::vector<Notification>{};
    return Status::Connection(std::string("waiting on the connection failed: ") +
                              std::strerror(errno));
  }
  if (ready == 0) return std::vector<Notification>{};
  // Readable: notifications, or the server's goodbye, after which
  // PQconsumeInput fails or the status turns bad.
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) != CONNECTION_OK) return Lost();
  return Take();
}

}  // namespace trellis::pg
