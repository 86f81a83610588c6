#include "plan/fan_out_join_plan.h"

#include <algorithm>
#include <set>

#include "plan/group_over_join.h"
#include "plan/key_sql.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The target's alias in every statement that writes it.
constexpr const char* kTargetAlias = "__trellis_t";

// Recompute of the root keys read from {keys_from}: the rows the join
// computes under them now (computed once), upserted on the target key (a
// row whose values did not change is not rewritten), and every target row
// under them whose key is not among those rows deleted. The two never touch
// one row. The key is compared as the text of its row: a key with NULLs
// (an outer side) compares NULL-safely that way, and the anti-join is one
// hashed lookup, where a NULL-safe correlated lookup per target row read
// the join again for each (bench/README.md, "Joins of every shape").
// DISTINCT on the typed key: two texts of one value (1.0 and 1.00) must not
// make the upsert touch a row twice.
constexpr std::string_view kRecomputeUnits = R"sql(WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT {decoded_keys} FROM {keys_from}
), __trellis_fresh AS MATERIALIZED (
  SELECT {named_values} FROM {unit_rows}
  WHERE {where}
), written AS (
  INSERT INTO {target} AS __trellis_t ({target_columns})
  SELECT {target_columns} FROM __trellis_fresh
  {on_conflict}
  RETURNING 1
), deleted AS (
  DELETE FROM {target} AS __trellis_t USING __trellis_units
  WHERE {target_is_unit}
    AND ROW({target_key})::text NOT IN (SELECT ROW({fresh_key})::text FROM __trellis_fresh)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted))sql";

constexpr std::string_view kRootRowInputs =
    R"sql(SELECT {key_text}, to_jsonb({alias}) FROM {root_table} AS {alias}
WHERE ROW({unit_exprs}) = {key_param})sql";

constexpr std::string_view kAddNullableKey =
    "ALTER TABLE {target} ADD UNIQUE NULLS NOT DISTINCT ({key_columns})";

// The input whose alias qualifies the key expression `expr`.
size_t OwnerOf(const std::vector<catalog::Input>& inputs, const std::string& expr) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (expr.rfind(sql::Ident(inputs[i].alias) + ".", 0) == 0) return i;
  }
  return 0;
}

std::vector<KeyColumn> TargetKeyOf(const catalog::Transform& t) {
  const std::vector<size_t> preserved = PreservedInputs(t.inputs);
  std::vector<KeyColumn> key;
  for (const auto& k : t.key) {
    const size_t owner = OwnerOf(t.inputs, k.expr);
    const bool outer = std::find(preserved.begin(), preserved.end(), owner) == preserved.end();
    // Or its table's key column may hold NULL (a Trellis target's).
    bool null_key = false;
    for (const auto& column : t.inputs[owner].source.nullable_key_columns) {
      null_key = null_key || k.expr == sql::Ident(t.inputs[owner].alias) + "." + sql::Ident(column);
    }
    key.push_back(KeyColumn{k.name, k.sql_type, k.expr, outer || null_key});
  }
  return key;
}

std::vector<KeyColumn> UnitKeyOf(const catalog::Transform& t, size_t width) {
  std::vector<KeyColumn> key = TargetKeyOf(t);
  key.resize(width);
  return key;
}

size_t RootKeyWidth(const catalog::Transform& t) {
  return t.inputs[StoredRoot(t.inputs, t.key)].source.key_columns.size();
}

}  // namespace

FanOutJoinPlan::FanOutJoinPlan(const catalog::Transform& t, const std::string& schema)
    : FanOutJoinPlan(t, schema, StoredRoot(t.inputs, t.key), RootKeyWidth(t)) {}

FanOutJoinPlan::FanOutJoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
                               size_t unit_width)
    : JoinPlan(t, schema, root, TargetKeyOf(t), UnitKeyOf(t, unit_width)) {}

Result<catalog::Transform> FanOutJoinPlan::Draft(const grammar::TransformStmt& stmt,
                                                 catalog::Transform drafted,
                                                 const JoinShape& shape) {
  catalog::Transform t = std::move(drafted);
  t.kind = catalog::TransformKind::kFanOutJoin;
  // The root's key, then each repeating input's, in input order.
  std::vector<size_t> keyed{shape.root};
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    if (shape.keyed[i] && i != shape.root) keyed.push_back(i);
  }
  TRELLIS_RETURN_IF_ERROR(KeyJoinTarget(stmt, t, {}, keyed));
  return t;
}

