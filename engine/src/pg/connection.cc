#include "pg/connection.h"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <regex>

#include "pg/error_text.h"
#include "pg/libpq_connect.h"
#include "pg/session_settings.h"

namespace trellis::pg {
namespace {

// Turns a failed result (or a failed connection) into a Status carrying the
// server's diagnostics. SQLSTATE class 08 (connection exception) and a lost
// connection are connection errors; everything else is the database's refusal.
Status StatusFromResult(PGconn* conn, const PGresult* res) {
  // The primary message alone: the full text adds "LINE n:" context that
  // points into SQL the engine generated, which means nothing to the user.
  // Without a primary field (libpq's own errors, e.g. a connection lost
  // mid-statement) the connection's accumulated text is all there is, and it
  // may hold an earlier error with its statement context: only its message
  // lines are kept (error_text.h). The whole text goes to the debug log.
  const char* primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  const std::string full = res ? PQresultErrorMessage(res) : PQerrorMessage(conn);
  // The default logger: pg sits beside log/ in the engine's layers.
  spdlog::debug("statement failed: {}", full.empty() ? std::string(PQerrorMessage(conn)) : full);
  std::string message = primary ? std::string(primary) : MessageLines(PQerrorMessage(conn));
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  const char* sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  Status status;
  if (PQstatus(conn) == CONNECTION_BAD ||
      (sqlstate && std::string_view(sqlstate).substr(0, 2) == "08")) {
    status = Status::Connection(ConnectionLostMessage(message));
  } else {
    status = Status::Database(message);
  }
  if (sqlstate) status.sqlstate = sqlstate;
  if (res) {
    if (const char* d = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL)) status.detail = d;
    if (const char* h = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)) status.hint = h;
  }
  return status;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

ResultPtr RunParams(PGconn* conn, std::string_view sql, const Params& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  std::string text(sql);
  return ResultPtr(PQexecParams(conn, text.c_str(), static_cast<int>(params.size()), nullptr,
                                values.data(), nullptr, nullptr, 0));
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& conninfo,
                                                     const std::string& application_name) {
  // Parse first so a malformed URL is a validation error, not a network one.
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (!parsed) {
    std::string why = parse_error ? parse_error : "unparseable connection string";
    PQfreemem(parse_error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::Validation("invalid database URL " + RedactConninfo(conninfo) + ": " + why);
  }
  std::string user_options;
  for (PQconninfoOption* option = parsed; option->keyword; ++option) {
    if (std::string_view(option->keyword) == "options" && option->val) user_options = option->val;
  }
  PQconninfoFree(parsed);

  // The pinned settings follow the URL's own `options`, so they win over it,
  // and travel in the startup packet, so they win over role and database
  // settings (session_settings.h).
  const std::string options = WithPinnedSettings(user_options);
  auto conn = OpenLibpqSession(
      conninfo,
      {{"options", options}, {"client_encoding", "UTF8"}, {"application_name", application_name}});
  if (!conn.ok()) return conn.status();
  auto connection = std::unique_ptr<Connection>(new Connection(conn.value()));
  if (Status pinned = connection->Exec(kPinSearchPathSql); !pinned.ok()) {
    Status status = Status::Connection("could not set up the session at " +
                                       RedactConninfo(conninfo) + ": " + pinned.message());
    status.sqlstate = pinned.sqlstate;
    return status;
  }
  return connection;
}

Connection::Connection(PGconn* conn) : conn_(conn), cancel_(PQgetCancel(conn)) {}

Connection::~Connection() {
  {
    std::lock_guard lock(cancel_mu_);
    if (cancel_) PQfreeCancel(cancel_);
    cancel_ = nullptr;
  }
  PQfinish(conn_);
}

namespace {

// The size of row `r` of `res` on the wire: its cells and their lengths.
std::size_t RowBytes(const PGresult* res, int r) {
  std::size_t bytes = 0;
  for (int c = 0; c < PQnfields(res); ++c) bytes += 4 + PQgetlength(res, r, c);
  return bytes;
}

// The rows of a finished statement, or its error. `largest_row` is raised to
// the size of its largest row.
Result<Rows> Collect(PGconn* conn, ResultPtr res, std::size_t& largest_row) {
  ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return StatusFromResult(conn, res.get());
  Rows rows;
  int ncols = PQnfields(res.get());
  int nrows = PQntuples(res.get());
  rows.columns.reserve(ncols);
  for (int c = 0; c < ncols; ++c) rows.columns.emplace_back(PQfname(res.get(), c));
  rows.rows.resize(nrows);
  for (int r = 0; r < nrows; ++r) {
    largest_row = std::max(largest_row, RowBytes(res.get(), r));
    auto& row = rows.rows[r];
    row.reserve(ncols);
    for (int c = 0; c < ncols; ++c) {
      if (PQgetisnull(res.get(), r, c)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(std::string(PQgetvalue(res.get(), r, c), PQgetlength(res.get(), r, c)));
      }
    }
  }
  const char* affected = PQcmdTuples(res.get());
  rows.affected = (affected && *affected) ? std::atol(affected) : 0;
  return rows;
}

}  // namespace

void Connection::NoteOutgoing(std::string_view sql, const Params& params) {
  std::size_t bound = 0;  // the parameters travel together, in one Bind message
  for (const auto& p : params) bound += 4 + (p ? p->size() : 0);
  NoteMessage(std::max(sql.size(), bound));
}

Result<Rows> Connection::Query(std::string_view sql, const Params& params) {
  NoteOutgoing(sql, params);
  return Collect(conn_, RunParams(conn_, sql, params), largest_message_);
}

Status Connection::QueryEach(std::string_view sql, const Params& params,
                             const std::function<Status(const RowView&)>& on_row) {
  NoteOutgoing(sql, params);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  std::string text(sql);
  if (!PQsendQueryParams(conn_, text.c_str(), static_cast<int>(params.size()), nullptr,
                         values.data(), nullptr, nullptr, 0)) {
    return StatusFromResult(conn_, nullptr);
  }
  // Refused only when a result has already arrived: then the rows come
  // together, which is slower on memory but still correct.
  (void)PQsetSingleRowMode(conn_);
  Status outcome;
  RowView cells;
  // libpq needs every result read before the next statement, so reading
  // goes on after a failure; the first failure is the outcome.
  while (PGresult* raw = PQgetResult(conn_)) {
    ResultPtr res(raw);
    const ExecStatusType st = PQresultStatus(raw);
    if (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK) {
      for (int r = 0; r < PQntuples(raw) && outcome.ok(); ++r) {
        NoteMessage(RowBytes(raw, r));
        cells.clear();
        for (int c = 0; c < PQnfields(raw); ++c) {
          if (PQgetisnull(raw, r, c)) {
            cells.emplace_back(std::nullopt);
          } else {
            cells.emplace_back(std::string_view(PQgetvalue(raw, r, c), PQgetlength(raw, r, c)));
          }
        }
        outcome = on_row(cells);
      }
    } else if (st != PGRES_COMMAND_OK && outcome.ok()) {
      outcome = StatusFromResult(conn_, raw);
    }
  }
  return outcome;
}

Result<std::optional<std::string>> Connection::Prepare(std::string_view sql, int params) {
  // Named by the text's hash; a collision (another text under the name) runs
  // unprepared. Plan versions come and go (every ALTER is one), so the cache
  // is bounded: past the bound, everything is deallocated and re-prepared.
  constexpr size_t kMaxPrepared = 256;
  char name[32];
  std::snprintf(name, sizeof name, "trellis_%016zx", std::hash<std::string_view>{}(sql));
  auto it = prepared_.find(name);
  if (it != prepared_.end() && it->second != sql) return std::optional<std::string>();
  if (it == prepared_.end()) {
    if (prepared_.size() >= kMaxPrepared) {
      TRELLIS_RETURN_IF_ERROR(Exec("DEALLOCATE ALL"));
      prepared_.clear();
    }
    std::string text(sql);
    NoteMessage(text.size());
    auto prepared = Collect(conn_, ResultPtr(PQprepare(conn_, name, text.c_str(), params, nullptr)),
                            largest_message_);
    if (!prepared.ok()) return prepared.status();
    prepared_.emplace(name, std::move(text));
  }
  return std::optional<std::string>(name);
}

Result<Rows> Connection::QueryPrepared(std::string_view sql, const Params& params) {
  auto name = Prepare(sql, static_cast<int>(params.size()));
  if (!name.ok()) return name.status();
  if (!name.value()) return Query(sql, params);
  NoteOutgoing({}, params);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return Collect(
      conn_,
      ResultPtr(PQexecPrepared(conn_, name.value()->c_str(), static_cast<int>(params.size()),
                               values.data(), nullptr, nullptr, 0)),
      largest_message_);
}

Status Connection::Exec(std::string_view sql, const Params& params) {
  auto rows = Query(sql, params);
  return rows.ok() ? Status::OK() : rows.status();
}

Status Connection::ExecScript(std::string_view sql) {
  NoteMessage(sql.size());
  std::string text(sql);
  ResultPtr res(PQexec(conn_, text.c_str()));
  ExecStatusType st = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return StatusFromResult(conn_, res.get());
  return Status::OK();
}

Result<std::vector<Rows>> Connection::QueryPipelined(
    const std::vector<PipelinedStatement>& statements) {
  // Prepared before the pipeline (once per connection and text): a hot
  // statement is then neither parsed nor, once the server settles on a
  // generic plan, planned at each call (the drain's claim spent 2.6 ms of
  // its 3 doing both; bench/README.md "Round trips of a hop").
  std::vector<std::optional<std::string>> names;
  names.reserve(statements.size());
  for (const auto& statement : statements) {
    if (!statement.prepared) {
      names.emplace_back();
      NoteOutgoing(statement.sql, statement.params);
      continue;
    }
    auto name = Prepare(statement.sql, static_cast<int>(statement.params.size()));
    if (!name.ok()) return name.status();
    NoteOutgoing(name.value() ? std::string_view() : statement.sql, statement.params);
    names.push_back(std::move(name.value()));
  }
  if (!PQenterPipelineMode(conn_)) return StatusFromResult(conn_, nullptr);
  bool sent = true;
  std::vector<const char*> values;
  for (size_t i = 0; i < statements.size() && sent; ++i) {
    const PipelinedStatement& statement = statements[i];
    values.clear();
    for (const auto& p : statement.params) values.push_back(p ? p->c_str() : nullptr);
    const int n = static_cast<int>(statement.params.size());
    // libpq copies the text and values into its output buffer here.
    const std::string text(statement.sql);
    sent = names[i] ? PQsendQueryPrepared(conn_, names[i]->c_str(), n, values.data(), nullptr,
                                          nullptr, 0)
                    : PQsendQueryParams(conn_, text.c_str(), n, nullptr, values.data(), nullptr,
                                        nullptr, 0);
  }
  sent = sent && PQpipelineSync(conn_);
  // Each statement's result is followed by a NULL; then comes the sync's.
  // A statement after a failure comes back PGRES_PIPELINE_ABORTED.
  auto next = [this] { return ResultPtr(PQgetResult(conn_)); };
  std::vector<Rows> out;
  Status failed = Status::OK();
  if (sent) {
    for (size_t i = 0; i < statements.size() && !broken(); ++i) {
      auto rows = Collect(conn_, next(), largest_message_);
      if (!broken()) (void)next();
      if (!failed.ok()) continue;
      if (rows.ok()) {
        out.push_back(std::move(rows.value()));
      } else {
        failed = rows.status();
      }
    }
    while (!broken()) {
      ResultPtr sync = next();
      if (!sync || PQresultStatus(sync.get()) == PGRES_PIPELINE_SYNC) break;
    }
  } else {
    failed = StatusFromResult(conn_, nullptr);
  }
  if (!PQexitPipelineMode(conn_) && !broken()) {
    // Results are left unread: this session's protocol state is unknown.
    return Status::Connection("a pipelined statement left results unread: " +
                              std::string(PQerrorMessage(conn_)));
  }
  if (!failed.ok()) return failed;
  if (out.size() != statements.size()) {
    return Status::Connection("the connection broke while a pipeline's results were read");
  }
  return out;
}

Result<Rows> Connection::BeginAndQuery(std::string_view sql, const Params& params) {
  auto ran = QueryPipelined({{"BEGIN", {}, /*prepared=*/false}, {sql, params}});
  if (!ran.ok()) return ran.status();
  return std::move(ran->back());
}

void Connection::RequestCancel() {
  std::lock_guard lock(cancel_mu_);
  if (!cancel_) return;
  char errbuf[256];
  PQcancel(cancel_, errbuf, sizeof errbuf);
}

bool Connection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

bool Connection::Usable() const {
  if (broken()) return false;
  if (PQtransactionStatus(conn_) != PQTRANS_IDLE) return true;  // busy or in a transaction
  // The server sends nothing to an idle session (Trellis never LISTENs, and
  // parameter reports come with a statement's reply), except when it closes
  // it: a FATAL message and EOF after a restart, pg_terminate_backend or an
  // idle timeout. So a readable socket here means the session is gone, even
  // though PQstatus says OK until libpq reads. Under TLS the bytes are TLS
  // records, which poll() sees just the same.
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0) return false;
  return poll(&fd, 1, 0) == 0;
}

bool Connection::in_transaction() const { return PQtransactionStatus(conn_) != PQTRANS_IDLE; }

std::string Connection::database() const { return PQdb(conn_); }

int Connection::server_version_num() const { return PQserverVersion(conn_); }

int Connection::backend_pid() const { return PQbackendPID(conn_); }

Result<std::unique_ptr<Transaction>> Transaction::Begin(Connection& conn,
                                                        std::string_view begin_sql) {
  Status st = conn.Exec(begin_sql);
  if (!st.ok()) return st;
  return std::unique_ptr<Transaction>(new Transaction(conn));
}

Result<std::unique_ptr<Transaction>> Transaction::BeginWith(Connection& conn, std::string_view sql,
                                                            const Params& params, Rows* rows) {
  auto ran = conn.BeginAndQuery(sql, params);
  // BEGIN ran unless the whole pipeline failed: this rolls back what it began.
  auto tx = std::unique_ptr<Transaction>(new Transaction(conn));
  if (!ran.ok()) {
    if (!conn.in_transaction()) tx->done_ = true;
    return ran.status();
  }
  if (rows) *rows = std::move(ran.value());
  return tx;
}

Transaction::~Transaction() {
  if (!done_ && !conn_.broken()) (void)conn_.Exec("ROLLBACK");
}

Status Transaction::Commit() {
  done_ = true;
  return conn_.Exec("COMMIT");
}

std::string RedactConninfo(std::string_view conninfo) {
  std::string text(conninfo);
  // URL form: scheme://user:password@host
  static const std::regex url_password(R"(^([a-zA-Z][a-zA-Z0-9+.-]*://[^:@/?#]*):[^@/?#]*@)");
  text = std::regex_replace(text, url_password, "$1:***@");
  // Query or key=value form: password=secret
  static const std::regex kv_password(R"((password\s*=\s*)('[^']*'|[^&\s]*))", std::regex::icase);
  return std::regex_replace(text, kv_password, "$1***");
}

}  // namespace trellis::pg
