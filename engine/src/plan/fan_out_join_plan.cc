#include "plan/fan_out_join_plan.h"

#include <algorithm>
#include <set>

#include "plan/group_over_join.h"
#include "plan/key_sql.h"
#include "plan/where_scope.h"
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
// The upsert of the rows a recompute computed (the CTE __trellis_fresh), a
// CTE of both recomputes below.
constexpr std::string_view kUpsertFresh = R"sql(written AS (
  INSERT INTO {target} AS __trellis_t ({target_columns})
  SELECT {target_columns} FROM __trellis_fresh
  {on_conflict}
  RETURNING 1
))sql";

constexpr std::string_view kRecomputeUnits = R"sql(WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT {decoded_keys} FROM {keys_from}
), __trellis_fresh AS MATERIALIZED (
  SELECT {named_values} FROM {unit_rows}
  WHERE {unit_where}
), {upsert_fresh}, deleted AS (
  DELETE FROM {target} AS __trellis_t USING __trellis_units
  WHERE {target_is_unit}
    AND ROW({target_key})::text NOT IN (SELECT ROW({fresh_key})::text FROM __trellis_fresh)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted))sql";

// Recompute of side units (fan_out_join_plan.h) read from {keys_from}: the
// units whose side key is NULL are whole roots (__trellis_whole); the others
// (__trellis_side, less those whose root is whole already) each cover the
// rows holding their side row and their root's NULL-extended rows
// (__trellis_side_roots). The rows they compute now are three disjoint
// branches, each driven from the units by an index: a side row by its key
// (a LATERAL subquery per unit that PostgreSQL never flattens, so it is
// planned for one unit, where the side's key is the selective index; joined
// to all units at once it was planned by the root's key and read every side
// row of the root, 120 of 160 ms for 1,000 units); the NULL-extended rows
// as an anti-join (the side's join columns IS NULL, which PostgreSQL turns
// into one, where its key IS NULL it does not: 95 ms to 17 ms); and the
// target rows under them three lookups by the target key; as for root units,
// the computed rows are upserted and the target rows under the units not
// among them deleted (by their row identity, read in the statement's one
// snapshot, which the upsert never touches).
constexpr std::string_view kRecomputeSideUnits = R"sql(WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT {decoded_keys} FROM {keys_from}
), __trellis_whole AS MATERIALIZED (
  SELECT DISTINCT {root_units} FROM __trellis_units WHERE {unit_side_null}
), __trellis_side AS MATERIALIZED (
  SELECT * FROM __trellis_units WHERE NOT ({unit_side_null})
    AND NOT EXISTS (SELECT 1 FROM __trellis_whole WHERE {whole_is_side_root})
), __trellis_side_roots AS MATERIALIZED (
  SELECT DISTINCT {root_units} FROM __trellis_side
), __trellis_fresh AS MATERIALIZED (
  SELECT {named_values} FROM {from} JOIN __trellis_whole ON {root_is_whole}
  WHERE {whole_where}
  UNION ALL
  SELECT __trellis_x.* FROM __trellis_side, LATERAL (
    SELECT {named_values} FROM {from} WHERE {side_where}
    OFFSET 0) AS __trellis_x
  UNION ALL
  SELECT {named_values} FROM {from} JOIN __trellis_side_roots ON {root_is_side_root}
  WHERE {side_missing_where}
), __trellis_under AS MATERIALIZED (
  SELECT __trellis_t.ctid AS row_id, ROW({target_key})::text AS key
  FROM {target} AS __trellis_t JOIN __trellis_whole ON {target_root_is_whole}
  UNION ALL
  SELECT __trellis_t.ctid, ROW({target_key})::text
  FROM {target} AS __trellis_t JOIN __trellis_side ON {target_root_is_side} AND {target_side_is_side}
  UNION ALL
  SELECT __trellis_t.ctid, ROW({target_key})::text
  FROM {target} AS __trellis_t JOIN __trellis_side_roots ON {target_root_is_side_root}
  WHERE {target_side_missing}
), {upsert_fresh}, deleted AS (
  DELETE FROM {target} AS __trellis_t USING __trellis_under
  WHERE __trellis_t.ctid = __trellis_under.row_id
    AND __trellis_under.key NOT IN (SELECT ROW({fresh_key})::text FROM __trellis_fresh)
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

// The names __k1..__kn of the columns [from, to) of a units CTE, each
// qualified by `cte`.
std::vector<std::string> UnitColumns(const std::string& cte, size_t from, size_t to) {
  std::vector<std::string> out;
  for (size_t i = from; i < to; ++i)
    out.push_back(cte + "." + sql::Ident("__k" + std::to_string(i + 1)));
  return out;
}

// "e1 IS NULL AND e2 IS NULL ...".
std::string AllNull(const std::vector<std::string>& exprs) {
  std::vector<std::string> out;
  for (const auto& e : exprs) out.push_back(e + " IS NULL");
  return sql::Join(out, " AND ");
}

}  // namespace

