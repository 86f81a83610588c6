#include "catalog/model.h"

#include <array>
#include <map>
#include <vector>

#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::catalog {
namespace {

constexpr std::string_view kSelectTransforms = R"sql(
SELECT t.id, t.target_schema, t.target_name, t.kind, t.definition, t.where_sql,
       t.status, t.paused_kind, t.paused_reason,
       (extract(epoch FROM t.paused_at) * 1000000)::bigint,
       t.backfill_total,
       (extract(epoch FROM t.last_applied_at) * 1000000)::bigint,
       (extract(epoch FROM t.created_at) * 1000000)::bigint,
       t.key_indexed, t.capture_disrupted, t.source_index_optional, t.owner_id, t.stage_order,
       t.side_units
FROM {schema}.transforms t
)sql";

// A transform's inputs, key columns and columns, in one round trip (a drain
// loads one transform per transaction): one row per item, tagged by its
// part, every value as text, in the order the transform lists them. And its
// definition again: the plan reads the definition with the columns, and
// they must come from one snapshot (an ALTER committing after the
// transforms row was read changes both; a staging batch loads transforms
// without the drain lock an ALTER takes).
constexpr std::string_view kSelectParts = R"sql(
SELECT 'definition', id, 0, definition, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL
FROM {schema}.transforms WHERE id = ANY($1::int[])
UNION ALL
SELECT 'input', i.transform_id, i.ordinal, i.alias, i.role, i.joined_to::text,
       i.join_columns::text, i.joined_columns::text, s.id::text, s.schema_name, s.table_name,
       s.key_columns::text, s.key_types::text, s.routing_columns::text,
       i.routed_columns::text, i.routes_values,
       ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
             WHERE a.attrelid = s.relid AND a.attname = ANY (s.key_columns)
               AND NOT a.attnotnull)::text
FROM {schema}.transform_inputs i JOIN {schema}.sources s ON s.id = i.source_id
WHERE i.transform_id = ANY($1::int[])
UNION ALL
SELECT 'key', transform_id, ordinal, name, expr, sql_type,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM {schema}.target_key_columns WHERE transform_id = ANY($1::int[])
UNION ALL
SELECT 'column', transform_id, ordinal, name, expr, sql_type,
       state, paused_kind, paused_reason, role, argument_type, NULL, NULL, NULL, NULL, NULL, NULL
FROM {schema}.transform_columns WHERE transform_id = ANY($1::int[])
ORDER BY 2, 1, 3)sql";

// Names the catalog stores for the catalog-internal enums, in enum order.
constexpr std::array<std::string_view, 5> kInputRoles = {"from", "inner_join", "left_join",
                                                         "right_join", "full_join"};
constexpr std::array<std::string_view, 3> kColumnRoles = {"value", "aggregate", "hidden"};

}  // namespace

std::string_view InputRoleName(InputRole role) { return kInputRoles[static_cast<size_t>(role)]; }
std::string_view ColumnRoleName(ColumnRole role) { return kColumnRoles[static_cast<size_t>(role)]; }

