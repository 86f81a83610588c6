#include "capture/slot.h"

#include <chrono>
#include <thread>

#include "capture/logical_feed.h"
#include "capture/names.h"
#include "capture/publication.h"
#include "capture/wal_stream.h"
#include "catalog/locks.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// SlotHold's advisory key, one per catalog schema.
constexpr const char* kSlotHoldKey = "hashtext('trellis.slot_hold:' || $1), 0";

const auto& SlotLogger() {
  static const auto logger = log::Component("trellis::capture");
  return logger;
}

Status EnsurePublication(pg::Connection& conn, const std::string& schema, const std::string& name) {
  auto pub = conn.Query("SELECT EXISTS (SELECT FROM pg_publication WHERE pubname = $1)", {name});
  if (!pub.ok()) return pub.status();
  if (pub->text(0, 0) == "t") return Status::OK();
  return conn.Exec(sql::WithSchema(
      "CREATE PUBLICATION " + sql::Ident(name) + " FOR TABLE {schema}.capture_marks", schema));
}

// Every source's relations in `publication`, with the identity each needs.
Status PublishAllSources(pg::Connection& conn, const std::string& schema,
                         const std::string& publication) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  auto rows = conn.Query(
      sql::WithSchema("SELECT id, routing_columns FROM {schema}.sources ORDER BY id", schema));
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    catalog::Source source;
    source.id = row.Int(0);
    source.routing_columns = row.TextArray(1);
    if (!row.status().ok()) return row.status();
    TRELLIS_RETURN_IF_ERROR(PublishSource(conn, schema, publication, source));
  }
  return tx.value()->Commit();
}

// Tries to drop a busy slot this many times, this far apart: the staging
// worker holds it while it peeks and while it confirms a batch (the
// advance, after the batch's commit, outside the staging fence), each a
// moment.
constexpr int kDropAttempts = 100;
constexpr auto kDropRetryEvery = std::chrono::milliseconds(20);

// Drops `slot` if it exists. Inside a transaction each attempt runs under a
// savepoint, so a refusal (the slot is in use) leaves the transaction whole.
Status DropSlot(pg::Connection& conn, const std::string& slot, bool in_transaction) {
  // The staging worker running here closes its own stream first (its
  // walsender holds the slot between batches).
  CloseWalStream();
  for (int attempt = 1;; ++attempt) {
    if (in_transaction) TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_drop_slot"));
    Status dropped = conn.Exec(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = "
        "$1",
        {slot});
    if (dropped.ok()) {
      return in_transaction ? conn.Exec("RELEASE SAVEPOINT trellis_drop_slot") : dropped;
    }
    // 55006: object_in_use, "replication slot ... is active for PID".
    if (dropped.sqlstate != "55006" || attempt == kDropAttempts) return dropped;
    if (in_transaction) {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_drop_slot"));
    }
    // A walsender holds it: the stream of a staging worker elsewhere (it
    // stays open between batches, so waiting would not free the slot).
    // Ended here; that worker starts a new stream at its next batch, which
    // finds the catalog's slot gone or replaced. A peek or an advance (a
    // worker that reads by peeks) is waited out instead.
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_terminate_backend(s.active_pid) FROM pg_replication_slots s "
                  "JOIN pg_stat_activity a ON a.pid = s.active_pid "
                  "WHERE s.slot_name = $1 AND a.backend_type = 'walsender'",
                  {slot}));
    std::this_thread::sleep_for(kDropRetryEvery);
  }
}

struct FeedSlot {
  std::string mode;
  std::optional<std::string> slot;
};

