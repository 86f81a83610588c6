#include "catalog/parts.h"

#include "catalog/jobs.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::catalog {

bool IsHiddenPart(const Transform& t) { return t.owner_id.has_value(); }

Status RecordStage(pg::Connection& conn, const std::string& schema, int stage_id, int owner_id) {
  // The stage reads only sources (1), its owner reads the stage (2).
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET owner_id = CASE WHEN id = $1::int THEN $2::int END,
                               stage_order = CASE WHEN id = $1::int THEN 1 ELSE 2 END
WHERE id IN ($1::int, $2::int))sql",
                                   schema),
                   {std::to_string(stage_id), std::to_string(owner_id)});
}

std::string JoinBuildsForGroupSql(const std::string& schema, std::string_view group,
                                  std::string_view join) {
  const std::string g(group);
  const std::string j(join);
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
                          " is the hidden join of GROUP BY transform " +
                          grammar::RenderName(owner.value()) + ", and goes with it: address " +
                          grammar::RenderName(owner.value()) + " instead");
}

}  // namespace trellis::catalog