namespace {

Status Unknown(std::string_view what, const std::optional<std::string>& cell) {
  return Status::Internal("the catalog holds an unknown " + std::string(what) + " " +
                          sql::Literal(cell.value_or("NULL")) +
                          ": is an engine of another version running on this catalog?");
}

// A state or pause kind read from the catalog.
template <typename E>
Result<E> ParseState(const std::optional<std::string>& cell) {
  if (auto value = FromWireName<E>(cell.value_or(""))) return *value;
  return Unknown("state", cell);
}

template <typename E>
Result<std::optional<E>> ParseOptionalState(const std::optional<std::string>& cell) {
  if (!cell) return std::optional<E>();
  auto value = ParseState<E>(cell);
  if (!value.ok()) return value.status();
  return std::optional<E>(value.value());
}

template <typename E, size_t N>
Result<E> ParseRole(const std::array<std::string_view, N>& names,
                    const std::optional<std::string>& cell) {
  for (size_t i = 0; i < N; ++i) {
    if (cell && names[i] == *cell) return static_cast<E>(i);
  }
  return Unknown("role", cell);
}

Result<Transform> RowToTransform(const pg::Rows& rows, size_t r) {
  sql::RowReader row(rows, r);
  Transform t;
  auto state = ParseState<TransformState>(row.OptionalText(6));
  if (!state.ok()) return state.status();
  auto paused_kind = ParseOptionalState<PauseKind>(row.OptionalText(7));
  if (!paused_kind.ok()) return paused_kind.status();
  const std::optional<std::string> kind_name = row.OptionalText(3);
  const auto kind = FromWireName<TransformKind>(kind_name.value_or(""));
  if (!kind) return Unknown("transform kind", kind_name);
  t.id = row.Int(0);
  t.target_schema = row.Text(1);
  t.target_name = row.Text(2);
  t.kind = *kind;
  t.definition = row.Text(4);
  t.where_sql = row.OptionalText(5);
  t.state = state.value();
  t.paused_kind = paused_kind.value();
  t.paused_reason = row.OptionalText(8);
  t.paused_at_us = row.OptionalInt64(9);
  t.backfill_total = row.OptionalInt64(10);
  t.last_applied_at_us = row.OptionalInt64(11);
  t.created_at_us = row.OptionalInt64(12);
  t.key_indexed = row.Bool(13);
  t.capture_disrupted = row.Bool(14);
  t.source_index_optional = row.Bool(15);
  if (row.OptionalText(16)) t.owner_id = row.Int(16);
  t.stage_order = row.Int(17);
  t.side_units = row.Bool(18);
  if (!row.status().ok()) return row.status();
  return t;
}

// Adds one row of kSelectParts to its transform.
Status AddPart(const pg::Rows& rows, size_t r, Transform& t) {
  sql::RowReader row(rows, r);
  const std::string part = row.Text(0);
  if (part == "input") {
    auto role = ParseRole<InputRole>(kInputRoles, row.OptionalText(4));
    if (!role.ok()) return role.status();
    Input input;
    input.ordinal = row.Int(2);
    input.alias = row.Text(3);
    input.role = role.value();
    if (row.OptionalText(5)) input.joined_to = row.Int(5);
    input.join_columns = row.OptionalTextArray(6).value_or(std::vector<std::string>{});
    input.joined_columns = row.OptionalTextArray(7).value_or(std::vector<std::string>{});
    input.source.id = row.Int(8);
    input.source.schema_name = row.Text(9);
    input.source.table_name = row.Text(10);
    input.source.key_columns = row.TextArray(11);
    input.source.key_types = row.TextArray(12);
    input.source.routing_columns = row.TextArray(13);
    input.routed_columns = row.TextArray(14);
    input.routes_values = row.Bool(15);
    input.source.nullable_key_columns = row.TextArray(16);
    t.inputs.push_back(std::move(input));
  } else if (part == "definition") {
    t.definition = row.Text(3);
  } else if (part == "key") {
    t.key.push_back(KeyColumn{row.Text(3), row.Text(4), row.Text(5)});
  } else {
    auto state = ParseState<ColumnState>(row.OptionalText(6));
    if (!state.ok()) return state.status();
    auto paused_kind = ParseOptionalState<PauseKind>(row.OptionalText(7));
    if (!paused_kind.ok()) return paused_kind.status();
    auto role = ParseRole<ColumnRole>(kColumnRoles, row.OptionalText(9));
    if (!role.ok()) return role.status();
    t.columns.push_back(Column{row.Text(3), row.Text(4), row.Text(5), state.value(),
                               paused_kind.value(), row.OptionalText(8), role.value(), row.Int(2),
                               row.OptionalText(10)});
  }
  return row.status();
}

// The parts statement with each `= ANY($1::int[])` of kSelectParts (a
// transform id column's filter) replaced by `filter`. Only the loaded
// transforms' parts: a drain loads one transform per transaction, and must
// not read the whole catalog to do it. A filter without an array parameter
// (`= $1::int`, a subquery, IS NOT NULL) has a generic plan as good as any
// custom one, so the server plans it once per connection, where `= ANY($1)`
// was planned at every call (0.75 ms of planning, 0.17 ms of work, per
// drain: bench/README.md "Round trips of a hop").
std::string PartsText(const std::string& schema, const std::string& filter) {
  std::string text = sql::WithSchema(kSelectParts, schema);
  for (auto at = text.find("= ANY($1::int[])"); at != std::string::npos;
       at = text.find("= ANY($1::int[])", at)) {
    text.replace(at, 16, filter);
  }
  return text;
}

// Adds the parts in `rows` (a PartsText statement's) to the transforms in
// `out` they belong to.
Status AddParts(const pg::Rows& rows, std::vector<Transform>& out) {
  std::map<int, Transform*> by_id;
  for (auto& t : out) by_id[t.id] = &t;
  for (size_t r = 0; r < rows.size(); ++r) {
    sql::RowReader row(rows, r);
    auto it = by_id.find(row.Int(1));
    if (!row.status().ok()) return row.status();
    if (it == by_id.end()) continue;
    TRELLIS_RETURN_IF_ERROR(AddPart(rows, r, *it->second));
  }
  // A transform whose parts are all gone was dropped between the two
  // statements (each reads its own snapshot): it is left out, as a load
  // that started after the DROP would have left it out.
  std::erase_if(out, [](const Transform& t) {
    return t.inputs.empty() && t.key.empty() && t.columns.empty();
  });
  for (auto& t : out) {
    if (t.inputs.empty() || t.inputs.front().role != InputRole::kFrom) {
      return Status::Internal("the catalog lists no FROM table for transform " +
                              sql::Ident(t.name()));
    }
    t.source = t.inputs.front().source;
    t.source_alias = t.inputs.front().alias;
  }
  return Status::OK();
}

// Loads the transforms `where` selects, with their parts, in one round
// trip: `parts_filter` selects the same transforms' ids in the parts
// statement (in place of `= ANY($1::int[])`), over the same `params`, so
// neither statement waits for the other's answer. Each still reads its own
// snapshot; parts of a transform the first did not see are ignored.
Result<std::vector<Transform>> Load(pg::Connection& conn, const std::string& schema,
                                    const std::string& where, const std::string& parts_filter,
                                    const pg::Params& params, bool lock) {
  std::string text = sql::WithSchema(kSelectTransforms, schema) + where + " ORDER BY t.id";
  // NO KEY UPDATE: statements on one transform still wait for each other,
  // but not for the foreign-key checks (FOR KEY SHARE) of the workers'
  // inserts of pages and jobs, which FOR UPDATE would block; a staging
  // batch inserting pages for a stage and its owner then deadlocked with a
  // statement holding one row and asking for the other (spec/engine.md
  // "Lock order").
  if (lock) text += " FOR NO KEY UPDATE OF t";
  // Both prepared: the workers load transforms in every staging batch and
  // drain, and the texts vary only with the filters.
  auto ran = conn.QueryPipelined({{text, params}, {PartsText(schema, parts_filter), params}});
  if (!ran.ok()) return ran.status();
  std::vector<Transform> out;
  for (size_t r = 0; r < ran->front().size(); ++r) {
    auto t = RowToTransform(ran->front(), r);
    if (!t.ok()) return t.status();
    out.push_back(std::move(t.value()));
  }
  TRELLIS_RETURN_IF_ERROR(AddParts(ran->back(), out));
  return out;
}

}  // namespace