Result<FeedSlot> ReadFeedSlot(pg::Connection& conn, const std::string& schema) {
  auto rows =
      conn.Query(sql::WithSchema("SELECT mode, slot_name FROM {schema}.capture_feed", schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return FeedSlot{"triggers", std::nullopt};
  return FeedSlot{rows->text(0, 0), rows->at(0, 1)};
}

}  // namespace

Result<bool> SlotExists(pg::Connection& conn, const std::string& slot) {
  auto rows =
      conn.Query("SELECT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = $1)", {slot});
  if (!rows.ok()) return rows.status();
  return rows->text(0, 0) == "t";
}

Status EnsurePublicationAndSlot(pg::Connection& conn, const std::string& schema,
                                const std::string& name) {
  TRELLIS_RETURN_IF_ERROR(EnsurePublication(conn, schema, name));
  auto exists = SlotExists(conn, name);
  if (!exists.ok()) return exists.status();
  if (exists.value()) return Status::OK();
  Status made = conn.Exec("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", {name});
  if (made.ok()) return made;
  // Another port made it meanwhile.
  auto again = SlotExists(conn, name);
  if (again.ok() && again.value()) return Status::OK();
  return made;
}

Status ReplaceLostSlot(pg::Connection& conn, const std::string& schema, const std::string& why) {
  const std::string name = SlotName(conn.database(), schema);
  auto feed = ReadFeedSlot(conn, schema);
  if (!feed.ok()) return feed.status();
  // Switching back to triggers, the slot's part before the mark is lost:
  // no new slot, the switch is done, and everything rebuilds.
  const bool logical = feed->mode == "logical";
  // What is left of the old slot cannot be read (invalidated, or its
  // publication gone from under it): it goes.
  TRELLIS_RETURN_IF_ERROR(DropSlot(conn, name, /*in_transaction=*/false));
  // The publication, with every source in it, before the new slot: the
  // slot waits for every transaction running as it is made, so a change
  // it does not hold committed before it, and the rebuilds below, whose
  // snapshots come later, see it.
  if (logical) {
    TRELLIS_RETURN_IF_ERROR(EnsurePublication(conn, schema, name));
    TRELLIS_RETURN_IF_ERROR(PublishAllSources(conn, schema, name));
    TRELLIS_RETURN_IF_ERROR(EnsurePublicationAndSlot(conn, schema, name));
  } else {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP PUBLICATION IF EXISTS " + sql::Ident(name)));
  }
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.capture_feed SET slot_name = $1, publication_name = $1, awaiting_mark = NULL,
  staged_lsn = NULL, staged_snapshot = NULL, pending_snapshot = NULL, pending_lsn = NULL,
  staged_at = NULL)sql",
                                                    schema),
                                    {logical ? std::optional<std::string>(name) : std::nullopt}));
  auto ids = conn.Query(sql::WithSchema("SELECT id FROM {schema}.transforms ORDER BY id", schema));
  if (!ids.ok()) return ids.status();
  for (size_t r = 0; r < ids->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(
        catalog::RequestRebuild(conn, schema, std::stoi(ids->text(r, 0)), std::nullopt));
  }
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  SlotLogger()->warn(
      "replication slot {} {}: {}, and {} transform(s) rebuild to take in what the old one "
      "held. If the slot was invalidated by max_slot_wal_keep_size, keep a staging handle "
      "(staging: true) connected, or raise the limit",
      name, why, logical ? "made a new one" : "capture by triggers goes on without it",
      ids->size());
  return Status::OK();
}

SlotHold::~SlotHold() {
  if (conn_ == nullptr) return;
  // A broken session has released it already.
  (void)conn_->Exec(std::string("SELECT pg_advisory_unlock_shared(") + kSlotHoldKey + ")",
                    {schema_});
}

