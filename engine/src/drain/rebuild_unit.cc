#include "drain/rebuild_unit.h"

#include "catalog/states.h"
#include "drain/page_unit.h"
#include "plan/batch_paths.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {
namespace {

// Every page of transform $1 committed before this statement, locked (the
// claimed ones this transaction holds already; SKIP LOCKED leaves any
// another transaction holds): each records changes of writers that
// committed before it was staged, so before the rebuild's statement, which
// runs after this one and so sees them all. A page staged later stays for
// a later drain, which applies it after the rebuild (a recompute is
// idempotent; a delta row of a writer the rebuild saw is skipped by the
// snapshot it records).
std::string SweepSql(const std::string& schema) {
  return sql::WithSchema(R"sql(SELECT coalesce(array_agg(id ORDER BY id), '{}')::text FROM (
  SELECT id FROM {schema}.pages WHERE transform_id = $1::int ORDER BY id FOR UPDATE SKIP LOCKED
) AS __trellis_p)sql",
                         schema);
}

// The fallback of a failed rebuild whose batch holds a whole page: the
// whole target is queued for a rebuild job (catalog::RequestRebuild), which
// reads the sources after this transaction and narrows a failing row down
// by key ranges. Writes nothing itself, so it cannot fail on data; the
// claimed pages are completed with it, their changes being in what the
// job will read.
class RebuildJobUnit final : public UncutUnit {
 public:
  RebuildJobUnit(std::string schema, int transform_id)
      : schema_(std::move(schema)), transform_id_(transform_id) {}
  std::string_view kind() const override { return "pages"; }
  std::string Describe() const override { return "a rebuild job"; }
  Result<long> Apply(pg::Connection& conn) override {
    TRELLIS_RETURN_IF_ERROR(catalog::RequestRebuild(conn, schema_, transform_id_, std::nullopt));
    return 0L;
  }

 private:
  std::string schema_;
  int transform_id_;
};

}  // namespace

Result<long> RebuildUnit::Apply(pg::Connection& conn) {
  auto swept = conn.QueryPrepared(SweepSql(schema_), {std::to_string(plan_.transform_id())});
  if (!swept.ok()) return swept.status();
  const plan::Bound rebuild = plan::RebuildTargetSql(plan_);
  auto applied = conn.QueryPrepared(rebuild.text, rebuild.params);
  if (!applied.ok()) return applied.status();
  sql::RowReader counts(applied.value(), 0);
  const long touched = counts.Int64(0) + counts.Int64(1);
  if (!counts.status().ok()) return counts.status();
  swept_ = swept->text(0, 0);
  rebuilt_ = true;
  return touched;
}

Result<std::vector<std::unique_ptr<Unit>>> RebuildUnit::Split(pg::Connection&) {
  // The rebuild failed: the batch goes by its pages instead, narrowed from
  // there to the keys that fail.
  rebuilt_ = false;
  std::vector<std::unique_ptr<Unit>> parts;
  if (whole_) {
    parts.push_back(std::make_unique<RebuildJobUnit>(schema_, plan_.transform_id()));
  } else {
    parts.push_back(std::make_unique<PagesUnit>(plan_, schema_, page_ids_, fallback_));
  }
  return parts;
}

Status RebuildUnit::Complete(pg::Connection& conn) {
  PagesUnit done(plan_, schema_, rebuilt_ ? swept_ : page_ids_, fallback_);
  TRELLIS_RETURN_IF_ERROR(done.Complete(conn));
  quarantined_ = done.QuarantinedKeys();
  return Status::OK();
}

Status RebuildUnit::Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
                          const Status& error) {
  PagesUnit pages(plan_, schema_, page_ids_, fallback_);
  return pages.Defer(conn, failed, error);
}

}  // namespace trellis::drain
