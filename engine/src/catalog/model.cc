#include "catalog/model.h"

#include <map>

#include "sql/quote.h"

namespace trellis::catalog {
namespace {

constexpr std::string_view kSelectTransforms = R"sql(
SELECT t.id, t.target_schema, t.target_name, t.kind, t.definition, t.source_alias, t.where_sql,
       t.status, t.paused_kind, t.paused_reason,
       (extract(epoch FROM t.paused_at) * 1000000)::bigint,
       t.backfill_cursor, t.backfill_columns, t.backfill_done, t.backfill_total,
       (extract(epoch FROM t.last_applied_at) * 1000000)::bigint,
       (extract(epoch FROM t.created_at) * 1000000)::bigint,
       s.id, s.schema_name, s.table_name, s.key_columns, s.key_types, s.routing_columns,
       t.key_indexed, t.capture_disrupted
FROM {schema}.transforms t JOIN {schema}.sources s ON s.id = t.source_id
)sql";

std::optional<std::vector<std::string>> OptionalArray(const std::optional<std::string>& cell) {
  if (!cell) return std::nullopt;
  return sql::ParseTextArray(*cell);
}

// A state or pause kind read from the catalog; an unknown name means the
// catalog was written by another engine version.
template <typename E>
Result<E> Parse(const std::optional<std::string>& cell) {
  if (auto value = FromWireName<E>(cell.value_or(""))) return *value;
  return Status::Internal("the catalog holds an unknown state " + sql::Literal(cell.value_or("")) +
                          ": is an engine of another version running on this catalog?");
}

template <typename E>
Result<std::optional<E>> ParseOptional(const std::optional<std::string>& cell) {
  if (!cell) return std::optional<E>();
  auto value = Parse<E>(cell);
  if (!value.ok()) return value.status();
  return std::optional<E>(value.value());
}

Result<Transform> RowToTransform(const pg::Rows& rows, size_t r) {
  Transform t;
  auto state = Parse<TransformState>(rows.at(r, 7));
  if (!state.ok()) return state.status();
  auto paused_kind = ParseOptional<PauseKind>(rows.at(r, 8));
  if (!paused_kind.ok()) return paused_kind.status();
  t.state = state.value();
  t.paused_kind = paused_kind.value();
  t.id = std::stoi(rows.text(r, 0));
  t.target_schema = rows.text(r, 1);
  t.target_name = rows.text(r, 2);
  t.kind = rows.text(r, 3);
  t.definition = rows.text(r, 4);
  t.source_alias = rows.text(r, 5);
  t.where_sql = rows.at(r, 6);
  t.paused_reason = rows.at(r, 9);
  t.paused_at = rows.at(r, 10);
  t.backfill_cursor = OptionalArray(rows.at(r, 11));
  t.backfill_columns = OptionalArray(rows.at(r, 12));
  t.backfill_done = std::stoll(rows.text(r, 13));
  if (rows.at(r, 14)) t.backfill_total = std::stoll(rows.text(r, 14));
  t.last_applied_at = rows.at(r, 15);
  t.created_at = rows.at(r, 16);
  t.source.id = std::stoi(rows.text(r, 17));
  t.source.schema_name = rows.text(r, 18);
  t.source.table_name = rows.text(r, 19);
  t.source.key_columns = sql::ParseTextArray(rows.text(r, 20));
  t.source.key_types = sql::ParseTextArray(rows.text(r, 21));
  t.source.routing_columns = sql::ParseTextArray(rows.text(r, 22));
  t.key_indexed = rows.text(r, 23) == "t";
  t.capture_disrupted = rows.text(r, 24) == "t";
  return t;
}

Status LoadColumns(pg::Connection& conn, const std::string& schema, std::vector<Transform>& out) {
  if (out.empty()) return Status::OK();
  // Only the loaded transforms' columns: a drain loads one transform per
  // transaction, and must not read every column of the catalog to do it.
  std::map<int, Transform*> by_id;
  std::vector<std::string> ids;
  for (auto& t : out) {
    by_id[t.id] = &t;
    ids.push_back(std::to_string(t.id));
  }
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT transform_id, name, expr, sql_type, state, paused_kind, paused_reason
FROM {schema}.transform_columns WHERE transform_id = ANY($1::int[])
ORDER BY transform_id, ordinal)sql",
                                         schema),
                         {"{" + sql::Join(ids, ",") + "}"});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    auto it = by_id.find(std::stoi(rows->text(r, 0)));
    if (it == by_id.end()) continue;
    auto state = Parse<ColumnState>(rows->at(r, 4));
    if (!state.ok()) return state.status();
    auto paused_kind = ParseOptional<PauseKind>(rows->at(r, 5));
    if (!paused_kind.ok()) return paused_kind.status();
    it->second->columns.push_back(Column{rows->text(r, 1), rows->text(r, 2), rows->text(r, 3),
                                         state.value(), paused_kind.value(), rows->at(r, 6)});
  }
  return Status::OK();
}

Result<std::vector<Transform>> Load(pg::Connection& conn, const std::string& schema,
                                    const std::string& where, const pg::Params& params, bool lock) {
  std::string text = sql::WithSchema(kSelectTransforms, schema) + where + " ORDER BY t.id";
  if (lock) text += " FOR UPDATE OF t";
  auto rows = conn.Query(text, params);
  if (!rows.ok()) return rows.status();
  std::vector<Transform> out;
  for (size_t r = 0; r < rows->size(); ++r) {
    auto t = RowToTransform(rows.value(), r);
    if (!t.ok()) return t.status();
    out.push_back(std::move(t.value()));
  }
  TRELLIS_RETURN_IF_ERROR(LoadColumns(conn, schema, out));
  return out;
}

}  // namespace

Result<std::vector<Transform>> LoadTransforms(pg::Connection& conn, const std::string& schema,
                                              bool lock) {
  return Load(conn, schema, "", {}, lock);
}

Result<Transform> LoadTransform(pg::Connection& conn, const std::string& schema,
                                const std::string& name, bool lock) {
  auto all = Load(conn, schema, " WHERE t.target_name = $1", {name}, lock);
  if (!all.ok()) return all.status();
  if (all->empty()) return Status::NotFound("no transform named " + sql::Ident(name));
  return std::move(all->front());
}

Result<Transform> LoadTransformById(pg::Connection& conn, const std::string& schema, int id,
                                    bool lock) {
  auto all = Load(conn, schema, " WHERE t.id = $1", {std::to_string(id)}, lock);
  if (!all.ok()) return all.status();
  if (all->empty()) return Status::NotFound("no transform with id " + std::to_string(id));
  return std::move(all->front());
}

}  // namespace trellis::catalog