Result<std::unique_ptr<SlotHold>> EnsureSlotBeforeDefine(pg::Connection& conn,
                                                         const std::string& schema) {
  auto none = std::make_unique<SlotHold>(nullptr, schema);
  // An unmigrated catalog is the define's to report.
  if (!catalog::CheckMigrated(conn, schema).ok()) return none;
  auto feed = ReadFeedSlot(conn, schema);
  if (!feed.ok()) return feed.status();
  if (feed->mode != "logical") return none;
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(std::string("SELECT pg_advisory_lock_shared(") + kSlotHoldKey + ")", {schema}));
  auto hold = std::make_unique<SlotHold>(&conn, schema);
  if (feed->slot) {
    auto alive = SlotExists(conn, *feed->slot);
    if (!alive.ok()) return alive.status();
    if (alive.value()) return hold;
    TRELLIS_RETURN_IF_ERROR(ReplaceLostSlot(conn, schema, "was gone when a transform was defined"));
    return hold;
  }
  const std::string name = SlotName(conn.database(), schema);
  TRELLIS_RETURN_IF_ERROR(EnsurePublicationAndSlot(conn, schema, name));
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  // Another port may have recorded it meanwhile: the same name, the same slot.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.capture_feed SET slot_name = $1, publication_name = $1, awaiting_mark = NULL,
  staged_lsn = NULL, staged_snapshot = NULL, pending_snapshot = NULL, pending_lsn = NULL,
  staged_at = NULL
WHERE mode = 'logical' AND slot_name IS NULL)sql",
                                                    schema),
                                    {name}));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  SlotLogger()->info(
      "capture by logical decoding: made replication slot {} for the first transform", name);
  return hold;
}

Result<bool> DropSlotIfUnused(pg::Connection& conn, const std::string& schema) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  // Cheap first look, without the fence: most rounds find a slot in use.
  auto unused = conn.Query(sql::WithSchema(
      "SELECT slot_name, publication_name FROM {schema}.capture_feed WHERE slot_name IS NOT NULL "
      "AND NOT EXISTS (SELECT FROM {schema}.sources)",
      schema));
  if (!unused.ok()) return unused.status();
  if (unused->empty()) return false;
  // The fence: no staging batch is reading the slot, and no define is
  // publishing a source into it, until this commits.
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  auto still = conn.Query(sql::WithSchema(
      "SELECT slot_name, publication_name FROM {schema}.capture_feed WHERE slot_name IS NOT NULL "
      "AND NOT EXISTS (SELECT FROM {schema}.sources) FOR UPDATE",
      schema));
  if (!still.ok()) return still.status();
  if (still->empty()) return false;
  // A define between making sure of the slot and its commit holds it.
  auto free =
      conn.Query(std::string("SELECT pg_try_advisory_xact_lock(") + kSlotHoldKey + ")", {schema});
  if (!free.ok()) return free.status();
  if (free->text(0, 0) != "t") return false;
  const std::string slot = still->text(0, 0);
  const std::optional<std::string> publication = still->at(0, 1);
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.capture_feed SET slot_name = NULL, publication_name = NULL, awaiting_mark = NULL,
  staged_lsn = NULL, staged_snapshot = NULL, pending_snapshot = NULL, pending_lsn = NULL,
  staged_at = NULL)sql",
                                                    schema)));
  if (publication) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP PUBLICATION IF EXISTS " + sql::Ident(*publication)));
  }
  // Not transactional: should the commit fail, the catalog still names a
  // slot that is gone, which the next define or health round replaces (with
  // no transform, nothing rebuilds).
  TRELLIS_RETURN_IF_ERROR(DropSlot(conn, slot, /*in_transaction=*/true));
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  SlotLogger()->info(
      "no transform reads a source any more: dropped replication slot {} and its publication; "
      "the next define makes them again",
      slot);
  return true;
}

Result<std::optional<uint64_t>> StagedPosition(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.QueryPrepared(sql::WithSchema(
      "SELECT coalesce(staged_lsn, '0/0')::text FROM {schema}.capture_feed WHERE slot_name IS NOT "
      "NULL",
      schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(ParseLsn(rows->text(0, 0)).value_or(0));
}

Result<uint64_t> InsertPosition(pg::Connection& conn) {
  auto rows = conn.QueryPrepared("SELECT pg_current_wal_insert_lsn()::text");
  if (!rows.ok()) return rows.status();
  auto lsn = ParseLsn(rows->text(0, 0));
  if (!lsn) return Status::Internal("the server's WAL insert position is not an LSN");
  return *lsn;
}

}  // namespace trellis::capture
