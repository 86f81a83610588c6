#include "plan/join_plan.h"

#include <algorithm>
#include <set>

#include "capture/routing.h"
#include "grammar/render.h"
#include "plan/fan_out_join_plan.h"
#include "plan/full_join_plan.h"
#include "plan/join_tree.h"
#include "plan/key_sql.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The FROM keys a joined input's captured rows reach: each row version's
// join columns, typed as the joined table types them (json_populate_record
// reads the table's row type now, so no type is stored and ALTER COLUMN
// TYPE is followed), matched against the table it joins, reached from the
// FROM table through the joins in between. The names of the statement
// around it cannot capture a column: every alias of the path is the
// definition's own, and the helper rows are __trellis_ ones.
// The path is a LATERAL subquery with OFFSET 0 (which PostgreSQL never
// flattens), so it runs once per captured row of this input, by the index on
// the joined columns (role join_from in status), and not at all when the
// batch holds none: flattened, a batch estimated large could make the
// planner hash-join the whole FROM table in every staging batch.
// The join values are made distinct before the path runs: an UPDATE that
// leaves them as they were (a customer's rename) routes the same values in
// its old and its new row version, and each lookup reads every FROM row it
// reaches (1,000 orders of a customer: 16 ms each at join_bench's scale).
constexpr std::string_view kDirtyJoined =
    R"sql(SELECT DISTINCT {transform_id} AS transform_id, __trellis_k.key
FROM (SELECT DISTINCT {typed_values}
      FROM consumed AS __trellis_s, {routing_rows},
      LATERAL pg_catalog.json_populate_record(NULL::{joined_table},
                pg_catalog.json_object(ARRAY[{names}]::text[], ARRAY[{values}]::text[])) AS __trellis_p
      WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T') AS __trellis_j,
LATERAL (SELECT {key_text} AS key FROM {path} WHERE {matches} OFFSET 0) AS __trellis_k)sql";

const char* JoinKeyword(catalog::InputRole role) {
  switch (role) {
    case catalog::InputRole::kFrom:
    case catalog::InputRole::kInnerJoin:
      return " JOIN ";
    case catalog::InputRole::kLeftJoin:
      return " LEFT JOIN ";
    case catalog::InputRole::kRightJoin:
      return " RIGHT JOIN ";
    case catalog::InputRole::kFullJoin:
      return " FULL JOIN ";
  }
  return " JOIN ";
}

catalog::InputRole RoleOf(grammar::JoinKind kind) {
  switch (kind) {
    case grammar::JoinKind::kInner:
      return catalog::InputRole::kInnerJoin;
    case grammar::JoinKind::kLeft:
      return catalog::InputRole::kLeftJoin;
    case grammar::JoinKind::kRight:
      return catalog::InputRole::kRightJoin;
    case grammar::JoinKind::kFull:
      return catalog::InputRole::kFullJoin;
  }
  return catalog::InputRole::kInnerJoin;
}

}  // namespace

std::string JoinedFrom(const std::vector<catalog::Input>& inputs,
                       const std::vector<std::string>& items) {
  auto item = [&](size_t i) {
    return i < items.size() && !items[i].empty()
               ? items[i]
               : InputTable(inputs[i]) + " AS " + sql::Ident(inputs[i].alias);
  };
  std::string text = item(0);
  for (size_t i = 1; i < inputs.size(); ++i) {
    text += JoinKeyword(inputs[i].role) + item(i) + " ON " + JoinCondition(inputs, i);
  }
  return text;
}

JoinPlan::JoinPlan(const catalog::Transform& t, const std::string& schema)
    : ProjectionPlan(t, schema), inputs_(t.inputs), root_(0) {
  from_ = "(" + JoinedFrom(inputs_) + ")";
}

JoinPlan::JoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
                   std::vector<KeyColumn> target_key, std::vector<KeyColumn> unit,
                   std::vector<KeyColumn> range)
    : ProjectionPlan(t, schema, t.inputs[root], std::move(target_key), std::move(unit),
                     std::move(range)),
      inputs_(t.inputs),
      root_(root) {
  from_ = "(" + JoinedFrom(inputs_) + ")";
}

Result<catalog::Transform> JoinPlan::Draft(const grammar::TransformStmt& stmt,
                                           const std::vector<capture::ResolvedTable>& inputs) {
  auto t = ProjectionPlan::Draft(stmt, inputs);
  if (!t.ok()) return t.status();
  t->kind = catalog::TransformKind::kJoin;
  t->source_index_optional = stmt.without_source_index;
  for (size_t i = 0; i < stmt.joins.size(); ++i) {
    const grammar::JoinClause& join = stmt.joins[i];
    const capture::ResolvedTable& table = inputs[i + 1];
    catalog::Input input;
    input.ordinal = static_cast<int>(i) + 2;
    input.source = capture::DraftSource(table);
    input.alias = join.table.Qualifier();
    input.role = RoleOf(join.kind);
    for (const auto& earlier : t->inputs) {
      if (earlier.alias == join.to) input.joined_to = earlier.ordinal;
    }
    for (const auto& [to_column, my_column] : join.on) {
      input.joined_columns.push_back(to_column);
      input.join_columns.push_back(my_column);
    }
    t->inputs.push_back(std::move(input));
  }
  return t;
}