FanOutJoinPlan::FanOutJoinPlan(const catalog::Transform& t, const std::string& schema)
    : FanOutJoinPlan(t, schema, StoredRoot(t.inputs, t.key),
                     t.side_units ? t.key.size() : RootKeyWidth(t), RootKeyWidth(t)) {
  if (t.side_units && t.key.size() > RootKeyWidth(t)) {
    side_ = OwnerOf(t.inputs, t.key[RootKeyWidth(t)].expr);
  }
}

FanOutJoinPlan::FanOutJoinPlan(const catalog::Transform& t, const std::string& schema, size_t root,
                               size_t unit_width, size_t range_width)
    : JoinPlan(t, schema, root, TargetKeyOf(t), UnitKeyOf(t, unit_width),
               UnitKeyOf(t, range_width)) {}

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
  // One input repeating under the root: its rows are units of their own.
  t.side_units = keyed.size() == 2;
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
  if (side_) return RecomputeSideUnitsFrom(keys_from);
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
  // The WHERE asked only of the units' rows (plan/where_scope.h).
  slots["unit_where"] = WhereWhen(UnitMatch(), where());
  slots["named_values"] = NamedValues();
  slots["target_key"] = sql::Join(KeyNames(target_key(), kTargetAlias), ", ");
  slots["fresh_key"] = sql::Join(KeyNames(target_key(), "__trellis_fresh"), ", ");
  slots["target_is_unit"] = KeyEquals(unit, KeyNames(unit, kTargetAlias), units);
  slots["on_conflict"] = OnConflictUpdate(target_key(), quoted_columns(), kTargetAlias);
  slots["upsert_fresh"] = Render(kUpsertFresh, slots);
  return Render(kRecomputeUnits, slots);
}

