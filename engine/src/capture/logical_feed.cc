#include "capture/logical_feed.h"

#include <algorithm>
#include <map>

#include "capture/decoded_changes.h"
#include "capture/relations.h"
#include "capture/routing.h"
#include "capture/visible_commits.h"
#include "capture/wal_stream.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

using pgoutput::Lsn;

// Changes (rows of a peek: every message counts) one batch reads at most
// per batch row staging asks for; the server ends a peek only at a commit,
// so a transaction is never cut however large.
constexpr int kChangesPerRow = 8;

std::optional<std::string> FromHex(const std::string& text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve((text.size() - 2) / 2);
  for (size_t i = 2; i < text.size(); i += 2) {
    const int hi = nibble(text[i]);
    const int lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// A text[] literal whose NULL elements are SQL NULLs.
std::string NullableArrayLiteral(const std::vector<std::optional<std::string>>& elements) {
  std::string out = "{";
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i) out += ',';
    if (!elements[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *elements[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// The sources of each relation the stream describes: a source's own table,
// any relation under it now (a partition attached since the relation sync
// last ran is already published), and any relation capture still links to
// it (one detached since is still the source's until the sync says so).
Result<std::map<uint32_t, std::vector<RelationSource>>> SourcesOf(
    pg::Connection& conn, const std::string& schema, const std::vector<uint32_t>& relids) {
  std::map<uint32_t, std::vector<RelationSource>> out;
  if (relids.empty()) return out;
  std::vector<std::string> oids;
  for (uint32_t oid : relids) oids.push_back(std::to_string(oid));
  auto rows = conn.QueryPrepared(sql::WithSchema(R"sql(
WITH RECURSIVE up(relid, ancestor) AS (
  SELECT r, r FROM unnest($1::oid[]) AS r
  UNION
  SELECT u.relid, i.inhparent FROM up u JOIN pg_catalog.pg_inherits i ON i.inhrelid = u.ancestor)
SELECT u.relid::text, s.id, s.routing_columns FROM up u JOIN {schema}.sources s ON s.relid = u.ancestor
UNION
SELECT r.relid::text, s.id, s.routing_columns FROM {schema}.source_relations r
JOIN {schema}.sources s ON s.id = r.source_id WHERE r.relid = ANY ($1::oid[]))sql",
                                                 schema),
                                 {sql::ArrayLiteral(oids)});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    const auto relid = static_cast<uint32_t>(std::stoul(row.Text(0)));
    RelationSource source{row.Int(1), row.TextArray(2)};
    if (!row.status().ok()) return row.status();
    out[relid].push_back(std::move(source));
  }
  return out;
}

// One batch read from the slot: its rows travel to the staging statement as
// five parallel arrays (parameters), unnested into `consumed`.
class SlotBatch final : public FeedBatch {
 public:
  struct Read {
    DecodedStream stream;
    bool cut = false;          // stopped short of `flush_lsn` (full, or held back)
    Lsn flush_lsn = 0;         // where the read could go up to
    Lsn insert_lsn = 0;        // the insert LSN after `snapshot`
    std::string snapshot;      // the transaction's snapshot
    uint64_t xmax = 0;         // the xmax of a snapshot taken after the read
    bool streamed = false;     // read from this thread's walsender stream (wal_stream.h)
    uint64_t generation = 0;   // of that stream
    bool unavailable = false;  // the slot was another process's: nothing read or recorded
  };

  SlotBatch(std::string schema, SlotPosition position, Read read)
      : schema_(std::move(schema)), position_(std::move(position)), read_(std::move(read)) {
    std::vector<std::string> source_ids, ops, xids, relids;
    std::vector<std::optional<std::string>> routings;
    for (const auto& row : read_.stream.rows) {
      source_ids.push_back(std::to_string(row.source_id));
      ops.push_back(std::string(1, row.op));
      xids.push_back(std::to_string(WidenXid(row.xid, read_.xmax)));
      relids.push_back(std::to_string(row.relid));
      routings.push_back(row.op == 'T' ? std::nullopt
                                       : std::optional<std::string>(RoutingLiteral(row.versions)));
    }
    params_ = {sql::ArrayLiteral(source_ids), sql::ArrayLiteral(ops), sql::ArrayLiteral(xids),
               NullableArrayLiteral(routings), sql::ArrayLiteral(relids)};
  }

  std::string TakeSql(int first_param, bool member) const override {
    auto p = [&](int i, const char* type) {
      return "$" + std::to_string(first_param + i) + "::" + type;
    };
    const std::string is_member =
        member ? CapturedUnderSourceSql(schema_, "__trellis_c") : std::string("NULL::boolean");
    return "SELECT id, source_id, op, xid, routing, " + std::string(kRoutingWidthSql) +
           " AS width, " + std::string(kRoutingVersionsSql) + " AS versions, " + is_member +
           " AS member FROM (SELECT v.ord AS id, v.source_id, v.op::\"char\" AS op, v.xid, "
           "v.routing_text::text[] AS routing, v.relid FROM unnest(" +
           p(0, "int[]") + ", " + p(1, "text[]") + ", " + p(2, "xid8[]") + ", " + p(3, "text[]") +
           ", " + p(4, "oid[]") +
           ") WITH ORDINALITY AS v(source_id, op, xid, routing_text, relid, ord)) AS __trellis_c";
  }

  // The rows are this batch's own: reading them takes nothing.
  std::string PeekSql(int first_param, bool member) const override {
    return TakeSql(first_param, member);
  }

  pg::Params Params() const override { return params_; }

  Status Staged(pg::Connection& conn, long taken) override {
    if (read_.unavailable) return Status::OK();
    const Lsn old = position_.staged_lsn ? ParseLsn(*position_.staged_lsn).value_or(0) : 0;
    recorded_ = old;
    const bool ends_at_mark = read_.stream.mark_seen && !position_.logical_mode;
    // A stream's read not cut short took every commit that begins before
    // the position the stream received through (a record boundary, see
    // wal_stream.h), which stands in for the flush LSN. A peek's read not
    // cut short took everything up to the flush LSN, and maybe
    // one commit more: the server stops a peek only after the record that
    // reaches `upto_lsn`, so a commit record that begins before the flush
    // LSN and ends after it (the flush position can fall inside a record)
    // is decoded and staged too. Recording the flush LSN alone would leave
    // that transaction above the position: after a crash between this
    // commit and the slot's advance, the slot hands it over again and it
    // would be staged twice. So the position is the later of the two.
    Lsn through = (read_.cut || ends_at_mark) ? read_.stream.last_end
                                              : std::max(read_.flush_lsn, read_.stream.last_end);
    through = std::max(through, old);
    const bool moved = through > old || read_.stream.mark_seen;
    // A read cut short that held only transactions staged already: the slot
    // is behind the staged position by more than one read (its advance was
    // lost: an immediate restart brings back the position the server last
    // saved, a shutdown cancels the advance after the commit). Reading it
    // again would bring the same transactions back every time, so the slot
    // moves up to the staged position, which committed, and the next read
    // starts after it.
    if (!moved && read_.cut) {
      confirm_ = pgoutput::LsnText(old);
      return Status::OK();
    }
    // A read that found nothing moves the position too (a watermark waits
    // for it), but at most every 50 ms: each write is WAL the next read
    // passes over.
    if (!moved || (taken == 0 && !read_.stream.mark_seen && position_.written_recently)) {
      return Status::OK();
    }
    // The recorded snapshot: every writer visible in a snapshot taken
    // before the insert LSN L had written its commit before L, so once the
    // position reaches L they are all staged (OldestUnstagedXidSql).
    std::optional<std::string> staged_snapshot;
    std::optional<std::string> pending_snapshot = position_.pending_snapshot;
    std::optional<std::string> pending_lsn = position_.pending_lsn;
    if (pending_lsn && ParseLsn(*pending_lsn).value_or(UINT64_MAX) <= through) {
      staged_snapshot = pending_snapshot;
      pending_snapshot.reset();
      pending_lsn.reset();
    }
    if (!pending_lsn) {
      if (read_.insert_lsn <= through) {
        staged_snapshot = read_.snapshot;
      } else {
        pending_snapshot = read_.snapshot;
        pending_lsn = pgoutput::LsnText(read_.insert_lsn);
      }
    }
    // Nothing taken: a lost commit only moves the position back over
    // changes no reader needed, so it need not wait for the disk.
    if (taken == 0) TRELLIS_RETURN_IF_ERROR(conn.Exec("SET LOCAL synchronous_commit = off"));
    drop_slot_ = ends_at_mark;
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.capture_feed SET
  staged_lsn = CASE WHEN $6 THEN NULL ELSE $1::pg_lsn END,
  staged_snapshot = CASE WHEN $6 THEN NULL ELSE coalesce($2::pg_snapshot, staged_snapshot) END,
  pending_snapshot = CASE WHEN $6 THEN NULL ELSE $3::pg_snapshot END,
  pending_lsn = CASE WHEN $6 THEN NULL ELSE $4::pg_lsn END,
  awaiting_mark = CASE WHEN $5 THEN NULL ELSE awaiting_mark END,
  slot_name = CASE WHEN $6 THEN NULL ELSE slot_name END,
  publication_name = CASE WHEN $6 THEN NULL ELSE publication_name END,
  staged_at = now())sql",
                                  schema_),
                  {pgoutput::LsnText(through), staged_snapshot, pending_snapshot, pending_lsn,
                   read_.stream.mark_seen ? "true" : "false", drop_slot_ ? "true" : "false"}));
    confirm_ = pgoutput::LsnText(through);
    recorded_ = through;
    return Status::OK();
  }

  Status Committed(pg::Connection& conn) override {
    if (read_.unavailable) return Status::OK();
    if (read_.streamed && !drop_slot_) {
      // The stream forgets what the committed position covers and confirms
      // it (a standby status update); while the stream is open no other
      // session may advance the slot, and none needs to.
      ConfirmStream(read_.generation, recorded_);
      return Status::OK();
    }
    if (!confirm_) return Status::OK();
    if (drop_slot_) {
      // The walsender holds the slot while the stream is open.
      CloseWalStream();
      // Back to triggers, and everything before the switch staged: the slot
      // would only hold WAL from now on.
      static const auto logger = log::Component("trellis::capture");
      logger->info("capture by triggers in force; dropping replication slot {}", position_.slot);
      TRELLIS_RETURN_IF_ERROR(conn.Exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name "
          "= $1",
          {position_.slot}));
      return conn.Exec("DROP PUBLICATION IF EXISTS " + sql::Ident(position_.publication));
    }
    // Only ever forward, and only to what committed: a position that went
    // back (an asynchronous commit lost in a crash) is left to move on.
    return conn.Exec(
        "SELECT pg_replication_slot_advance(slot_name, $2::pg_lsn) FROM pg_replication_slots "
        "WHERE slot_name = $1 AND confirmed_flush_lsn < $2::pg_lsn",
        {position_.slot, *confirm_});
  }

 private:
  std::string schema_;
  SlotPosition position_;
  Read read_;
  pg::Params params_;
  std::optional<std::string> confirm_;
  Lsn recorded_ = 0;  // the position capture_feed holds once the batch commits
  bool drop_slot_ = false;
};

}  // namespace

