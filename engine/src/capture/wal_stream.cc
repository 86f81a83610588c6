#include "capture/wal_stream.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

#include "log/component_log.h"
#include "pg/libpq_connect.h"

namespace trellis::capture {
namespace {

using pgoutput::Lsn;

std::shared_ptr<spdlog::logger> StreamLogger() {
  static const auto logger = log::Component("trellis::capture");
  return logger;
}

uint64_t ReadBig64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void WriteBig64(char* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

// Microseconds since 2000-01-01 UTC, as the replication protocol counts.
int64_t ProtocolNow() {
  constexpr int64_t kEpochShiftUs = 946684800LL * 1000000LL;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(now).count() - kEpochShiftUs;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

Status ResultError(PGresult* res, PGconn* conn, const std::string& what) {
  std::string message = Trimmed(res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
  if (message.empty()) message = Trimmed(PQerrorMessage(conn));
  Status s = Status::Database(what + ": " + message);
  if (res) {
    if (const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE)) s.sqlstate = state;
  }
  return s;
}

// Waits until the socket is readable (or writable), at most `ms`.
void WaitSocket(PGconn* conn, bool write, int ms) {
  const int fd = PQsocket(conn);
  if (fd < 0 || ms <= 0) return;
  pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
  (void)poll(&p, 1, ms);
}

}  // namespace

Result<std::unique_ptr<WalStream>> WalStream::Start(const std::string& url,
                                                    const std::string& application_name,
                                                    const std::string& slot,
                                                    const std::string& publication) {
  auto opened = pg::OpenLibpqSession(
      url, {{"replication", "database"}, {"application_name", application_name}});
  if (!opened.ok()) return opened.status();
  PGconn* conn = opened.value();
  // Owned from here: closed on every early return (a stream that never
  // started only finishes the session).
  std::unique_ptr<WalStream> stream(new WalStream(conn, slot, 0));
  // A walsender whose name synchronous_standby_names matches can be chosen
  // as a synchronous standby: writers would then wait for the stream's
  // confirmed position, which waits for the staging of writers the server
  // shows committed, and a writer waiting there is not shown committed yet
  // (capture/visible_commits.h): each would wait for the other. Such a
  // server is read by peeks, which no writer waits for.
  {
    PGresult* names = PQexec(conn, "SELECT current_setting('synchronous_standby_names')");
    std::string standby_names;
    if (PQresultStatus(names) == PGRES_TUPLES_OK && PQntuples(names) == 1) {
      standby_names = PQgetvalue(names, 0, 0);
    }
    PQclear(names);
    std::string lower_names = standby_names, lower_app = application_name;
    for (auto* text : {&lower_names, &lower_app}) {
      for (char& c : *text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (lower_names.find('*') != std::string::npos ||
        (!lower_app.empty() && lower_names.find(lower_app) != std::string::npos)) {
      return Status::Database("synchronous_standby_names ('" + standby_names +
                              "') would let the server choose the staging worker's walsender as "
                              "a synchronous standby, which writers would then wait for; list "
                              "the standbys by name instead of '*'");
    }
  }
  char* literal = PQescapeLiteral(conn, slot.c_str(), slot.size());
  char* ident = PQescapeIdentifier(conn, slot.c_str(), slot.size());
  const std::string slot_literal = literal ? literal : "''";
  const std::string slot_ident = ident ? ident : "\"\"";
  PQfreemem(literal);
  PQfreemem(ident);
  PGresult* res = PQexec(conn, ("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                "WHERE slot_name = " +
                                slot_literal)
                                   .c_str());
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    Status s = ResultError(res, conn, "reading replication slot " + slot);
    PQclear(res);
    return s;
  }
  if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0)) {
    PQclear(res);
    Status gone = Status::Database("replication slot " + slot + " does not exist");
    gone.sqlstate = "42704";
    return gone;
  }
  const std::string confirmed_text = PQgetvalue(res, 0, 0);
  PQclear(res);
  // The server starts at the slot's confirmed position whatever is asked
  // below it; the stream must never confirm less than it.
  Lsn confirmed = 0;
  {
    const auto slash = confirmed_text.find('/');
    if (slash != std::string::npos) {
      confirmed = (std::stoull(confirmed_text.substr(0, slash), nullptr, 16) << 32) |
                  std::stoull(confirmed_text.substr(slash + 1), nullptr, 16);
    }
  }
  stream->confirmed_ = confirmed;
  stream->received_ = confirmed;
  std::string names = "\"";
  for (char c : publication) {
    if (c == '"') names += '"';
    if (c == '\'') names += '\'';
    names += c;
  }
  names += '"';
  const std::string start = "START_REPLICATION SLOT " + slot_ident + " LOGICAL " +
                            pgoutput::LsnText(confirmed) +
                            " (proto_version '1', publication_names '" + names + "')";
  res = PQexec(conn, start.c_str());
  if (PQresultStatus(res) != PGRES_COPY_BOTH) {
    Status s = ResultError(res, conn, "streaming replication slot " + slot);
    PQclear(res);
    return s;
  }
  PQclear(res);
  // Reads and status updates never block the staging transaction.
  if (PQsetnonblocking(conn, 1) != 0) {
    return Status::Connection("cannot make the replication connection non-blocking");
  }
  return stream;
}

WalStream::~WalStream() {
  if (!conn_) return;
  // End the stream and wait (at most ~2 s) for the server's answer: the
  // walsender releases the slot before it completes the command, so the
  // slot is free for a peek, an advance or a drop once this returns.
  if (PQstatus(conn_) == CONNECTION_OK && PQputCopyEnd(conn_, nullptr) == 1) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    auto left = [&] {
      return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count());
    };
    while (PQflush(conn_) == 1 && left() > 0) WaitSocket(conn_, true, left());
    bool done = false;
    while (!done && left() > 0) {
      if (PQconsumeInput(conn_) == 0) break;
      char* buf = nullptr;
      int n;
      while ((n = PQgetCopyData(conn_, &buf, 1)) > 0) PQfreemem(buf);
      if (n == -2) break;
      if (n == 0) {
        WaitSocket(conn_, false, left());
        continue;
      }
      // The server ended its side: collect the results, then it is idle.
      while (!PQisBusy(conn_)) {
        PGresult* res = PQgetResult(conn_);
        if (!res) {
          done = true;
          break;
        }
        PQclear(res);
      }
      if (!done) WaitSocket(conn_, false, left());
    }
  }
  PQfinish(conn_);
}

