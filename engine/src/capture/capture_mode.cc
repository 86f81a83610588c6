#include "capture/capture_mode.h"

#include "capture/names.h"
#include "capture/publication.h"
#include "capture/slot.h"
#include "capture/sources.h"
#include "capture/triggers.h"
#include "catalog/locks.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

const auto& Logger() {
  static const auto logger = log::Component("trellis::capture");
  return logger;
}

// Why logical decoding is not available to this connection ("" when it is).
Result<std::string> LogicalRefusal(pg::Connection& conn) {
  auto rows = conn.Query(R"sql(
SELECT current_setting('wal_level'),
       (SELECT rolreplication OR rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user),
       has_database_privilege(current_database(), 'CREATE'), current_user)sql");
  if (!rows.ok()) return rows.status();
  const std::string role = sql::Ident(rows->text(0, 3));
  if (rows->text(0, 0) != "logical") {
    return "it needs wal_level = logical and the server runs with wal_level = " + rows->text(0, 0) +
           ": set wal_level = logical in postgresql.conf and restart PostgreSQL, or connect "
           "with capture: :triggers";
  }
  if (rows->text(0, 1) != "t") {
    return "it needs a replication slot, and role " + role +
           " may not create one: run ALTER ROLE " + role +
           " REPLICATION, or connect with capture: :triggers";
  }
  if (rows->text(0, 2) != "t") {
    return "it needs a publication, and role " + role +
           " may not create one in this database: GRANT CREATE ON DATABASE to it, or connect "
           "with capture: :triggers";
  }
  return std::string();
}

struct FeedRow {
  std::string mode;
  std::optional<std::string> slot;
};

Result<FeedRow> ReadFeed(pg::Connection& conn, const std::string& schema) {
  // A schema-only dump loaded elsewhere has the table without its row:
  // that catalog captures by triggers until told otherwise.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(
      "INSERT INTO {schema}.capture_feed DEFAULT VALUES ON CONFLICT DO NOTHING", schema)));
  auto rows =
      conn.Query(sql::WithSchema("SELECT mode, slot_name FROM {schema}.capture_feed", schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return Status::Internal("the catalog has no capture_feed row");
  return FeedRow{rows->text(0, 0), rows->at(0, 1)};
}

struct SourceRow {
  catalog::Source source;
  std::vector<std::string> relids;
};

Result<std::vector<SourceRow>> LoadSources(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT s.id, s.schema_name, s.table_name, s.routing_columns,
       ARRAY(SELECT s.relid::text UNION SELECT r.relid::text FROM {schema}.source_relations r
             WHERE r.source_id = s.id)
FROM {schema}.sources s ORDER BY s.id)sql",
                                         schema));
  if (!rows.ok()) return rows.status();
  std::vector<SourceRow> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    sql::RowReader row(rows.value(), r);
    SourceRow s;
    s.source.id = row.Int(0);
    s.source.schema_name = row.Text(1);
    s.source.table_name = row.Text(2);
    s.source.routing_columns = row.TextArray(3);
    s.relids = row.TextArray(4);
    if (!row.status().ok()) return row.status();
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> WriteMark(pg::Connection& conn, const std::string& schema) {
  auto mark = conn.Query(
      sql::WithSchema("INSERT INTO {schema}.capture_marks DEFAULT VALUES RETURNING id", schema));
  if (!mark.ok()) return mark.status();
  return mark->text(0, 0);
}

// Triggers -> logical, in one transaction: every source published and its
// triggers dropped (which waits out the writers in flight: they commit,
// captured by triggers, before the mark), then the mark. The feed skips the
// slot's changes up to the mark's transaction and stages the capture rows
// left.
Status SwitchToLogical(pg::Connection& conn, const std::string& schema, const std::string& name) {
  TRELLIS_RETURN_IF_ERROR(EnsurePublicationAndSlot(conn, schema, name));
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  auto sources = LoadSources(conn, schema);
  if (!sources.ok()) return sources.status();
  for (const auto& s : sources.value()) {
    for (const auto& relid : s.relids) {
      TRELLIS_RETURN_IF_ERROR(PublishRelation(conn, name, s.source.routing_columns, relid));
      TRELLIS_RETURN_IF_ERROR(RemoveTriggers(conn, schema, relid));
    }
  }
  auto mark = WriteMark(conn, schema);
  if (!mark.ok()) return mark.status();
  TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.capture_feed SET mode = 'logical', slot_name = $1, publication_name = $1,
  awaiting_mark = $2::bigint, staged_lsn = NULL, staged_snapshot = NULL,
  pending_snapshot = NULL, pending_lsn = NULL, staged_at = NULL)sql",
                                                    schema),
                                    {name, mark.value()}));
  return tx.value()->Commit();
}

