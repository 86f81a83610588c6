#include "capture/trigger_feed.h"

#include "capture/consumed_rows.h"
#include "sql/quote.h"

namespace trellis::capture {
namespace {

// A batch of the capture table: up to `max_rows` committed rows, in no
// particular order (the table has no key or index: spec/engine.md
// "Capture"), deleted by ctid as the staging statement takes them. Nothing
// to record or confirm besides: the delete commits with the pages.
class TriggerBatch final : public FeedBatch {
 public:
  TriggerBatch(std::string schema, int max_rows)
      : schema_(std::move(schema)), max_rows_(max_rows) {}

  std::string TakeSql(int first_param, bool member) const override {
    const std::string limit = "$" + std::to_string(first_param) + "::int";
    return sql::WithSchema(
               "DELETE FROM {schema}.capture AS __trellis_c\n"
               "  WHERE ctid = ANY (ARRAY(SELECT ctid FROM {schema}.capture LIMIT " +
                   limit + "))\n  RETURNING ",
               schema_) +
           ConsumedColumnsSql(schema_, "__trellis_c", member);
  }

  // Every row of the table: the batch is chosen only by the DELETE, so the
  // rows it will take are among these. The limit is referenced only so that
  // both statements take the same parameters (one never referenced would
  // have no type).
  std::string PeekSql(int first_param, bool member) const override {
    return "SELECT " + ConsumedColumnsSql(schema_, "__trellis_c", member) + " FROM " +
           sql::Qualified(schema_, "capture") + " AS __trellis_c WHERE $" +
           std::to_string(first_param) + "::int IS NOT NULL";
  }

  pg::Params Params() const override { return {std::to_string(max_rows_)}; }
  Status Staged(pg::Connection&, long) override { return Status::OK(); }
  Status Committed(pg::Connection&) override { return Status::OK(); }

 private:
  std::string schema_;
  int max_rows_;
};

// The capture rows of the current transaction. The capture table has no
// index (spec/engine.md "Capture"): it holds what staging has not taken
// yet, which is little while staging keeps up.
class OwnWritesBatchImpl final : public FeedBatch {
 public:
  explicit OwnWritesBatchImpl(std::string schema) : schema_(std::move(schema)) {}

  std::string TakeSql(int first_param, bool member) const override {
    return sql::WithSchema(
               "DELETE FROM {schema}.capture AS __trellis_c\n"
               "  WHERE __trellis_c.xid = pg_current_xact_id() AND $" +
                   std::to_string(first_param) + "::int IS NOT NULL\n  RETURNING ",
               schema_) +
           ConsumedColumnsSql(schema_, "__trellis_c", member);
  }

  std::string PeekSql(int first_param, bool member) const override {
    return "SELECT " + ConsumedColumnsSql(schema_, "__trellis_c", member) + " FROM " +
           sql::Qualified(schema_, "capture") +
           " AS __trellis_c WHERE __trellis_c.xid = pg_current_xact_id() AND $" +
           std::to_string(first_param) + "::int IS NOT NULL";
  }

  // The parameter only types the placeholder both statements reference.
  pg::Params Params() const override { return {"0"}; }
  Status Staged(pg::Connection&, long) override { return Status::OK(); }
  Status Committed(pg::Connection&) override { return Status::OK(); }

 private:
  std::string schema_;
};

}  // namespace

std::unique_ptr<FeedBatch> OwnWritesBatch(std::string schema) {
  return std::make_unique<OwnWritesBatchImpl>(std::move(schema));
}

Result<bool> OwnWritesToStage(pg::Connection& conn, const std::string& schema) {
  auto rows = conn.QueryPrepared(
      sql::WithSchema("SELECT count(*) > 0 AND NOT bool_or(op = 'T') FROM {schema}.capture "
                      "WHERE xid = pg_current_xact_id()",
                      schema));
  if (!rows.ok()) return rows.status();
  return rows->text(0, 0) == "t";
}

TriggerFeed::TriggerFeed(std::string schema) : schema_(std::move(schema)) {}

Result<std::unique_ptr<FeedBatch>> TriggerFeed::TakeBatch(pg::Connection&, int max_rows) {
  return std::unique_ptr<FeedBatch>(std::make_unique<TriggerBatch>(schema_, max_rows));
}

std::string TriggerFeed::UnstagedRowsSql(bool member) const {
  return "SELECT " + ConsumedColumnsSql(schema_, "__trellis_c", member) + " FROM " +
         sql::Qualified(schema_, "capture") + " AS __trellis_c";
}

std::string TriggerFeed::OldestUnstagedXidSql() const {
  return "SELECT xid FROM " + sql::Qualified(schema_, "capture") + " ORDER BY xid LIMIT 1";
}

Result<std::vector<Disruption>> TriggerFeed::PauseDisruptedReaders(pg::Connection& conn) {
  return capture::PauseDisruptedReaders(conn, schema_);
}

// A snapshot: the write of a transaction visible in it came before.
std::string TriggerFeed::WatermarkSql() const { return "pg_current_snapshot()::text"; }

std::string TriggerFeed::IsWatermarkSql(std::string_view param) const {
  return std::string(param) + "::pg_snapshot IS NOT NULL";
}

// A capture row of a writer visible in the snapshot, of a source a covered
// transform reads.
std::string TriggerFeed::UnstagedBeforeSql(std::string_view param, std::string_view covered) const {
  return sql::WithSchema(R"sql(EXISTS (
  SELECT 1 FROM {schema}.capture c
  WHERE pg_visible_in_snapshot(c.xid, )sql" +
                             std::string(param) +
                             R"sql(::pg_snapshot)
    AND EXISTS (SELECT 1 FROM {schema}.transforms t
                JOIN {schema}.transform_inputs i ON i.transform_id = t.id
                WHERE i.source_id = c.source_id AND )sql" +
                             std::string(covered) + "))",
                         schema_);
}

}  // namespace trellis::capture
