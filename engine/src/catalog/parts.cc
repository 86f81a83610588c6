#include "catalog/parts.h"

#include "catalog/chains.h"
#include "catalog/jobs.h"
#include "catalog/states.h"
#include "grammar/render.h"

namespace trellis::catalog {

bool IsHiddenPart(const Transform& t, const std::string& schema) {
  return t.target_schema == schema;
}

Result<std::optional<Transform>> HiddenPartOf(pg::Connection& conn, const std::string& schema,
                                              const Transform& t, bool lock) {
  if (t.kind != TransformKind::kGroupBy || t.source.schema_name != schema)
    return std::optional<Transform>();
  auto part = LoadTransform(conn, schema, t.source.table_name, lock);
  if (!part.ok()) return part.status();
  if (!IsHiddenPart(part.value(), schema)) return std::optional<Transform>();
  return std::optional<Transform>(std::move(part.value()));
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
  if (!IsHiddenPart(t.value(), schema)) return name;
  auto readers = ReadersOf(conn, schema, t->id);
  if (!readers.ok()) return readers.status();
  if (readers->empty()) return name;
  return readers->front();
}

Status RefuseHiddenPart(pg::Connection& conn, const std::string& schema, const Transform& t) {
  if (!IsHiddenPart(t, schema)) return Status::OK();
  auto owner = OwnerName(conn, schema, t.name());
  if (!owner.ok()) return owner.status();
  return Status::NotFound("transform " + grammar::RenderName(t.name()) +
                          " is the hidden join of GROUP BY transform " +
                          grammar::RenderName(owner.value()) + ", and goes with it: address " +
                          grammar::RenderName(owner.value()) + " instead");
}

}  // namespace trellis::catalog