std::string JoinPlan::FromClause() const { return from_; }

std::vector<DirtyKeys> JoinPlan::DirtyKeySql() const {
  std::vector<DirtyKeys> out = ProjectionPlan::DirtyKeySql();  // the root's own keys
  const std::string key_text = sql::KeyText(KeyExprs(unit_key()));
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i != root_) out.push_back(DirtyKeysThrough(root_, i, key_text));
  }
  return out;
}

DirtyKeys JoinPlan::DirtyKeysThrough(size_t start, size_t i, const std::string& key_text,
                                     bool own_key) const {
  const catalog::Input& input = inputs_[i];
  // The path from `start` to this input's neighbour toward it, and the
  // columns the two match on.
  std::vector<size_t> path = PathBetween(inputs_, start, i);
  path.pop_back();
  const catalog::Input& to = inputs_[path.back()];
  const JoinEdge edge = EdgeBetween(inputs_, i, path.back());
  std::vector<size_t> positions;
  std::vector<std::string> names;
  std::vector<std::string> values;
  std::vector<std::string> matches;
  std::vector<std::string> typed;
  for (size_t c = 0; c < edge.near_columns.size(); ++c) {
    const std::string& column = edge.near_columns[c];
    typed.push_back("__trellis_p." + sql::Ident(column));
    const auto& layout = input.source.routing_columns;
    const auto at = std::find(layout.begin(), layout.end(), column);
    // Define routes every join column (RoutedColumns) before it stores
    // the transform, so the layout always has it; a catalog that lacks it
    // is damaged, and staging fails naming it rather than miss keys.
    positions.push_back(at == layout.end() ? 0 : static_cast<size_t>(at - layout.begin()) + 1);
    names.push_back(sql::Literal(column));
    values.push_back(at == layout.end()
                         ? sql::Literal("join column " + column + " is not routed") + "::int::text"
                         : "__trellis_r.c" + std::to_string(c + 1));
    matches.push_back(sql::Ident(to.alias) + "." + sql::Ident(edge.far_columns[c]) + " = " +
                      "__trellis_j." + sql::Ident(column));
  }
  std::replace(positions.begin(), positions.end(), size_t{0}, size_t{1});
  if (own_key) {
    // The key columns lead every routing layout (capture/routing.h). Each
    // value in its text form as a key renders it: cast through its type.
    for (size_t c = 0; c < input.source.key_columns.size(); ++c) {
      positions.push_back(c + 1);
      typed.push_back("(__trellis_r.c" + std::to_string(positions.size()) +
                      "::" + input.source.key_types[c] + ")::text AS __trellis_own" +
                      std::to_string(c + 1));
    }
  }
  Slots slots{
      {"transform_id", std::to_string(transform_id())},
      {"key_text", key_text},
      {"routing_rows", capture::RoutingRows("__trellis_s", positions, "__trellis_r")},
      {"joined_table", InputTable(input)},
      {"names", sql::Join(names, ", ")},
      {"typed_values", sql::Join(typed, ", ")},
      {"values", sql::Join(values, ", ")},
      {"path", InnerPathFrom(inputs_, path)},
      {"source_id", std::to_string(input.source.id)},
      {"matches", sql::Join(matches, " AND ")},
  };
  return DirtyKeys{input.source.id, Render(kDirtyJoined, slots)};
}

Status JoinPlan::CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const {
  return ProjectionPlan::CheckDefinition(conn, check);
}

Result<std::optional<catalog::Transform>> JoinPlan::CompleteDraft(
    pg::Connection& conn, const grammar::TransformStmt& stmt,
    const std::vector<capture::ResolvedTable>& inputs) const {
  auto drafted = Draft(stmt, inputs);
  if (!drafted.ok()) return drafted.status();
  if (PreservedInputs(inputs_).empty()) {
    auto full = FullJoinPlan::Draft(conn, stmt, std::move(drafted.value()));
    if (!full.ok()) return full.status();
    return std::optional<catalog::Transform>(std::move(full.value()));
  }
  auto shape = ChooseJoinShape(conn, name(), inputs_);
  if (!shape.ok()) return shape.status();
  if (shape->root == 0 && shape->KeyedCount() == 0) return std::optional<catalog::Transform>();
  auto fanned = FanOutJoinPlan::Draft(stmt, std::move(drafted.value()), shape.value());
  if (!fanned.ok()) return fanned.status();
  return std::optional<catalog::Transform>(std::move(fanned.value()));
}

Result<std::vector<std::vector<std::string>>> JoinPlan::RoutedColumns(pg::Connection&) const {
  std::vector<std::vector<std::string>> out(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (i == root_) continue;
    const auto& key = inputs_[i].source.key_columns;
    std::vector<size_t> path = PathBetween(inputs_, root_, i);
    for (const auto& c : EdgeBetween(inputs_, i, path[path.size() - 2]).near_columns) {
      const bool routed = std::find(out[i].begin(), out[i].end(), c) != out[i].end();
      if (!routed && std::find(key.begin(), key.end(), c) == key.end()) out[i].push_back(c);
    }
  }
  return out;
}

}  // namespace trellis::plan