size_t WalStream::buffered_messages() const { return messages_; }

Status WalStream::Pump(size_t budget) {
  if (PQconsumeInput(conn_) == 0) {
    return Status::Connection("replication stream of slot " + slot_ +
                              " failed: " + Trimmed(PQerrorMessage(conn_)));
  }
  // Bounded: what arrived while reading is taken in, but no more than a
  // few rounds, and none once the budget is buffered.
  for (int round = 0; round < 64; ++round) {
    bool any = false;
    for (;;) {
      if (!transactions_.empty() && messages_ >= budget) break;
      char* buf = nullptr;
      const int n = PQgetCopyData(conn_, &buf, 1);
      if (n == 0) break;
      if (n == -1) {
        PGresult* res = PQgetResult(conn_);
        Status s = ResultError(res, conn_, "replication stream of slot " + slot_ + " ended");
        PQclear(res);
        return s;
      }
      if (n < 0) {
        return Status::Connection("replication stream of slot " + slot_ +
                                  " failed: " + Trimmed(PQerrorMessage(conn_)));
      }
      Status s = Message(buf, n);
      PQfreemem(buf);
      TRELLIS_RETURN_IF_ERROR(s);
      any = true;
    }
    if (!any || (!transactions_.empty() && messages_ >= budget)) break;
    if (PQconsumeInput(conn_) == 0) {
      return Status::Connection("replication stream of slot " + slot_ +
                                " failed: " + Trimmed(PQerrorMessage(conn_)));
    }
  }
  if (PQflush(conn_) < 0) {
    return Status::Connection("replication stream of slot " + slot_ +
                              " failed: " + Trimmed(PQerrorMessage(conn_)));
  }
  return Status::OK();
}

