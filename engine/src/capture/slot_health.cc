#include "capture/slot_health.h"

#include <algorithm>

#include "capture/publication.h"
#include "capture/slot.h"
#include "catalog/model.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "trellis/engine_metrics.h"

namespace trellis::capture {
namespace {

const auto& HealthLogger() {
  static const auto logger = log::Component("trellis::capture");
  return logger;
}

// How often a failure that lasts is logged again.
constexpr auto kRemindEvery = std::chrono::minutes(10);

std::string Mib(int64_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

// Every source relation that holds rows (a partitioned table's partitions
// are published as themselves) and is still the source's, missing from the
// publication.
Status FindAltered(pg::Connection& conn, const std::string& schema, FeedHealth& health) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT DISTINCT r.source_id, format('%I.%I', n.nspname, c.relname)
FROM (SELECT id AS source_id, relid FROM {schema}.sources
      UNION SELECT source_id, relid FROM {schema}.source_relations) r
JOIN {schema}.sources s ON s.id = r.source_id
JOIN pg_catalog.pg_class c ON c.oid = r.relid AND c.relkind = 'r'
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE (r.relid = s.relid OR EXISTS (SELECT FROM pg_catalog.pg_inherits i
                                    WHERE i.inhrelid = r.relid AND NOT i.inhdetachpending))
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_publication_tables t
                  WHERE t.pubname = $1 AND t.schemaname = n.nspname AND t.tablename = c.relname)
ORDER BY 1, 2)sql",
                                         schema),
                         {health.publication});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    const int id = std::stoi(rows->text(r, 0));
    if (health.altered_sources.empty() || health.altered_sources.back() != id) {
      health.altered_sources.push_back(id);
    }
    health.altered_tables.push_back(rows->text(r, 1));
  }
  return Status::OK();
}

// Publishes source `source_id` again, waiting out the writers in flight on
// its tables (whose changes the decoder skipped), and rebuilds its readers,
// whose targets missed what was written while it was out.
Status Republish(pg::Connection& conn, const std::string& schema, const std::string& publication,
                 int source_id) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  const std::string id = std::to_string(source_id);
  // User tables first, then catalog rows: a writer that began before this
  // commits before the table is back, and the rebuild's snapshot sees it.
  auto locked = conn.Query(sql::WithSchema(R"sql(
SELECT format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', c.oid::regclass)
FROM (SELECT relid FROM {schema}.sources WHERE id = $1::int
      UNION SELECT relid FROM {schema}.source_relations WHERE source_id = $1::int) r
JOIN pg_catalog.pg_class c ON c.oid = r.relid ORDER BY c.oid)sql",
                                           schema),
                           {id});
  if (!locked.ok()) return locked.status();
  for (size_t r = 0; r < locked->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(locked->text(r, 0)));
  }
  auto source = conn.Query(
      sql::WithSchema("SELECT routing_columns FROM {schema}.sources WHERE id = $1::int", schema),
      {id});
  if (!source.ok()) return source.status();
  if (source->empty()) return Status::OK();  // released meanwhile
  catalog::Source s;
  s.id = source_id;
  sql::RowReader row(source.value(), 0);
  s.routing_columns = row.TextArray(0);
  if (!row.status().ok()) return row.status();
  TRELLIS_RETURN_IF_ERROR(PublishSource(conn, schema, publication, s));
  auto readers = conn.Query(
      sql::WithSchema("SELECT DISTINCT transform_id FROM {schema}.transform_inputs WHERE "
                      "source_id = $1::int ORDER BY 1",
                      schema),
      {id});
  if (!readers.ok()) return readers.status();
  for (size_t r = 0; r < readers->size(); ++r) {
    TRELLIS_RETURN_IF_ERROR(
        catalog::RequestRebuild(conn, schema, std::stoi(readers->text(r, 0)), std::nullopt));
  }
  return tx.value()->Commit();
}

void PublishMetrics(const FeedHealth& health) {
  auto& m = GlobalEngineMetrics();
  m.slot_lag_bytes.store(health.lag_bytes, std::memory_order_relaxed);
  m.slot_lag_ms.store(static_cast<int64_t>(health.lag_seconds * 1000), std::memory_order_relaxed);
  m.slot_retained_bytes.store(health.retained_bytes, std::memory_order_relaxed);
}

}  // namespace

Result<FeedHealth> ReadFeedHealth(pg::Connection& conn, const std::string& schema) {
  FeedHealth health;
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT f.slot_name, coalesce(f.publication_name, f.slot_name), s.slot_name IS NOT NULL,
       s.wal_status,
       EXISTS (SELECT FROM pg_catalog.pg_publication p WHERE p.pubname = f.publication_name),
       coalesce(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), s.restart_lsn), 0)::bigint,
       greatest(coalesce(pg_wal_lsn_diff(pg_current_wal_flush_lsn(),
                                         coalesce(f.staged_lsn, s.confirmed_flush_lsn)), 0), 0)::bigint,
       coalesce(extract(epoch FROM clock_timestamp() - f.staged_at) * 1000, 0)::bigint,
       (extract(epoch FROM f.staged_at) * 1000000)::bigint