Status KeyJoinTarget(const grammar::TransformStmt& stmt, catalog::Transform& t,
                     std::vector<catalog::KeyColumn> leading, const std::vector<size_t>& keyed) {
  t.key = std::move(leading);
  t.columns.clear();
  std::set<size_t> named_by_item;  // SELECT items that name a key column
  for (size_t i : keyed) {
    const catalog::Input& input = t.inputs[i];
    for (size_t c = 0; c < input.source.key_columns.size(); ++c) {
      const std::string& column = input.source.key_columns[c];
      catalog::KeyColumn k{HiddenColumnName(JoinColumnRef{input.alias, column}),
                           sql::Ident(input.alias) + "." + sql::Ident(column),
                           input.source.key_types[c]};
      for (size_t s = 0; s < stmt.select.size(); ++s) {
        if (named_by_item.count(s) || !IsColumnReference(stmt.select[s].expr, column, input.alias))
          continue;
        named_by_item.insert(s);
        k.name = stmt.select[s].alias;
        break;
      }
      t.key.push_back(std::move(k));
    }
  }
  std::set<std::string> names;
  auto claim = [&](const std::string& name) -> Status {
    if (names.insert(name).second) return Status::OK();
    return Status::Validation(
        "transform " + sql::Ident(t.name()) + " would have two columns named " + sql::Ident(name) +
        " (a join whose rows repeat is keyed by the key of each table that repeats, named "
        "\"alias.column\" unless a SELECT item names it): give the item another name");
  };
  for (const auto& k : t.key) TRELLIS_RETURN_IF_ERROR(claim(k.name));
  for (size_t s = 0; s < stmt.select.size(); ++s) {
    if (named_by_item.count(s)) continue;
    TRELLIS_RETURN_IF_ERROR(claim(stmt.select[s].alias));
    catalog::Column column;
    column.name = stmt.select[s].alias;
    column.expr = stmt.select[s].expr;
    t.columns.push_back(std::move(column));
  }
  return Status::OK();
}

std::string FanOutJoinPlan::RecomputeKeysFrom(const std::string& keys_from) const {
  const auto& unit = unit_key();
  Slots slots = BaseSlots();
  std::vector<std::string> decoded = sql::KeyRowValues("k", KeyTypes(unit));
  std::vector<std::string> units;
  for (size_t i = 0; i < unit.size(); ++i) {
    const std::string name = sql::Ident("__k" + std::to_string(i + 1));
    decoded[i] += " AS " + name;
    units.push_back("__trellis_units." + name);
  }
  slots["decoded_keys"] = sql::Join(decoded, ", ");
  slots["keys_from"] = keys_from;
  slots["unit_rows"] = UnitRows();
  slots["named_values"] = NamedValues();
  slots["target_key"] = sql::Join(KeyNames(target_key(), kTargetAlias), ", ");
  slots["fresh_key"] = sql::Join(KeyNames(target_key(), "__trellis_fresh"), ", ");
  slots["target_is_unit"] = KeyEquals(unit, KeyNames(unit, kTargetAlias), units);
  slots["on_conflict"] = OnConflictUpdate(target_key(), quoted_columns(), kTargetAlias);
  return Render(kRecomputeUnits, slots);
}

std::string FanOutJoinPlan::UnitRows() const {
  const auto& unit = unit_key();
  std::vector<std::string> units;
  for (size_t i = 0; i < unit.size(); ++i) {
    units.push_back("__trellis_units." + sql::Ident("__k" + std::to_string(i + 1)));
  }
  return FromClause() + " JOIN __trellis_units ON " + KeyEquals(unit, KeyExprs(unit), units);
}

std::string FanOutJoinPlan::AddKeySql() const { return Render(kAddNullableKey, BaseSlots()); }

std::string FanOutJoinPlan::KeyInputsSql() const {
  const std::vector<std::string> unit = KeyExprs(unit_key());
  return Render(kRootRowInputs, {{"key_text", sql::KeyText(unit)},
                                 {"alias", root_alias()},
                                 {"root_table", root_table()},
                                 {"unit_exprs", sql::Join(unit, ", ")},
                                 {"key_param", KeyFromParam(unit_key(), 1)}});
}

}  // namespace trellis::plan
