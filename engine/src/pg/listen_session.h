// A session that LISTENs and waits for notifications: the one place the
// project waits on libpq's socket (workers/wake_listener.h uses it). Apart
// from Connection because it runs no statements but LISTEN and a liveness
// check, and because waiting on the socket needs the PGconn a Connection
// keeps to itself. The socket stays libpq's: polled here, never closed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "trellis/status.h"

typedef struct pg_conn PGconn;

namespace trellis::pg {

// A NOTIFY the session received.
struct Notification {
  std::string channel;
  std::string payload;
  int sender_pid = 0;  // the notifying backend's pid
};

// Not thread-safe: one thread owns it.
class ListenSession {
 public:
  // Connects as Connection::Open does (host names resolved the same way),
  // without pinned session settings: the session runs no user SQL.
  static Result<std::unique_ptr<ListenSession>> Open(const std::string& conninfo,
                                                     const std::string& application_name);
  ~ListenSession();
  ListenSession(const ListenSession&) = delete;
  ListenSession& operator=(const ListenSession&) = delete;

  // LISTEN on each channel, quoted so it is taken byte for byte (as
  // pg_notify's text argument is). REQUIRES: each at most 63 bytes.
  Status Listen(const std::vector<std::string>& channels);
  // Waits up to `timeout` for the socket to turn readable, reads what
  // arrived, and returns the notifications received (none when the wait ran
  // out). A Connection error when the server closed the session: an idle
  // session's end is seen only by reading it (a FATAL message and end of
  // file), since PQstatus says OK until then.
  Result<std::vector<Notification>> Await(std::chrono::milliseconds timeout);
  // A statement round trip: finds a session whose server or network
  // vanished without a word, which leaves nothing to read.
  Status Check();
  // The server's backend pid.
  int backend_pid() const;

 private:
  explicit ListenSession(PGconn* conn) : conn_(conn) {}
  Status Run(const std::string& sql);
  std::vector<Notification> Take();
  Status Lost() const;
  PGconn* conn_;
};

}  // namespace trellis::pg
