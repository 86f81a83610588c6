#include "plan/join_plan.h"

#include <algorithm>
#include <set>

#include "capture/routing.h"
#include "grammar/render.h"
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

// A unique key of the joined table among the join columns: a unique, valid,
// non-partial index on plain columns whose key columns (INCLUDE columns
// aside) are all join columns. Equality on a unique key already picks at
// most one row, so any further equality only narrows it: a superset of a
// unique key is unique.
constexpr std::string_view kUniqueOn = R"sql(SELECT EXISTS (
  SELECT 1 FROM pg_catalog.pg_index i
  WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indisvalid
    AND i.indpred IS NULL AND i.indexprs IS NULL
    AND ARRAY(SELECT a.attname::text
              FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
              JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
              WHERE k.n <= i.indnkeyatts)
        <@ $2::text[]))sql";

std::string Table(const catalog::Input& input) {
  return sql::Qualified(input.source.schema_name, input.source.table_name);
}

size_t IndexOfOrdinal(const std::vector<catalog::Input>& inputs, int ordinal) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].ordinal == ordinal) return i;
  }
  return 0;
}

// "to.a = me.b AND ...": the equalities of a joined input.
std::string JoinCondition(const std::vector<catalog::Input>& inputs, const catalog::Input& me) {
  const std::string to = sql::Ident(inputs[IndexOfOrdinal(inputs, *me.joined_to)].alias);
  std::vector<std::string> parts;
  for (size_t i = 0; i < me.join_columns.size(); ++i) {
    parts.push_back(to + "." + sql::Ident(me.joined_columns[i]) + " = " + sql::Ident(me.alias) +
                    "." + sql::Ident(me.join_columns[i]));
  }
  return sql::Join(parts, " AND ");
}

std::string Shown(const catalog::Input& input) {
  return grammar::RenderQualified(
      grammar::QualifiedName{input.source.schema_name, input.source.table_name});
}

}  // namespace

std::string JoinedFrom(const std::vector<catalog::Input>& inputs, size_t last, bool only_path) {
  std::set<size_t> on_path;
  if (only_path) {
    for (size_t i = last; i != 0; i = IndexOfOrdinal(inputs, *inputs[i].joined_to)) {
      on_path.insert(i);
    }
  }
  std::string text = Table(inputs.front()) + " AS " + sql::Ident(inputs.front().alias);
  for (size_t i = 1; i <= last; ++i) {
    if (only_path && !on_path.count(i)) continue;
    const bool left = !only_path && inputs[i].role == catalog::InputRole::kLeftJoin;
    text += std::string(left ? " LEFT JOIN " : " JOIN ") + Table(inputs[i]) + " AS " +
            sql::Ident(inputs[i].alias) + " ON " + JoinCondition(inputs, inputs[i]);
  }
  return text;
}

