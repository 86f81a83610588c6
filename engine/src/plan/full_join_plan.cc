#include "plan/full_join_plan.h"

#include <algorithm>

#include "capture/routing.h"
#include "plan/group_over_join.h"
#include "plan/key_sql.h"
#include "plan/where_scope.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// Which inputs the FULL JOIN pairs: a, the FROM table, and b, the table
// FULL-joined to it.
constexpr size_t kA = 0;
constexpr size_t kB = 1;

// The join values of a side's captured row versions, cast through the key's
// types so that their text is the target's.
constexpr std::string_view kDirtyValues =
    R"sql(SELECT DISTINCT {transform_id} AS transform_id, {key} AS key
FROM consumed s, {routing_rows}
WHERE s.source_id = {source_id} AND s.op <> 'T')sql";

// Behind a fence (OFFSET 0): the planner may not push the user's WHERE
// into the branches, where it would be asked of every row of the table
// before the units restrict them (a WHERE that fails on another unit's row
// must not fail this one).
constexpr std::string_view kRestricted = R"sql((SELECT * FROM (SELECT * FROM {table} AS {alias}
  WHERE ({columns}) IN (SELECT {units} FROM __trellis_units)
  UNION ALL
  SELECT * FROM {table} AS {alias}
  WHERE ({any_null}) AND EXISTS (SELECT 1 FROM __trellis_units WHERE {null_safe}))
  AS __trellis_r OFFSET 0) AS {alias})sql";

constexpr std::string_view kSampleValues = R"sql(SELECT b FROM (
  SELECT {key_text} AS b, row_number() OVER (ORDER BY {columns}) AS n
  FROM {table} AS {alias} TABLESAMPLE SYSTEM ($1::float8)
) s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint)sql";

// Every join value a's rows, b's rows and the target hold, each once: the
// units a failing rebuild is narrowed over (a value no side holds any more
// is recomputed away).
constexpr std::string_view kEveryValue = R"sql(SELECT k::text FROM (
  SELECT {a_value} AS k FROM {a_table} AS {a_alias}
  UNION
  SELECT {b_value} FROM {b_table} AS {b_alias}
  UNION
  SELECT {target_value} FROM {target} AS t
) AS units ORDER BY 1)sql";

std::string InputColumn(const catalog::Input& input, const std::string& column) {
  return sql::Ident(input.alias) + "." + sql::Ident(column);
}

// a's columns of the FULL JOIN's equalities, and b's, in the same order.
const std::vector<std::string>& AColumns(const std::vector<catalog::Input>& inputs) {
  return inputs[kB].joined_columns;
}
const std::vector<std::string>& BColumns(const std::vector<catalog::Input>& inputs) {
  return inputs[kB].join_columns;
}

}  // namespace

FullJoinPlan::FullJoinPlan(const catalog::Transform& t, const std::string& schema)
    : FanOutJoinPlan(t, schema, kA, t.inputs[kB].join_columns.size(),
                     t.inputs[kB].join_columns.size()) {}

