#include "plan/group_alter_over_join.h"

#include <algorithm>

#include "catalog/composite.h"
#include "pg/sqlstate.h"
#include "plan/bind.h"
#include "plan/group_define_over_join.h"
#include "plan/group_over_join.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The tables to lock for an ALTER of grouped join `$1`: the join's inputs
// (1), the hidden join's target (2), the group's target (3). No rows when
// `$1` groups no join.
constexpr std::string_view kTablesSql = R"sql(
WITH part AS (
  SELECT g.target_schema AS group_schema, g.target_name AS group_name, j.id AS join_id,
         j.target_schema AS join_schema, j.target_name AS join_name
  FROM {schema}.transforms g
  JOIN {schema}.transforms j ON j.owner_id = g.id AND j.stage_order = 1
  WHERE g.target_name = $1 AND g.owner_id IS NULL
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

// Retries of the targets' locks before waiting for both in turn, and the
// pause between them (growing to the longest): ample for drains, whose
// transactions hold a target for milliseconds.
constexpr int kTargetLockTries = 100;
constexpr int kLongestPauseMs = 100;

// ACCESS EXCLUSIVE on both targets, never waiting for one while holding the
// other. Drains take them in either order within a transaction (a
// recompute's statement reads the join target before it writes the group's;
// other statements of a drain touch the group's target first), so an ALTER
// holding one while waiting for the other could deadlock with a drain, and
// be the one PostgreSQL cancels. So: wait for the join's target, try the
// group's without waiting, and on a miss let go of the first (to the
// savepoint) and try again after a pause.
Status LockTargets(pg::Connection& conn, const std::string& join_target,
                   const std::string& group_target) {
  for (int attempt = 1;; ++attempt) {
    const bool last = attempt >= kTargetLockTries;  // then wait, as any LOCK does
    TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_alter_targets"));
    TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + join_target + " IN ACCESS EXCLUSIVE MODE"));
    Status second = conn.Exec("LOCK TABLE " + group_target + " IN ACCESS EXCLUSIVE MODE" +
                              (last ? "" : " NOWAIT"));
    if (second.ok()) return conn.Exec("RELEASE SAVEPOINT trellis_alter_targets");
    if (last || !pg::HasSqlState(second, pg::kLockNotAvailable)) return second;
    TRELLIS_RETURN_IF_ERROR(conn.Exec("ROLLBACK TO SAVEPOINT trellis_alter_targets"));
    const int pause_ms = std::min(kLongestPauseMs, 5 * attempt);
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_catalog.pg_sleep($1::float8 / 1000)", {std::to_string(pause_ms)}));
  }
}

bool Carries(const catalog::Transform& join, const std::string& column) {
  return std::any_of(join.columns.begin(), join.columns.end(),
                     [&](const catalog::Column& c) { return c.name == column; });
}

}  // namespace

Status LockGroupedJoinTables(pg::Connection& conn, const std::string& schema,
                             const std::string& name) {
  auto tables = conn.Query(sql::WithSchema(kTablesSql, schema), {name});
  if (!tables.ok()) return tables.status();
  std::string join_target;
  std::string group_target;
  for (size_t r = 0; r < tables->size(); ++r) {
    const std::string step = tables->text(r, 0);
    const std::string table = tables->text(r, 1);
    if (step == "1") {
      TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + table + " IN ACCESS SHARE MODE"));
    } else if (step == "2") {
      join_target = table;
    } else {
      group_target = table;
    }
  }
  if (join_target.empty()) return Status::OK();
  return LockTargets(conn, join_target, group_target);
}

Status CarryJoinColumns(pg::Connection& conn, const std::string& schema,
                        const catalog::Transform& group, const grammar::TransformStmt& stmt) {
  if (stmt.joins.empty()) return Status::OK();
  // The join is the grouped join's one stage (its first).
  auto whole = catalog::LoadComposite(conn, schema, group, /*lock=*/true);
  if (!whole.ok()) return whole.status();
  if (whole->stages.empty()) {
    return Status::Internal("grouped join " + group.name() + " has no hidden join part");
  }
  catalog::Transform join = std::move(whole->stages.front());
  const int join_id = join.id;
  const grammar::QualifiedName hidden{join.target_schema, join.target_name};
  TRELLIS_RETURN_IF_ERROR(CheckGroupingOverJoin(conn, schema, join_id, stmt));
  for (const auto& ref : GroupingColumnRefs(stmt)) {
    if (Carries(join, HiddenColumnName(ref))) continue;
    // The join's own ALTER ADD COLUMN: a row expression, rebuilt alone.
    auto join_plan = Bind(join, schema);
    if (!join_plan.ok()) return join_plan.status();
    TRELLIS_RETURN_IF_ERROR(
        InUserTerms(join_plan.value()->AddColumn(conn, schema, join, HiddenJoinItem(ref)), hidden,
                    group.name()));
    // As it now is: the next column goes after this one, in its definition.
    auto reloaded = catalog::LoadTransformById(conn, schema, join_id);
    if (!reloaded.ok()) return reloaded.status();
    join = std::move(reloaded.value());
  }
  return Status::OK();
}

}  // namespace trellis::plan