JoinPlan::JoinPlan(const catalog::Transform& t, const std::string& schema)
    : ProjectionPlan(t, schema), inputs_(t.inputs) {
  from_ = "(" + JoinedFrom(inputs_, inputs_.size() - 1, false) + ")";
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
    input.source = catalog::Source{
        0, table.schema_name, table.table_name, table.key_columns, table.key_types, {}};
    input.alias = join.table.Qualifier();
    input.role = join.kind == grammar::JoinKind::kLeft ? catalog::InputRole::kLeftJoin
                                                       : catalog::InputRole::kInnerJoin;
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
  std::vector<DirtyKeys> out = ProjectionPlan::DirtyKeySql();  // the FROM table's own keys
  const std::string key_text = sql::KeyText(KeyExprs(unit_key()));
  for (size_t i = 1; i < inputs_.size(); ++i) {
    const catalog::Input& input = inputs_[i];
    const catalog::Input& to = inputs_[IndexOfOrdinal(inputs_, *input.joined_to)];
    std::vector<size_t> positions;
    std::vector<std::string> names;
    std::vector<std::string> values;
    std::vector<std::string> matches;
    std::vector<std::string> typed;
    for (size_t c = 0; c < input.join_columns.size(); ++c) {
      typed.push_back("__trellis_p." + sql::Ident(input.join_columns[c]));
      const auto& layout = input.source.routing_columns;
      const auto at = std::find(layout.begin(), layout.end(), input.join_columns[c]);
      // Define routes every join column (RoutedColumns) before it stores
      // the transform, so the layout always has it; a catalog that lacks it
      // is damaged, and staging fails naming it rather than miss keys.
      positions.push_back(at == layout.end() ? 0 : static_cast<size_t>(at - layout.begin()) + 1);
      names.push_back(sql::Literal(input.join_columns[c]));
      values.push_back(at == layout.end() ? sql::Literal("join column " + input.join_columns[c] +
                                                         " is not routed") +
                                                "::int::text"
                                          : "__trellis_r.c" + std::to_string(c + 1));
      matches.push_back(sql::Ident(to.alias) + "." + sql::Ident(input.joined_columns[c]) + " = " +
                        "__trellis_j." + sql::Ident(input.join_columns[c]));
    }
    std::replace(positions.begin(), positions.end(), size_t{0}, size_t{1});
    Slots slots{
        {"transform_id", std::to_string(transform_id())},
        {"key_text", key_text},
        {"routing_rows", capture::RoutingRows("__trellis_s", positions, "__trellis_r")},
        {"joined_table", Table(input)},
        {"names", sql::Join(names, ", ")},
        {"typed_values", sql::Join(typed, ", ")},
        {"values", sql::Join(values, ", ")},
        {"path", JoinedFrom(inputs_, IndexOfOrdinal(inputs_, to.ordinal), true)},
        {"source_id", std::to_string(input.source.id)},
        {"matches", sql::Join(matches, " AND ")},
    };
    out.push_back(DirtyKeys{input.source.id, Render(kDirtyJoined, slots)});
  }
  return out;
}

Status JoinPlan::CheckDefinition(pg::Connection& conn, const ExpressionCheck& check) const {
  TRELLIS_RETURN_IF_ERROR(ProjectionPlan::CheckDefinition(conn, check));
  for (size_t i = 1; i < inputs_.size(); ++i) {
    const catalog::Input& input = inputs_[i];
    const std::set<std::string> on(input.join_columns.begin(), input.join_columns.end());
    // Its key (the primary key, or the key a transform's target will have)
    // among the join columns.
    const auto& key = input.source.key_columns;
    if (!key.empty() &&
        std::all_of(key.begin(), key.end(), [&](const auto& c) { return on.count(c) > 0; })) {
      continue;
    }
    auto unique =
        conn.Query(std::string(kUniqueOn), {Table(input), sql::ArrayLiteral(input.join_columns)});
    if (!unique.ok()) return unique.status();
    if (unique->text(0, 0) == "t") continue;
    std::vector<std::string> columns;
    for (const auto& c : input.join_columns) columns.push_back(sql::Ident(c));
    const std::string listed = sql::Join(columns, ", ");
    return Status::Validation(
        "transform " + sql::Ident(name()) + " joins " + Shown(input) + " on (" + listed +
        "), which is not unique in " + Shown(input) +
        ": a join matches each row of the FROM table with at most one row of a joined table; "
        "join on columns that include its primary key or every key column of a unique index, or "
        "make the columns unique: CREATE UNIQUE "
        "INDEX ON " +
        Table(input) + " (" + listed + ")");
  }
  return Status::OK();
}

Result<std::vector<std::vector<std::string>>> JoinPlan::RoutedColumns(pg::Connection&) const {
  std::vector<std::vector<std::string>> out(inputs_.size());
  for (size_t i = 1; i < inputs_.size(); ++i) {
    const auto& key = inputs_[i].source.key_columns;
    for (const auto& c : inputs_[i].join_columns) {
      const bool routed = std::find(out[i].begin(), out[i].end(), c) != out[i].end();
      if (!routed && std::find(key.begin(), key.end(), c) == key.end()) out[i].push_back(c);
    }
  }
  return out;
}

}  // namespace trellis::plan
