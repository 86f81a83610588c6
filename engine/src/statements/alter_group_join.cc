#include "statements/alter_group_join.h"

#include <algorithm>

#include "catalog/parts.h"
#include "plan/group_over_join.h"
#include "sql/quote.h"
#include "statements/alter.h"
#include "statements/define_group_join.h"

namespace trellis::statements {
namespace {

// The tables to lock for an ALTER of grouped join `$1`, in locking order:
// the join's inputs (1), the hidden join's target (2), the group's target
// (3). The order of the chain's data flow, which a drain's statements follow
// too: a recompute reads its source in a WITH query written before the
// DELETE and INSERT of its target, and PostgreSQL locks the relations of a
// statement in the order it analyses them. So no drain can hold the group's
// target while it waits for the hidden one here. No rows when `$1` groups no
// join.
constexpr std::string_view kTablesSql = R"sql(
WITH part AS (
  SELECT g.target_schema AS group_schema, g.target_name AS group_name, j.id AS join_id,
         j.target_schema AS join_schema, j.target_name AS join_name
  FROM {schema}.transforms g
  JOIN {schema}.transform_inputs i ON i.transform_id = g.id AND i.ordinal = 1
  JOIN {schema}.sources s ON s.id = i.source_id
  JOIN {schema}.transforms j ON j.target_schema = s.schema_name AND j.target_name = s.table_name
  WHERE g.target_name = $1 AND g.target_schema <> $2 AND j.target_schema = $2
)
SELECT DISTINCT 1, format('%I.%I', n.nspname, c.relname)
FROM part
JOIN {schema}.transform_inputs i ON i.transform_id = part.join_id
JOIN {schema}.sources s ON s.id = i.source_id
JOIN pg_catalog.pg_class c ON c.oid = s.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
UNION ALL SELECT 2, format('%I.%I', join_schema, join_name) FROM part
UNION ALL SELECT 3, format('%I.%I', group_schema, group_name) FROM part
ORDER BY 1, 2)sql";

bool Carries(const catalog::Transform& join, const std::string& column) {
  return std::any_of(join.columns.begin(), join.columns.end(),
                     [&](const catalog::Column& c) { return c.name == column; });
}

}  // namespace

Status LockGroupedJoinTables(pg::Connection& conn, const std::string& schema,
                             const std::string& name) {
  auto tables = conn.Query(sql::WithSchema(kTablesSql, schema), {name, schema});
  if (!tables.ok()) return tables.status();
  for (size_t r = 0; r < tables->size(); ++r) {
    const char* mode =
        tables->text(r, 0) == "1" ? " IN ACCESS SHARE MODE" : " IN ACCESS EXCLUSIVE MODE";
    TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + tables->text(r, 1) + mode));
  }
  return Status::OK();
}

Status CarryJoinColumns(pg::Connection& conn, const std::string& schema,
                        const catalog::Transform& group, const grammar::TransformStmt& stmt) {
  if (stmt.joins.empty()) return Status::OK();
  auto part = catalog::HiddenPartOf(conn, schema, group, /*lock=*/true);
  if (!part.ok()) return part.status();
  if (!part->has_value()) {
    return Status::Internal("grouped join " + group.name() + " has no hidden join part");
  }
  const int join_id = (*part)->id;
  const grammar::QualifiedName hidden{(*part)->target_schema, (*part)->target_name};
  TRELLIS_RETURN_IF_ERROR(CheckGroupingOverJoin(conn, schema, join_id, stmt));
  catalog::Transform join = std::move(**part);
  for (const auto& ref : plan::GroupingColumnRefs(stmt)) {
    if (Carries(join, plan::HiddenColumnName(ref))) continue;
    TRELLIS_RETURN_IF_ERROR(InUserTerms(AddRowColumn(conn, schema, join, plan::HiddenJoinItem(ref)),
                                        hidden, group.name()));
    // As it now is: the next column goes after this one, in its definition.
    auto reloaded = catalog::LoadTransformById(conn, schema, join_id);
    if (!reloaded.ok()) return reloaded.status();
    join = std::move(reloaded.value());
  }
  return Status::OK();
}

}  // namespace trellis::statements