FROM {schema}.capture_feed f
LEFT JOIN pg_catalog.pg_replication_slots s ON s.slot_name = f.slot_name
WHERE f.slot_name IS NOT NULL)sql",
                                         schema));
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return health;
  sql::RowReader row(rows.value(), 0);
  health.has_slot = true;
  health.slot = row.Text(0);
  health.publication = row.Text(1);
  const bool present = row.Bool(2);
  const std::optional<std::string> wal_status = row.OptionalText(3);
  const bool published = row.Bool(4);
  health.retained_bytes = row.Int64(5);
  health.lag_bytes = row.Int64(6);
  const double since_moved = static_cast<double>(row.Int64(7)) / 1000;
  health.staged_at_us = row.OptionalInt64(8);
  if (!row.status().ok()) return row.status();
  health.unreserved = wal_status == "unreserved";
  if (!present) {
    health.lost = "was dropped outside Trellis";
  } else if (wal_status == "lost") {
    health.lost =
        "was invalidated by the server (wal_status lost: max_slot_wal_keep_size removed WAL it "
        "still needed)";
  } else if (!published) {
    health.lost = "cannot be read: its publication " + sql::Ident(health.publication) +
                  " was dropped outside Trellis";
  }
  if (health.lost) return health;
  health.lag_seconds = health.lag_bytes > 0 ? std::max(since_moved, 0.0) : 0;
  TRELLIS_RETURN_IF_ERROR(FindAltered(conn, schema, health));
  if (health.lag_seconds > kBehindSeconds) {
    health.behind = "staging has not read replication slot " + health.slot + " for " +
                    std::to_string(static_cast<int64_t>(health.lag_seconds)) + " s (" +
                    Mib(health.lag_bytes) +
                    " of WAL behind): no staging handle is connected, or its staging fails (see "
                    "its log). Connect a handle with staging: true";
  } else if (health.unreserved || health.retained_bytes > kRetainedWalLimitBytes) {
    health.behind = "replication slot " + health.slot + " holds " + Mib(health.retained_bytes) +
                    " of WAL" +
                    (health.unreserved ? std::string(" and the server will invalidate it next "
                                                     "(wal_status unreserved)")
                                       : std::string()) +
                    ": staging is behind. Keep a staging handle (staging: true) connected; an "
                    "invalidated slot makes every transform rebuild";
  }
  return health;
}

Result<std::optional<CaptureFailureStatus>> FeedFailureOf(pg::Connection& conn,
                                                          const std::string& schema,
                                                          int transform_id) {
  auto health = ReadFeedHealth(conn, schema);
  if (!health.ok()) return health.status();
  if (!health->has_slot) return std::optional<CaptureFailureStatus>();
  if (health->lost) {
    return std::optional<CaptureFailureStatus>(CaptureFailureStatus{
        kSlotLost, std::nullopt,
        "replication slot " + health->slot + " " + *health->lost +
            ", so the writes it held are gone: the elected staging worker makes a new slot and "
            "rebuilds every transform (connect a handle with staging: true if none is)"});
  }
  if (!health->altered_sources.empty()) {
    auto reads = conn.Query(
        sql::WithSchema("SELECT EXISTS (SELECT FROM {schema}.transform_inputs WHERE transform_id "
                        "= $1::int AND source_id = ANY ($2::int[]))",
                        schema),
        {std::to_string(transform_id), [&] {
           std::vector<std::string> ids;
           for (int id : health->altered_sources) ids.push_back(std::to_string(id));
           return sql::ArrayLiteral(ids);
         }()});
    if (!reads.ok()) return reads.status();
    if (reads->text(0, 0) == "t") {
      return std::optional<CaptureFailureStatus>(CaptureFailureStatus{
          kPublicationAltered, std::nullopt,
          "publication " + sql::Ident(health->publication) + " lacks " +
              sql::Join(health->altered_tables, ", ") +
              " (removed outside Trellis), so their writes are not captured: the elected staging "
              "worker publishes them again and rebuilds their readers; do not alter the "
              "publication by hand"});
    }
  }
  if (health->behind) {
    return std::optional<CaptureFailureStatus>(
        CaptureFailureStatus{kSlotBehind, health->staged_at_us, *health->behind});
  }
  return std::optional<CaptureFailureStatus>();
}

Status TendSlot(pg::Connection& conn, const std::string& schema, SlotTending& tending) {
  auto dropped = DropSlotIfUnused(conn, schema);
  if (!dropped.ok()) return dropped.status();
  auto health = ReadFeedHealth(conn, schema);
  if (!health.ok()) return health.status();
  PublishMetrics(health.value());
  if (!health->has_slot) return Status::OK();
  if (health->lost) {
    GlobalEngineMetrics().slots_replaced.fetch_add(1, std::memory_order_relaxed);
    return ReplaceLostSlot(conn, schema, *health->lost);
  }
  for (int source : health->altered_sources) {
    GlobalEngineMetrics().publication_repairs.fetch_add(1, std::memory_order_relaxed);
    TRELLIS_RETURN_IF_ERROR(Republish(conn, schema, health->publication, source));
  }
  if (!health->altered_tables.empty()) {
    HealthLogger()->warn(
        "publication {} lacked {} (removed outside Trellis): published again, and their "
        "readers rebuild to take in the writes made meanwhile. Do not alter the publication by "
        "hand",
        health->publication, sql::Join(health->altered_tables, ", "));
  }
  const std::string behind = health->behind.value_or("");
  const auto now = std::chrono::steady_clock::now();
  if (behind.empty()) {
    if (!tending.last_behind.empty()) {
      HealthLogger()->info("replication slot {} caught up", health->slot);
    }
    tending.last_behind.clear();
    return Status::OK();
  }
  if (tending.last_behind.empty() || now - tending.behind_logged_at >= kRemindEvery) {
    HealthLogger()->warn("{}", behind);
    tending.behind_logged_at = now;
  }
  tending.last_behind = behind;
  return Status::OK();
}

void ClearSlotMetrics() { PublishMetrics(FeedHealth{}); }

}  // namespace trellis::capture
