#include "capture/mode_feed.h"

#include "capture/logical_feed.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// The two halves of a watermark (see the header).
constexpr std::string_view kWatermarkMark = "#";

std::string SnapshotPart(std::string_view param) {
  return "split_part(" + std::string(param) + ", '#', 1)";
}
std::string LsnPart(std::string_view param) {
  // A token of an engine before the LSN half (the snapshot alone) waits
  // for the slot to pass the LSN now, which covers it.
  return "coalesce(nullif(split_part(" + std::string(param) +
         ", '#', 2), '')::pg_lsn, pg_current_wal_insert_lsn())";
}

}  // namespace

ModeFeed::ModeFeed(std::string schema) : schema_(schema), triggers_(std::move(schema)) {}

Result<std::unique_ptr<FeedBatch>> ModeFeed::TakeBatch(pg::Connection& conn, int max_rows) {
  auto rows = conn.QueryPrepared(sql::WithSchema(R"sql(
SELECT f.mode = 'logical', f.slot_name, f.publication_name, f.awaiting_mark,
       f.staged_lsn::text, f.pending_lsn::text, f.pending_snapshot::text,
       coalesce(f.staged_at > now() - interval '50 milliseconds', false),
       (SELECT c.oid::text FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = 'capture_marks'),
       EXISTS (SELECT FROM {schema}.capture)
FROM {schema}.capture_feed f)sql",
                                                 schema_),
                                 {schema_});
  if (!rows.ok()) return rows.status();
  if (rows->empty() || !rows->at(0, 1) || rows->text(0, 9) == "t") {
    return triggers_.TakeBatch(conn, max_rows);
  }
  sql::RowReader row(rows.value(), 0);
  SlotPosition position;
  position.logical_mode = row.Bool(0);
  position.slot = row.Text(1);
  position.publication = row.Text(2);
  position.awaiting_mark = row.OptionalInt64(3);
  position.staged_lsn = row.OptionalText(4);
  position.pending_lsn = row.OptionalText(5);
  position.pending_snapshot = row.OptionalText(6);
  position.written_recently = row.Bool(7);
  const auto marks = row.OptionalInt64(8);
  if (!row.status().ok()) return row.status();
  position.marks_relid = static_cast<uint32_t>(marks.value_or(0));
  return TakeSlotBatch(conn, schema_, position, max_rows);
}

std::string ModeFeed::UnstagedRowsSql(bool member) const {
  return triggers_.UnstagedRowsSql(member);
}

// The least of the capture rows' xids and, while a slot is read, the xmin
// of the snapshot recorded with its position ('0' before there is one:
// nothing is known, so nothing may be collected).
std::string ModeFeed::OldestUnstagedXidSql() const {
  return "SELECT least((" + triggers_.OldestUnstagedXidSql() + "), " +
         sql::WithSchema(
             "(SELECT coalesce(pg_snapshot_xmin(f.staged_snapshot), '0'::xid8) FROM "
             "{schema}.capture_feed f WHERE f.slot_name IS NOT NULL))",
             schema_);
}

Result<std::vector<Disruption>> ModeFeed::PauseDisruptedReaders(pg::Connection& conn) {
  auto mode =
      conn.Query(sql::WithSchema("SELECT mode = 'logical' FROM {schema}.capture_feed", schema_));
  if (!mode.ok()) return mode.status();
  // Logical mode has no triggers to lose; the slot's health is the staging
  // worker's round (capture/slot_health.h).
  if (!mode->empty() && mode->text(0, 0) == "t") return std::vector<Disruption>{};
  return triggers_.PauseDisruptedReaders(conn);
}

std::string ModeFeed::WatermarkSql() const {
  return "pg_current_snapshot()::text || '" + std::string(kWatermarkMark) +
         "' || pg_current_wal_insert_lsn()::text";
}

std::string ModeFeed::IsWatermarkSql(std::string_view param) const {
  return "(" + triggers_.IsWatermarkSql(SnapshotPart(param)) + " AND " + LsnPart(param) +
         "::pg_lsn IS NOT NULL)";
}

std::string ModeFeed::UnstagedBeforeSql(std::string_view param, std::string_view covered) const {
  return "(" + triggers_.UnstagedBeforeSql(SnapshotPart(param), covered) + " OR " +
         sql::WithSchema(
             "EXISTS (SELECT 1 FROM {schema}.capture_feed f WHERE f.slot_name IS NOT NULL AND "
             "(f.staged_lsn IS NULL OR f.staged_lsn < " +
                 LsnPart(param) + "::pg_lsn)))",
             schema_);
}

}  // namespace trellis::capture
