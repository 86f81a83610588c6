// RAII over one libpq connection: the only code in the project that calls PQ*
// functions. Statements run in text mode with text parameters; the engine's
// heavy lifting happens in SQL, so results are small.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trellis/status.h"

typedef struct pg_conn PGconn;
typedef struct pg_cancel PGcancel;

namespace trellis::pg {

using Param = std::optional<std::string>;  // nullopt is SQL NULL
using Params = std::vector<Param>;

// The rows of one statement's result, as text (NULL as nullopt).
struct Rows {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
  long affected = 0;  // rows touched by INSERT/UPDATE/DELETE

  size_t size() const { return rows.size(); }
  bool empty() const { return rows.empty(); }
  // REQUIRES: r < size(), c < columns.size().
  const std::optional<std::string>& at(size_t r, size_t c) const { return rows[r][c]; }
  // The cell as a string, "" for NULL.
  std::string text(size_t r, size_t c) const { return rows[r][c].value_or(""); }
};

// One statement of a pipeline (Connection::QueryPipelined).
struct PipelinedStatement {
  std::string_view sql;
  Params params;
  // Prepared once per connection, as QueryPrepared's statements are; false
  // sends it unnamed (BEGIN, a text that differs at every call).
  bool prepared = true;
};

// One open connection. Not thread-safe, except RequestCancel(), which any
// thread may call while another runs a statement.
class Connection {
 public:
  // Connects and checks the connection. `conninfo` is a URL or key=value
  // string; the error message never contains the password. The session's
  // settings are pinned (session_settings.h) and its client encoding is UTF8.
  static Result<std::unique_ptr<Connection>> Open(const std::string& conninfo,
                                                  const std::string& application_name);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result<Rows> Query(std::string_view sql, const Params& params = {});
  Status Exec(std::string_view sql, const Params& params = {});
  // Query() of a statement prepared once per connection: the first call with
  // a given text prepares it (PQprepare), later calls only execute it, so the
  // server parses and plans it once rather than at every call. For the
  // workers' hot statements, whose text changes only with a new plan
  // version. Not for statements that differ at every call.
  Result<Rows> QueryPrepared(std::string_view sql, const Params& params = {});
  // Runs several statements separated by ';' (simple protocol, no params).
  Status ExecScript(std::string_view sql);
  // Sends `statements` together in one round trip (a libpq pipeline) and
  // returns each one's rows, in order. Each is its own statement, with the
  // snapshot it would have had sent alone (READ COMMITTED: taken when it
  // starts). The first failure ends it: the server skips the statements
  // after it, and that failure is returned. In a transaction, the
  // transaction is aborted, as it would have been; outside one, the
  // statements run as one implicit transaction, which the failure undoes
  // whole. For the drain's hot path, where
  // each round trip is latency on every write (bench/README.md "Round
  // trips of a pipelined hop").
  Result<std::vector<Rows>> QueryPipelined(const std::vector<PipelinedStatement>& statements);

  // BEGIN, then `sql`, sent together in one round trip (a libpq pipeline):
  // the first statement of a hot transaction costs no trip of its own. `sql`
  // is prepared as QueryPrepared's are: a hot statement's fixed text. Each
  // is its own statement, so `sql` runs in a snapshot taken after BEGIN, as
  // if sent alone. When `sql` fails, the transaction is open and aborted.
  // REQUIRES: outside a transaction. Use Transaction::BeginWith.
  Result<Rows> BeginAndQuery(std::string_view sql, const Params& params);

  // One row of a streamed result: each cell as text, nullopt for NULL. The
  // views are valid during the callback only.
  using RowView = std::vector<std::optional<std::string_view>>;
  // Runs a query and hands its rows to `on_row` one at a time as they
  // arrive (libpq's single-row mode), so a large result never sits in
  // memory whole. Once `on_row` returns an error, the remaining rows are
  // read and dropped and that error is returned.
  Status QueryEach(std::string_view sql, const Params& params,
                   const std::function<Status(const RowView&)>& on_row);

  // libpq grows a connection's input and output buffers to hold its largest
  // message and never shrinks them while the connection lives. A session
  // through which a message over this size passed (a long statement, a
  // large row) holds that memory until it is closed: the pool closes such
  // a session once its call ends (port/src/worker_pool.h). Far above what
  // the engine's own traffic needs (pages of keys, plan statements).
  static constexpr std::size_t kGrownBufferBytes = std::size_t{256} << 10;  // 256 KiB
  // The largest message sent or received so far, in bytes (close to the
  // wire size: statement text, parameters, one row's cells).
  std::size_t largest_message() const { return largest_message_; }
  bool buffers_grown() const { return largest_message_ > kGrownBufferBytes; }

  // Asks the server to cancel the statement running now, if any. Thread-safe.
  void RequestCancel();

  // True once the connection is unusable and must be replaced.
  bool broken() const;
  // False when the connection is broken, or is idle and the server has
  // closed it (restart, pg_terminate_backend, idle timeout): PQstatus still
  // says OK for such a connection until libpq reads from it, and the first
  // statement sent on it would fail. Costs a zero-timeout poll(). Call it
  // between calls only, never while a statement runs.
  bool Usable() const;
  bool in_transaction() const;
  std::string database() const;
  int server_version_num() const;
  // The server's backend pid, for diagnostics.
  int backend_pid() const;

 private:
  explicit Connection(PGconn* conn);
  // Prepares `sql` once on this connection, named by its text's hash, and
  // returns the name; nullopt when another text holds that name (the caller
  // then runs it unprepared).
  Result<std::optional<std::string>> Prepare(std::string_view sql, int params);
  PGconn* conn_;
  // Statements prepared on this connection: name -> text.
  std::unordered_map<std::string, std::string> prepared_;
  std::mutex cancel_mu_;
  PGcancel* cancel_ = nullptr;  // guarded by cancel_mu_
  std::size_t largest_message_ = 0;

  void NoteMessage(std::size_t bytes) {
    if (bytes > largest_message_) largest_message_ = bytes;
  }
  void NoteOutgoing(std::string_view sql, const Params& params);
};

// RAII transaction: BEGIN on Begin(), ROLLBACK on destruction unless Commit().
class Transaction {
 public:
  static Result<std::unique_ptr<Transaction>> Begin(Connection& conn,
                                                    std::string_view begin_sql = "BEGIN");
  // BEGIN and `sql` in one round trip (Connection::BeginAndQuery); `sql`'s
  // rows go to `rows` when given. When `sql` fails the transaction is rolled
  // back and its error returned.
  static Result<std::unique_ptr<Transaction>> BeginWith(Connection& conn, std::string_view sql,
                                                        const Params& params, Rows* rows = nullptr);
  ~Transaction();
  Status Commit();

 private:
  explicit Transaction(Connection& conn) : conn_(conn) {}
  Connection& conn_;
  bool done_ = false;
};

// The URL or conninfo with any password replaced by "***".
std::string RedactConninfo(std::string_view conninfo);

}  // namespace trellis::pg