Result<catalog::Transform> FullJoinPlan::Draft(pg::Connection& conn,
                                               const grammar::TransformStmt& stmt,
                                               catalog::Transform drafted) {
  catalog::Transform t = std::move(drafted);
  const auto& inputs = t.inputs;
  const bool first = inputs.size() > kB && inputs[kB].role == catalog::InputRole::kFullJoin;
  const bool then_left =
      std::all_of(inputs.begin() + std::min(inputs.size(), kB + 1), inputs.end(),
                  [](const catalog::Input& i) { return i.role == catalog::InputRole::kLeftJoin; });
  if (!first || !then_left) {
    return Status::Unsupported(
        "transform " + sql::Ident(t.name()) +
        " has a FULL JOIN that Trellis cannot maintain there: a FULL JOIN is maintained as the "
        "first join (between the FROM table and one table), followed by LEFT joins only, or "
        "anywhere when an INNER or RIGHT join follows it; reorder the joins, or define the part "
        "before the FULL JOIN as a transform and FULL JOIN its target");
  }
  std::vector<size_t> keyed{kA, kB};
  for (size_t i = kB + 1; i < inputs.size(); ++i) {
    auto unique = UniqueOn(conn, inputs[i], inputs[i].join_columns);
    if (!unique.ok()) return unique.status();
    if (!unique.value()) keyed.push_back(i);
  }
  for (size_t i : keyed) {
    if (!inputs[i].source.key_columns.empty()) continue;
    return Status::Validation("transform " + sql::Ident(t.name()) + " needs a primary key on " +
                              InputShown(inputs[i]) +
                              ": the key of each table of a FULL JOIN, and of each table that "
                              "repeats, is part of the target's key; add one");
  }
  // The join value of each equality, named "a.x=b.y", typed as a's column
  // for now (define stores the type the target's column has).
  std::vector<catalog::KeyColumn> values;
  const catalog::Input& a = inputs[kA];
  const catalog::Input& b = inputs[kB];
  for (size_t c = 0; c < AColumns(inputs).size(); ++c) {
    const std::string& x = AColumns(inputs)[c];
    const std::string& y = BColumns(inputs)[c];
    auto type = conn.Query(
        "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
        "WHERE a.attrelid = $1::regclass AND a.attname = $2 AND NOT a.attisdropped",
        {InputTable(a), x});
    if (!type.ok()) return type.status();
    values.push_back(
        catalog::KeyColumn{HiddenColumnName(JoinColumnRef{a.alias, x + "=" + b.alias + "." + y}),
                           "coalesce(" + InputColumn(a, x) + ", " + InputColumn(b, y) + ")",
                           type->empty() ? "text" : type->text(0, 0)});
  }
  t.kind = catalog::TransformKind::kFullOuterJoin;
  TRELLIS_RETURN_IF_ERROR(KeyJoinTarget(stmt, t, std::move(values), keyed));
  return t;
}

std::string FullJoinPlan::JoinValueText(const catalog::Input& input,
                                        const std::vector<std::string>& columns) const {
  std::vector<std::string> cast;
  for (size_t c = 0; c < columns.size(); ++c) {
    cast.push_back("(" + InputColumn(input, columns[c]) + ")::" + unit_key()[c].type);
  }
  return sql::KeyText(cast);
}

std::vector<DirtyKeys> FullJoinPlan::DirtyKeySql() const {
  std::vector<DirtyKeys> out;
  // a and b: the join values of their own row versions.
  for (size_t side : {kA, kB}) {
    const catalog::Input& input = inputs()[side];
    const auto& columns = side == kA ? AColumns(inputs()) : BColumns(inputs());
    const auto& layout = input.source.routing_columns;
    std::vector<size_t> positions;
    std::vector<std::string> cast;
    for (size_t c = 0; c < columns.size(); ++c) {
      const auto at = std::find(layout.begin(), layout.end(), columns[c]);
      // Define routes every join column before it stores the transform; a
      // catalog that lacks one is damaged, and staging fails naming it.
      if (at == layout.end()) {
        positions.push_back(1);
        cast.push_back(sql::Literal("join column " + columns[c] + " is not routed") +
                       "::int::text");
        continue;
      }
      positions.push_back(static_cast<size_t>(at - layout.begin()) + 1);
      cast.push_back("(k.c" + std::to_string(c + 1) + "::" + unit_key()[c].type + ")::text");
    }
    Slots slots{{"transform_id", std::to_string(transform_id())},
                {"key", "ARRAY[" + sql::Join(cast, ", ") + "]"},
                {"routing_rows", capture::RoutingRows("s", positions, "k")},
                {"source_id", std::to_string(input.source.id)}};
    out.push_back(DirtyKeys{input.source.id, Render(kDirtyValues, slots)});
  }
  // Every later input: through its path to the side it hangs from.
  for (size_t i = kB + 1; i < inputs().size(); ++i) {
    const std::vector<size_t> from_b = PathBetween(inputs(), kB, i);
    const bool under_b = std::find(from_b.begin(), from_b.end(), kA) == from_b.end();
    const size_t side = under_b ? kB : kA;
    const auto& columns = under_b ? BColumns(inputs()) : AColumns(inputs());
    out.push_back(DirtyKeysThrough(side, i, JoinValueText(inputs()[side], columns)));
  }
  return out;
}