Status WalStream::Message(const char* data, int size) {
  if (size < 1) return Status::OK();
  if (data[0] == 'k') {
    // Keepalive: walEnd, sendTime, replyRequested. The walsender sends
    // its position after everything before it, so every commit record
    // that begins before it has been received. Answered every time: the
    // walsender sends the next keepalive (the next position) only once it
    // heard back from the last.
    if (size < 18) return Status::Internal("replication stream: a short keepalive");
    received_ = std::max(received_, ReadBig64(data + 1));
    return SendStatus();
  }
  if (data[0] != 'w') return Status::OK();
  if (size < 25) return Status::Internal("replication stream: a short XLogData message");
  std::string payload(data + 25, static_cast<size_t>(size - 25));
  if (payload.empty()) return Status::OK();
  if (payload[0] == 'B') {
    if (open_) return Status::Internal("replication stream: a transaction began inside another");
    open_.emplace();
  } else if (!open_) {
    return Status::Internal("replication stream: a pgoutput message outside a transaction");
  }
  const bool commit = payload[0] == 'C';
  open_->messages.push_back(std::move(payload));
  if (!commit) return Status::OK();
  auto decoded = pgoutput::Decode(open_->messages.back());
  if (!decoded.ok()) return decoded.status();
  open_->end = std::get<pgoutput::Commit>(decoded.value()).end_lsn;
  received_ = std::max(received_, open_->end);
  messages_ += open_->messages.size();
  transactions_.push_back(std::move(*open_));
  open_.reset();
  return Status::OK();
}

Status WalStream::SendStatus() {
  char buf[34];
  buf[0] = 'r';
  WriteBig64(buf + 1, std::max(received_, confirmed_));  // written
  WriteBig64(buf + 9, confirmed_);                       // flushed: staged and committed
  WriteBig64(buf + 17, confirmed_);                      // applied
  WriteBig64(buf + 25, static_cast<uint64_t>(ProtocolNow()));
  buf[33] = 0;
  if (PQputCopyData(conn_, buf, sizeof buf) < 0 || PQflush(conn_) < 0) {
    return Status::Connection("replication stream of slot " + slot_ +
                              " failed: " + Trimmed(PQerrorMessage(conn_)));
  }
  return Status::OK();
}

Status WalStream::Confirm(Lsn through) {
  while (!transactions_.empty() && transactions_.front().end <= through) {
    for (const auto& m : transactions_.front().messages) {
      if (m.empty() || m[0] != 'R') continue;
      auto decoded = pgoutput::Decode(m);
      if (!decoded.ok()) return decoded.status();
      relations_[std::get<pgoutput::Relation>(decoded.value()).oid] = m;
    }
    messages_ -= transactions_.front().messages.size();
    transactions_.pop_front();
  }
  if (through <= confirmed_) return Status::OK();
  confirmed_ = through;
  return SendStatus();
}

// ---- This thread's stream ----

namespace {

// How long after a refused replication connection the next is tried.
constexpr auto kRetryRefusedEvery = std::chrono::seconds(10);

struct Owner {
  std::string url;
  std::string application_name;
  std::unique_ptr<WalStream> stream;
  uint64_t generation = 0;
  bool batch_open = false;  // a batch took from the stream and has not confirmed
  std::optional<std::chrono::steady_clock::time_point> refused_at;
  bool refusal_logged = false;
  std::optional<std::chrono::steady_clock::time_point> busy_since;
  bool catching_up = false;  // reading by peeks until close to the flush LSN
};

thread_local std::optional<Owner> t_owner;

std::atomic<uint64_t> catch_up_peeks{0};

std::mutex fallback_mu;
std::string fallback_reason;  // guarded by fallback_mu

void SetFallback(std::string reason) {
  std::lock_guard lock(fallback_mu);
  fallback_reason = std::move(reason);
}

}  // namespace

void OwnWalStreams(const std::string& url, const std::string& application_name) {
  t_owner.emplace();
  t_owner->url = url;
  t_owner->application_name = application_name + " walsender";
}

void ReleaseWalStreams() {
  if (!t_owner) return;
  t_owner.reset();
  SetFallback("");
}

void CloseWalStream() {
  if (t_owner) {
    t_owner->stream.reset();
    t_owner->batch_open = false;
  }
}