std::string FanOutJoinPlan::RecomputeSideUnitsFrom(const std::string& keys_from) const {
  const auto& unit = unit_key();
  const size_t n = unit.size();
  const size_t roots = range_key().size();
  const std::vector<KeyColumn> root_key = RootPart(unit);
  // A side key compares with "=" unless its table's own key may hold NULL:
  // a side unit's key is never all NULL, and an outer side's NULL is the
  // NULL-extended row, which __trellis_side_roots covers.
  std::vector<KeyColumn> side_key = SidePart(unit);
  const catalog::Input& side = inputs()[*side_];
  for (size_t c = 0; c < side_key.size(); ++c) {
    side_key[c].nullable = side.source.KeyColumnMayBeNull(side.source.key_columns[c]);
  }
  Slots slots = BaseSlots();
  std::vector<std::string> decoded = sql::KeyRowValues("k", KeyTypes(unit));
  for (size_t i = 0; i < n; ++i) decoded[i] += " AS " + sql::Ident("__k" + std::to_string(i + 1));
  const std::vector<std::string> exprs = KeyExprs(unit);
  const std::vector<std::string> target = KeyNames(unit, kTargetAlias);
  const auto whole = UnitColumns("__trellis_whole", 0, roots);
  const auto side_roots = UnitColumns("__trellis_side_roots", 0, roots);
  const auto side_root = UnitColumns("__trellis_side", 0, roots);
  const auto side_side = UnitColumns("__trellis_side", roots, n);
  std::vector<std::string> root_units;
  for (size_t i = 0; i < roots; ++i)
    root_units.push_back(sql::Ident("__k" + std::to_string(i + 1)));
  slots["decoded_keys"] = sql::Join(decoded, ", ");
  slots["keys_from"] = keys_from;
  slots["root_units"] = sql::Join(root_units, ", ");
  slots["unit_side_null"] = AllNull(UnitColumns("__trellis_units", roots, n));
  slots["whole_is_side_root"] =
      KeyEquals(root_key, whole, UnitColumns("__trellis_units", 0, roots));
  slots["named_values"] = NamedValues();
  slots["root_is_whole"] = KeyEquals(root_key, RootPart(exprs), whole);
  slots["root_is_side"] = KeyEquals(root_key, RootPart(exprs), side_root);
  slots["side_is_side"] = KeyEquals(side_key, SidePart(exprs), side_side);
  slots["root_is_side_root"] = KeyEquals(root_key, RootPart(exprs), side_roots);
  slots["side_missing"] = SideMissing();
  // The WHERE asked only of each branch's own rows (plan/where_scope.h).
  slots["whole_where"] = WhereWhen(slots["root_is_whole"], where());
  slots["side_where"] =
      WhereAmong(slots["root_is_side"] + " AND " + slots["side_is_side"], where());
  slots["side_missing_where"] = slots["side_missing"];
  if (where() != "true") {
    slots["side_missing_where"] +=
        " AND " + WhereWhen(slots["root_is_side_root"] + " AND " + slots["side_missing"], where());
  }
  slots["target_key"] = sql::Join(KeyNames(target_key(), kTargetAlias), ", ");
  slots["target_root_is_whole"] = KeyEquals(root_key, RootPart(target), whole);
  slots["target_root_is_side"] = KeyEquals(root_key, RootPart(target), side_root);
  slots["target_side_is_side"] = KeyEquals(side_key, SidePart(target), side_side);
  slots["target_root_is_side_root"] = KeyEquals(root_key, RootPart(target), side_roots);
  slots["target_side_missing"] = AllNull(SidePart(target));
  slots["fresh_key"] = sql::Join(KeyNames(target_key(), "__trellis_fresh"), ", ");
  slots["on_conflict"] = OnConflictUpdate(target_key(), quoted_columns(), kTargetAlias);
  slots["upsert_fresh"] = Render(kUpsertFresh, slots);
  return Render(kRecomputeSideUnits, slots);
}

std::string FanOutJoinPlan::SideMissing() const {
  const catalog::Input& side = inputs()[*side_];
  // A side whose own key may hold NULL: its key, which is what the unit's
  // cover names.
  for (const auto& column : side.source.key_columns) {
    if (side.source.KeyColumnMayBeNull(column)) return AllNull(SidePart(KeyExprs(unit_key())));
  }
  // Otherwise its key is NULL exactly when it is NULL-extended, and so are
  // the columns that match it with its neighbour (a matched row's are
  // equal to a value, never NULL): PostgreSQL plans a LEFT join whose
  // matching column is tested IS NULL as an anti-join.
  const std::vector<size_t> path = PathBetween(inputs(), root(), *side_);
  std::vector<std::string> matched;
  for (const auto& c : EdgeBetween(inputs(), *side_, path[path.size() - 2]).near_columns) {
    matched.push_back(sql::Ident(side.alias) + "." + sql::Ident(c));
  }
  return AllNull(matched);
}