Result<std::vector<std::vector<std::string>>> FullJoinPlan::RoutedColumns(
    pg::Connection& conn) const {
  // The join's own (b's join columns, and every later input's toward a),
  // and a's join columns besides.
  auto routed = JoinPlan::RoutedColumns(conn);
  if (!routed.ok()) return routed.status();
  const auto& key = inputs()[kA].source.key_columns;
  auto& mine = routed.value()[kA];
  for (const auto& c : AColumns(inputs())) {
    const bool have = std::find(mine.begin(), mine.end(), c) != mine.end() ||
                      std::find(key.begin(), key.end(), c) != key.end();
    if (!have) mine.push_back(c);
  }
  return routed;
}

std::string FullJoinPlan::RestrictedToUnits(const catalog::Input& input,
                                            const std::vector<std::string>& columns) const {
  std::vector<std::string> mine;
  std::vector<std::string> units;
  std::vector<std::string> any_null;
  std::vector<std::string> null_safe;
  for (size_t c = 0; c < columns.size(); ++c) {
    const std::string column = InputColumn(input, columns[c]);
    const std::string unit = "__trellis_units." + sql::Ident("__k" + std::to_string(c + 1));
    mine.push_back(column);
    units.push_back(unit);
    any_null.push_back(column + " IS NULL");
    null_safe.push_back(column + " IS NOT DISTINCT FROM " + unit);
  }
  return Render(kRestricted, {{"table", InputTable(input)},
                              {"alias", sql::Ident(input.alias)},
                              {"columns", sql::Join(mine, ", ")},
                              {"units", sql::Join(units, ", ")},
                              {"any_null", sql::Join(any_null, " OR ")},
                              {"null_safe", sql::Join(null_safe, " AND ")}});
}

std::string FullJoinPlan::UnitRows() const {
  return JoinedFrom(inputs(), {RestrictedToUnits(inputs()[kA], AColumns(inputs())),
                               RestrictedToUnits(inputs()[kB], BColumns(inputs()))});
}

std::string FullJoinPlan::TargetRowGone() const {
  // Keys compare as the text of their row (NULL-safely: an outer side's
  // NULL key is a value here), and the WHERE is asked only of the joined
  // row of this target row (a CASE on the match, as the projection's
  // check does), never of every row of the join. A NOT EXISTS on an
  // equality is planned as one hashed anti-join, as the NOT IN it
  // replaced was one hashed subplan.
  const auto& key = target_key();
  const std::string match = "ROW(" + sql::Join(KeyExprs(key), ", ") + ")::text = ROW(" +
                            sql::Join(KeyNames(key, "__trellis_t"), ", ") + ")::text";
  return "NOT EXISTS (SELECT 1 FROM " + FromClause() + " WHERE " + WhereAmong(match, where()) + ")";
}

std::string FullJoinPlan::EveryUnitKeySql() const {
  const catalog::Input& a = inputs()[kA];
  const catalog::Input& b = inputs()[kB];
  return Render(kEveryValue, {{"a_value", JoinValueText(a, AColumns(inputs()))},
                              {"a_table", InputTable(a)},
                              {"a_alias", sql::Ident(a.alias)},
                              {"b_value", JoinValueText(b, BColumns(inputs()))},
                              {"b_table", InputTable(b)},
                              {"b_alias", sql::Ident(b.alias)},
                              {"target_value", sql::KeyText(KeyNames(unit_key(), "t"))},
                              {"target", target()}});
}

Bound FullJoinPlan::SampleBoundaries(double percent, long per_boundary, long count) const {
  const catalog::Input& a = inputs()[kA];
  std::vector<std::string> columns;
  for (const auto& c : AColumns(inputs())) columns.push_back(InputColumn(a, c));
  return Bound{Render(kSampleValues, {{"key_text", JoinValueText(a, AColumns(inputs()))},
                                      {"columns", sql::Join(columns, ", ")},
                                      {"table", InputTable(a)},
                                      {"alias", sql::Ident(a.alias)}}),
               {std::to_string(percent), std::to_string(per_boundary), std::to_string(count)}};
}

}  // namespace trellis::plan
