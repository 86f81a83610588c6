#include "catalog/parts.h"

#include "catalog/jobs.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::catalog {

bool IsHiddenPart(const Transform& t) { return t.owner_id.has_value(); }

Status RecordStages(pg::Connection& conn, const std::string& schema,
                    const std::vector<int>& stage_ids, int owner_id) {
  std::vector<std::string> ids;
  for (int id : stage_ids) ids.push_back(std::to_string(id));
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms t
SET owner_id = CASE WHEN t.id = $2::int THEN NULL ELSE $2::int END,
    stage_order = coalesce((SELECT s.n FROM pg_catalog.unnest($1::int[]) WITH ORDINALITY
                            AS s(id, n) WHERE s.id = t.id),
                           pg_catalog.cardinality($1::int[]) + 1)
WHERE t.id = $2::int OR t.id = ANY ($1::int[]))sql",
                                   schema),
                   {sql::ArrayLiteral(ids), std::to_string(owner_id)});
}

std::string StageBuildsForOwnerSql(const std::string& schema, std::string_view owner,
                                   std::string_view stage) {
  const std::string g(owner);
  const std::string j(stage);
  return StateSql("(" + g + ".status = {state:waiting_to_backfill} AND " + j +
                      ".status IN ({state:backfilling}, {state:catching_up}, {state:live}) AND " +
                      j + ".backfill_started_at >= coalesce((SELECT min(q.created_at) FROM " +
                      "{schema}.jobs q WHERE q.transform_id = " + g + ".id AND q.kind IN " +
                      BuildJobKindsSql() + "), " + g + ".created_at))",
                  schema);
}

Result<std::string> OwnerName(pg::Connection& conn, const std::string& schema,
                              const std::string& name) {
  auto t = LoadTransform(conn, schema, name);
  if (!t.ok()) return t.status();
  if (!IsHiddenPart(t.value())) return name;
  auto owner = conn.Query(
      sql::WithSchema("SELECT target_name FROM {schema}.transforms WHERE id = $1::int", schema),
      {std::to_string(*t->owner_id)});
  if (!owner.ok()) return owner.status();
  if (owner->empty()) return name;
  return owner->text(0, 0);
}

Status RefuseHiddenPart(pg::Connection& conn, const std::string& schema, const Transform& t) {
  if (!IsHiddenPart(t)) return Status::OK();
  auto owner = OwnerName(conn, schema, t.name());
  if (!owner.ok()) return owner.status();
  return Status::NotFound("transform " + grammar::RenderName(t.name()) +
                          " is a hidden stage of transform " + grammar::RenderName(owner.value()) +
                          ", and goes with it: address " + grammar::RenderName(owner.value()) +
                          " instead");
}

}  // namespace trellis::catalog