Result<OwnedStream> StreamForBatch(const std::string& slot, const std::string& publication) {
  if (!t_owner) return OwnedStream{};
  Owner& o = *t_owner;
  // The last batch taken from the stream failed before its commit: start
  // again from the slot's confirmed position.
  if (o.stream && (o.batch_open || o.stream->slot() != slot)) o.stream.reset();
  o.batch_open = false;
  const auto now = std::chrono::steady_clock::now();
  if (!o.stream) {
    if (o.refused_at && now - *o.refused_at < kRetryRefusedEvery) return OwnedStream{};
    auto started = WalStream::Start(o.url, o.application_name, slot, publication);
    if (!started.ok()) {
      const Status& s = started.status();
      // No such slot: as a peek would, the batch fails, and the health
      // round makes a new slot.
      if (s.sqlstate && *s.sqlstate == "42704") return s;
      if (!s.sqlstate || *s.sqlstate != "55006") {
        // Refused (pg_hba.conf, max_wal_senders, a pooler that passes no
        // replication connection) or failed: peeks read the slot meanwhile,
        // and the stream is tried again later.
        o.refused_at = now;
        const std::string why =
            "the replication slot is read by peeks, which decode the WAL again from the slot's "
            "restart point at every batch, because no replication stream could be started (" +
            s.message() +
            "). Where the connection was refused, let this role open a replication connection "
            "to the database: a "
            "pg_hba.conf line for it (a logical replication connection matches the database's "
            "lines, not `replication` ones), max_wal_senders above the WAL senders in use, a "
            "direct connection rather than a pooler, and the role's REPLICATION attribute; it is "
            "tried again every " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(kRetryRefusedEvery).count()) +
            " s";
        if (!o.refusal_logged) StreamLogger()->warn("capture by logical decoding: {}", why);
        o.refusal_logged = true;
        SetFallback(why);
        return OwnedStream{};
      }
      // Streamed by another process: a walsender of a staging worker
      // that lost its election and has not been closed yet, or one the
      // server has not finished ending. Nothing is taken this round.
      TRELLIS_RETURN_IF_ERROR(SlotInUse(slot, s));
      return OwnedStream{nullptr, true, o.generation};
    }
    o.busy_since.reset();
    if (o.refused_at) {
      StreamLogger()->info(
          "capture by logical decoding: replication connection made; slot {} is read "
          "through a walsender",
          slot);
    }
    o.refused_at.reset();
    if (o.catching_up) {
      StreamLogger()->info(
          "capture by logical decoding: slot {} caught up by peeks; reading it through a "
          "walsender again",
          slot);
      o.catching_up = false;
    }
    SetFallback("");
    o.stream = std::move(started.value());
    ++o.generation;
  }
  o.batch_open = true;
  return OwnedStream{o.stream.get(), false, o.generation};
}

void ConfirmStream(uint64_t generation, Lsn through) {
  if (!t_owner || !t_owner->stream || t_owner->generation != generation) return;
  t_owner->batch_open = false;
  Status confirmed = t_owner->stream->Confirm(through);
  if (!confirmed.ok()) {
    StreamLogger()->debug("replication stream closed: {}", confirmed.ToString());
    t_owner->stream.reset();
  }
}

Status SlotInUse(const std::string& slot, const Status& refusal) {
  if (!t_owner) return refusal;
  Owner& o = *t_owner;
  const auto now = std::chrono::steady_clock::now();
  if (!o.busy_since) o.busy_since = now;
  if (now - *o.busy_since < kBusyBound) return Status::OK();
  return Status::Database(
      "replication slot " + slot + " has been in use by another process for over " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kBusyBound).count()) +
      " s (" + refusal.message() +
      "): staging cannot read it. End whatever reads it "
      "(pg_terminate_backend of active_pid in pg_replication_slots)");
}

void SlotRead() {
  if (t_owner) t_owner->busy_since.reset();
}

bool OwnsWalStreams() { return t_owner.has_value(); }

void CatchUpByPeeks(const std::string& slot, uint64_t behind) {
  if (!t_owner) return;
  Owner& o = *t_owner;
  o.stream.reset();
  o.batch_open = false;
  catch_up_peeks.fetch_add(1);
  if (o.catching_up) return;
  o.catching_up = true;
  const std::string why =
      "replication slot " + slot + " is read by peeks while it catches up: it was " +
      std::to_string(behind >> 20) + " MB of WAL behind (more than " +
      std::to_string(kCatchUpBytes >> 20) +
      " MB), and a peek hands over a far-behind slot's changes faster than the walsender; the "
      "stream starts again once the slot is closer. Nothing to fix: a backlog "
      "(workers stopped, a burst of writes) is being staged";
  StreamLogger()->info("capture by logical decoding: {}", why);
  SetFallback(why);
}

uint64_t CatchUpPeeks() { return catch_up_peeks.load(); }

std::string WalStreamFallback() {
  std::lock_guard lock(fallback_mu);
  return fallback_reason;
}

}  // namespace trellis::capture