// Logical -> triggers, the same cut reversed: triggers installed (waiting
// out the writers in flight, which the slot holds), then the mark. The feed
// stages the slot's changes before the mark, then drops the slot.
Status SwitchToTriggers(pg::Connection& conn, const std::string& schema, bool slot_alive) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  // Triggers mode first, so reinstalling captures by triggers.
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec(sql::WithSchema("UPDATE {schema}.capture_feed SET mode = 'triggers'", schema)));
  auto sources = LoadSources(conn, schema);
  if (!sources.ok()) return sources.status();
  for (const auto& s : sources.value()) {
    Status reinstalled = Reinstall(conn, schema, s.source);
    // A source whose table is gone is the disruption check's to report.
    if (!reinstalled.ok() && reinstalled.code() != Code::kNotFound) return reinstalled;
  }
  if (slot_alive) {
    auto mark = WriteMark(conn, schema);
    if (!mark.ok()) return mark.status();
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema("UPDATE {schema}.capture_feed SET awaiting_mark = $1::bigint", schema),
        {mark.value()}));
  } else {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(sql::WithSchema(
        "UPDATE {schema}.capture_feed SET slot_name = NULL, publication_name = NULL, "
        "awaiting_mark = NULL, staged_lsn = NULL, staged_snapshot = NULL, pending_snapshot = "
        "NULL, pending_lsn = NULL",
        schema)));
  }
  return tx.value()->Commit();
}

}  // namespace

Result<std::string> CatalogCaptureMode(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.QueryPrepared(sql::WithSchema("SELECT mode FROM {schema}.capture_feed", schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::string("triggers");
  return rows->text(0, 0);
}

Result<bool> LeftRelationWritesCaptured(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.QueryPrepared(sql::WithSchema(
      "SELECT mode = 'triggers' AND slot_name IS NULL FROM {schema}.capture_feed", schema));
  if (!rows.ok()) return rows.status();
  return rows->empty() || rows->text(0, 0) == "t";
}

Result<std::string> EnsureCaptureMode(pg::Connection& conn, const std::string& schema,
                                      std::string_view requested) {
  if (requested != "triggers" && requested != "logical" && requested != "auto") {
    return Status::Validation("option capture must be :triggers, :logical or :auto");
  }
  auto feed = ReadFeed(conn, schema);
  if (!feed.ok()) return feed.status();
  std::string want(requested);
  if (want != "triggers") {
    auto refusal = LogicalRefusal(conn);
    if (!refusal.ok()) return refusal.status();
    if (!refusal->empty()) {
      if (want == "logical") {
        return Status::Validation("capture: :logical cannot be used: " + refusal.value());
      }
      Logger()->info("capture: :auto takes triggers: logical decoding is not available ({})",
                     refusal.value());
      want = "triggers";
    } else {
      want = "logical";
    }
  }
  const std::string name = SlotName(conn.database(), schema);
  if (want == "logical") {
    if (feed->mode == "logical") {
      // No slot recorded: the last transform was dropped, and the next
      // define makes one (capture/slot.h).
      if (feed->slot) {
        auto alive = SlotExists(conn, *feed->slot);
        if (!alive.ok()) return alive.status();
        if (!alive.value()) {
          TRELLIS_RETURN_IF_ERROR(ReplaceLostSlot(conn, schema, "was gone"));
        }
      }
      Logger()->info("capture by logical decoding in force (replication slot {})", name);
      return want;
    }
    if (feed->slot) {
      return Status::Validation(
          "capture is still switching back to triggers (the slot's changes before the switch "
          "are being staged): connect again in a moment");
    }
    TRELLIS_RETURN_IF_ERROR(SwitchToLogical(conn, schema, name));
    // With no transform yet, the slot waits for the first define.
    auto dropped = DropSlotIfUnused(conn, schema);
    if (!dropped.ok()) return dropped.status();
    Logger()->info("capture by logical decoding in force (replication slot {})", name);
    return want;
  }
  if (feed->mode == "logical") {
    Result<bool> alive = false;
    if (feed->slot) alive = SlotExists(conn, *feed->slot);
    if (!alive.ok()) return alive.status();
    TRELLIS_RETURN_IF_ERROR(SwitchToTriggers(conn, schema, alive.value()));
    Logger()->info("capture by triggers in force; the replication slot goes once staged");
    return want;
  }
  Logger()->info("capture by triggers in force");
  return want;
}

}  // namespace trellis::capture