std::optional<uint64_t> ParseLsn(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
  try {
    size_t used = 0;
    const uint64_t hi = std::stoull(text.substr(0, slash), &used, 16);
    if (used != slash) return std::nullopt;
    const uint64_t lo = std::stoull(text.substr(slash + 1), &used, 16);
    if (used != text.size() - slash - 1 || hi > 0xffffffffull || lo > 0xffffffffull) {
      return std::nullopt;
    }
    return (hi << 32) | lo;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// Whole transactions the stream has received, at most about `changes`
// messages (at least one transaction), after the Relation messages the
// server sent earlier in the session; `cut` when some were left.
std::vector<std::string> FromStream(const WalStream& stream, int changes, bool* cut) {
  std::vector<std::string> messages;
  for (const auto& [oid, relation] : stream.relations()) messages.push_back(relation);
  size_t taken = 0;
  long count = 0;
  for (const auto& txn : stream.transactions()) {
    if (taken > 0 && count >= changes) break;
    messages.insert(messages.end(), txn.messages.begin(), txn.messages.end());
    count += static_cast<long>(txn.messages.size());
    ++taken;
  }
  *cut = taken < stream.transactions().size();
  return messages;
}

}  // namespace

Result<std::unique_ptr<FeedBatch>> TakeSlotBatch(pg::Connection& conn, const std::string& schema,
                                                 const SlotPosition& position, int max_rows) {
  SlotBatch::Read read;
  // The snapshot first, then the insert LSN, then the flush LSN: a writer
  // visible in the snapshot wrote its commit before the insert LSN. The
  // slot's confirmed position too, to tell how far behind it is.
  auto now = conn.QueryPrepared(
      "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text, "
      "pg_current_wal_flush_lsn()::text, (SELECT confirmed_flush_lsn::text FROM "
      "pg_replication_slots WHERE slot_name = $1)",
      {position.slot});
  if (!now.ok()) return now.status();
  read.snapshot = now->text(0, 0);
  read.insert_lsn = ParseLsn(now->text(0, 1)).value_or(0);
  read.flush_lsn = ParseLsn(now->text(0, 2)).value_or(0);
  const Lsn staged = position.staged_lsn ? ParseLsn(*position.staged_lsn).value_or(0) : 0;
  // A slot far behind is read by a large peek even by the staging worker
  // (wal_stream.h, "Catching up by peeks"): its stream is closed first, and
  // the next batch close enough starts a new one from the slot's confirmed
  // position, which this batch's Committed advanced.
  const Lsn from = std::max(staged, ParseLsn(now->text(0, 3)).value_or(0));
  const bool catch_up = OwnsWalStreams() && from > 0 && read.flush_lsn > from + kCatchUpBytes;
  if (catch_up) CatchUpByPeeks(position.slot, read.flush_lsn - from);
  // The elected staging worker reads through its walsender stream; any
  // other caller (and a worker the server refused a replication connection)
  // peeks.
  auto owned = catch_up ? Result<OwnedStream>(OwnedStream{})
                        : StreamForBatch(position.slot, position.publication);
  if (!owned.ok()) return owned.status();
  if (owned->busy) {
    read.unavailable = true;
    return std::unique_ptr<FeedBatch>(
        std::make_unique<SlotBatch>(schema, position, std::move(read)));
  }
  WalStream* ws = owned->stream;
  read.streamed = ws != nullptr;
  read.generation = owned->generation;
  // Nothing flushed past the staged position: a peek would decode from the
  // slot's restart point only to hand over nothing new (every commit that
  // begins before the staged position is staged, see Staged), and its
  // decoding context alone costs milliseconds. An idle catalog polls every
  // 10 ms, so this is most of what logical capture costs the server while
  // nobody writes.
  const int changes = catch_up ? kCatchUpChanges : std::max(max_rows, 1) * kChangesPerRow;
  // A stream buffers at most a few batches ahead; past that the server
  // waits on the socket.
  const size_t read_ahead = static_cast<size_t>(changes) * 4;
  if (staged > 0 && read.flush_lsn <= staged && !position.awaiting_mark) {
    // Still answer the walsender's keepalives.
    if (ws && !ws->Pump(read_ahead).ok()) CloseWalStream();
    return std::unique_ptr<FeedBatch>(
        std::make_unique<SlotBatch>(schema, position, std::move(read)));
  }
  std::vector<std::string> messages;
  if (ws) {
    Status pumped = ws->Pump(read_ahead);
    if (!pumped.ok()) {
      // The server closed it (restart, pg_terminate_backend, timeout): an
      // idle connection still says CONNECTION_OK until read. A new stream
      // starts from the slot's confirmed position; the decoder skips what
      // was staged.
      static const auto logger = log::Component("trellis::capture");
      logger->info("replication stream of slot {} closed ({}); starting a new one", position.slot,
                   pumped.message());
      CloseWalStream();
      owned = StreamForBatch(position.slot, position.publication);
      if (!owned.ok()) return owned.status();
      ws = owned->stream;
      read.generation = owned->generation;
      if (owned->busy || !ws) {
        read.unavailable = true;
        return std::unique_ptr<FeedBatch>(
            std::make_unique<SlotBatch>(schema, position, std::move(read)));
      }
      TRELLIS_RETURN_IF_ERROR(ws->Pump(read_ahead));
    }
    // Never waits: what has arrived is taken, the rest comes next batch.
    messages = FromStream(*ws, changes, &read.cut);
    read.flush_lsn = ws->received();
  } else {
    // Decoding reads only flushed WAL, so the flush LSN is as far as a read
    // can get; under asynchronous commit it trails the insert LSN.
    const std::string peek_sql =
        "SELECT data FROM pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, $3::int, "
        "'proto_version', '1', 'publication_names', $4)";
    const pg::Params peek_params = {position.slot, now->text(0, 2), std::to_string(changes),
                                    position.publication};
    // A catch-up peek right after the stream closed may still find the
    // slot held by the walsender being ended (55006): that is a pause, as
    // for a stream, not a failure of the staging transaction.
    if (catch_up) TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_catch_up"));
    auto peeked = conn.QueryPrepared(peek_sql, peek_params);
    if (catch_up && !peeked.ok() && peeked.status().sqlstate &&
        *peeked.status().sqlstate == "55006") {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_catch_up"));
      TRELLIS_RETURN_IF_ERROR(SlotInUse(position.slot, peeked.status()));
      read.unavailable = true;
      return std::unique_ptr<FeedBatch>(
          std::make_unique<SlotBatch>(schema, position, std::move(read)));
    }
    if (!peeked.ok()) return peeked.status();
    if (catch_up) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_catch_up"));
      SlotRead();
    }
    read.cut = static_cast<long>(peeked->size()) >= changes;
    messages.reserve(peeked->size());
    for (size_t r = 0; r < peeked->size(); ++r) {
      auto bytes = FromHex(peeked->text(r, 0));
      if (!bytes) return Status::Internal("a replication slot row is not a bytea in hex form");
      messages.push_back(std::move(*bytes));
    }
    peeked->rows.clear();
  }
  // Only what a snapshot taken after the read shows committed is staged
  // (capture/visible_commits.h): the rest is read again next time. Its xmax
  // also widens the read's transaction ids: each was assigned before it
  // (the snapshot above may predate a writer the read returned).
  auto after = conn.QueryPrepared("SELECT pg_current_snapshot()::text");
  if (!after.ok()) return after.status();
  auto seen = XactSnapshot::Parse(after->text(0, 0));
  if (!seen) return Status::Internal("the server's snapshot is not in the form xmin:xmax:xip");
  read.xmax = seen->xmax;
  auto visible = VisiblePrefix(messages, *seen);
  if (!visible.ok()) return visible.status();
  if (visible.value() < messages.size()) {
    messages.resize(visible.value());
    read.cut = true;
  }
  auto relids = DescribedRelations(messages);
  if (!relids.ok()) return relids.status();
  auto sources = SourcesOf(conn, schema, relids.value());
  if (!sources.ok()) return sources.status();
  DecodeRules rules;
  rules.staged_through = position.staged_lsn ? ParseLsn(*position.staged_lsn).value_or(0) : 0;
  rules.marks_relid = position.marks_relid;
  rules.awaiting_mark = position.awaiting_mark;
  rules.take_before_mark = !position.logical_mode;
  auto stream = DecodeChanges(messages, sources.value(), rules);
  if (!stream.ok()) return stream.status();
  if (!stream->unroutable.empty()) {
    static const auto logger = log::Component("trellis::capture");
    logger->warn(
        "{} change(s) of {} came without the old values readers route by (its replica identity "
        "lacks them): the transforms reading it rebuild. Trellis sets REPLICA IDENTITY FULL "
        "where a reader needs it; check that nobody changed it back",
        stream->unroutable.size(), stream->unroutable.front());
  }
  read.stream = std::move(stream.value());
  return std::unique_ptr<FeedBatch>(std::make_unique<SlotBatch>(schema, position, std::move(read)));
}

}  // namespace trellis::capture