Result<std::vector<Transform>> LoadTransforms(pg::Connection& conn, const std::string& schema,
                                              bool lock) {
  // No parameter at all: each staging batch loads every transform, and the
  // one plan is made once per connection.
  return Load(conn, schema, "", "IS NOT NULL", {}, lock);
}

Result<Transform> LoadTransform(pg::Connection& conn, const std::string& schema,
                                const std::string& name, bool lock) {
  auto all = Load(
      conn, schema, " WHERE t.target_name = $1",
      sql::WithSchema("IN (SELECT id FROM {schema}.transforms WHERE target_name = $1)", schema),
      {name}, lock);
  if (!all.ok()) return all.status();
  if (all->empty()) return Status::NotFound("no transform named " + sql::Ident(name));
  return std::move(all->front());
}

Result<Transform> LoadTransformById(pg::Connection& conn, const std::string& schema, int id,
                                    bool lock) {
  // A drain loads its transform so at every claim.
  auto all = Load(conn, schema, " WHERE t.id = $1::int", "= $1::int", {std::to_string(id)}, lock);
  if (!all.ok()) return all.status();
  if (all->empty()) return Status::NotFound("no transform with id " + std::to_string(id));
  return std::move(all->front());
}

Result<std::vector<Transform>> LoadReadersOf(pg::Connection& conn, const std::string& schema,
                                             const std::string& table_schema,
                                             const std::string& table_name) {
  // A drain of a stage loads them at every hop.
  const std::string readers = sql::WithSchema(R"sql(IN (
  SELECT i.transform_id FROM {schema}.transform_inputs i
  JOIN {schema}.sources s ON s.id = i.source_id
  WHERE s.schema_name = $1 AND s.table_name = $2))sql",
                                              schema);
  return Load(conn, schema, " WHERE t.id " + readers, readers, {table_schema, table_name},
              /*lock=*/false);
}

}  // namespace trellis::catalog