std::vector<DirtyKeys> FanOutJoinPlan::DirtyKeySql() const {
  if (!side_) return JoinPlan::DirtyKeySql();
  const std::vector<std::string> exprs = KeyExprs(unit_key());
  const size_t side_width = exprs.size() - range_key().size();
  // The root's own rows are whole roots.
  std::vector<DirtyKeys> out{RootKeys(side_width)};
  for (size_t i = 0; i < inputs().size(); ++i) {
    if (i == root()) continue;
    const std::vector<size_t> path = PathBetween(inputs(), root(), i);
    std::vector<std::string> key = RootPart(exprs);
    const bool own = i == *side_;
    if (own) {
      // The side row itself: its key is in its capture row.
      for (size_t c = 0; c < side_width; ++c) {
        key.push_back("__trellis_j.__trellis_own" + std::to_string(c + 1));
      }
    } else if (std::find(path.begin(), path.end(), *side_) != path.end()) {
      // Below the side: the side rows of the path it reaches.
      const std::vector<std::string> below = SidePart(exprs);
      key.insert(key.end(), below.begin(), below.end());
    } else {
      // Beside the side: every row of the roots it reaches.
      key.insert(key.end(), side_width, "NULL");
    }
    out.push_back(DirtyKeysThrough(root(), i, sql::KeyText(key), own));
  }
  return out;
}

Bound FanOutJoinPlan::SampleUnitKeys(double percent, long count) const {
  Bound sampled = JoinPlan::SampleUnitKeys(percent, count);
  if (!side_) return sampled;
  const size_t side_width = unit_key().size() - range_key().size();
  sampled.text = "SELECT __trellis_b.b || pg_catalog.array_fill(NULL::text, ARRAY[" +
                 std::to_string(side_width) + "]) FROM (" + sampled.text + ") AS __trellis_b";
  return sampled;
}

std::string FanOutJoinPlan::UnitCovers(const std::vector<std::string>& row,
                                       const std::vector<std::string>& unit) const {
  if (!side_) return JoinPlan::UnitCovers(row, unit);
  const auto& key = unit_key();
  return "(" + KeyEquals(RootPart(key), RootPart(row), RootPart(unit)) + ") AND ((" +
         AllNull(SidePart(unit)) + ") OR (" +
         KeyEquals(SidePart(key), SidePart(row), SidePart(unit)) + ") OR (" +
         AllNull(SidePart(row)) + "))";
}

std::string FanOutJoinPlan::UnitsOverlap(const std::vector<std::string>& a,
                                         const std::vector<std::string>& b) const {
  if (!side_) return JoinPlan::UnitsOverlap(a, b);
  return KeyEquals(RootPart(unit_key()), RootPart(a), RootPart(b));
}

std::string FanOutJoinPlan::UnitMatch() const {
  const auto& unit = unit_key();
  return KeyEquals(unit, KeyExprs(unit), UnitColumns("__trellis_units", 0, unit.size()));
}

std::string FanOutJoinPlan::UnitRows() const {
  return FromClause() + " JOIN __trellis_units ON " + UnitMatch();
}

std::string FanOutJoinPlan::AddKeySql() const { return Render(kAddNullableKey, BaseSlots()); }

std::string FanOutJoinPlan::KeyInputsSql() const {
  // The root's row; a side unit's side key is the one given.
  const std::vector<std::string> root = KeyExprs(range_key());
  std::vector<std::string> key = root;
  for (size_t i = root.size(); i < unit_key().size(); ++i) {
    key.push_back("($1::text[])[" + std::to_string(i + 1) + "]");
  }
  return Render(kRootRowInputs, {{"key_text", sql::KeyText(key)},
                                 {"alias", root_alias()},
                                 {"root_table", root_table()},
                                 {"unit_exprs", sql::Join(root, ", ")},
                                 {"key_param", KeyFromParam(range_key(), 1)}});
}

}  // namespace trellis::plan
