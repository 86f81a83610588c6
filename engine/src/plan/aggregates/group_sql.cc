#include "plan/aggregates/group_sql.h"

#include "plan/template.h"
#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

// Aliases of the dirty keys and of the recomputed groups; like the rules'
// aliases they start with kHiddenPrefix, which no definition may use.
constexpr std::string_view kDirtyAlias = "__trellis_k";
constexpr std::string_view kFreshAlias = "__trellis_f";

// The alias and a dot, to qualify a column with.
std::string Dot(std::string_view alias) { return std::string(alias) + "."; }

// The dirty relation's key columns, qualified.
std::vector<std::string> DirtyKeys(const GroupShape& shape) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= shape.keys.size(); ++i) {
    out.push_back(Dot(kDirtyAlias) + DirtyKeyColumn(i));
  }
  return out;
}

// `qualifier."column"` for every key column.
std::vector<std::string> KeyColumns(const GroupShape& shape, std::string_view qualifier) {
  std::vector<std::string> out;
  for (const auto& key : shape.keys) out.push_back(std::string(qualifier) + sql::Ident(key.column));
  return out;
}

// Every key expression, bracketed, over a source row.
std::vector<std::string> KeyExprs(const GroupShape& shape) {
  std::vector<std::string> out;
  for (const auto& key : shape.keys) out.push_back("(" + key.expr + ")");
  return out;
}

std::vector<bool> Nullable(const GroupShape& shape) {
  std::vector<bool> out;
  for (const auto& key : shape.keys) out.push_back(key.nullable);
  return out;
}

// KeysMatch for this shape's keys.
std::string Match(const GroupShape& shape, const std::vector<std::string>& left,
                  const std::vector<std::string>& right) {
  return KeysMatch(left, right, Nullable(shape));
}

// "(a IS NULL OR b IS NULL)" over the nullable keys among `keys` (SQL for
// each key, in shape order); "" when no key can be NULL.
std::string AnyNull(const GroupShape& shape, const std::vector<std::string>& keys) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (shape.keys[i].nullable) parts.push_back(keys[i] + " IS NULL");
  }
  return parts.empty() ? "" : "(" + sql::Join(parts, " OR ") + ")";
}

std::string SourceFrom(const GroupShape& shape) {
  return shape.source + " AS " + sql::Ident(shape.alias);
}

std::string WhereOrTrue(const GroupShape& shape) {
  return shape.where ? "(" + *shape.where + ")" : "true";
}

// The scalar subquery recomputing `aggregate` for the group whose keys are
// `keys` (the target row's, or the delta row's).
std::string Recomputed(const GroupShape& shape, const std::string& aggregate,
                       const std::vector<std::string>& keys) {
  std::string filter = WhereOrTrue(shape);
  if (!keys.empty()) filter += " AND " + Match(shape, KeyExprs(shape), keys);
  return Render("(SELECT {aggregate} FROM {source} WHERE {filter})",
                {{"aggregate", aggregate}, {"source", SourceFrom(shape)}, {"filter", filter}});
}

std::vector<std::string> Names(const std::vector<StateColumn>& columns) {
  std::vector<std::string> out;
  for (const auto& c : columns) out.push_back(sql::Ident(c.name));
  return out;
}

std::vector<std::string> Prefixed(std::string_view prefix, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(std::string(prefix) + n);
  return out;
}

}  // namespace

std::string DirtyKeyColumn(std::size_t i) {
  return std::string(kHiddenPrefix) + "key_" + std::to_string(i);
}

std::vector<StateColumn> StateColumns(const GroupShape& shape) {
  std::vector<StateColumn> out;
  for (const auto& input : shape.aggregates) {
    for (auto& column : RuleFor(input).columns) {
      // A quarantined column is NULL for its recorded groups; its hidden
      // state is computed over the guarded argument (NULL for their rows).
      if (!input.quarantined.empty() && column.name == input.column) {
        column.slots["quarantined"] = input.quarantined;
        column.recompute_template =
            "CASE WHEN {quarantined} THEN NULL ELSE " + column.recompute_template + " END";
      }
      out.push_back(std::move(column));
    }
  }
  out.push_back(RowCountColumn());
  return out;
}

std::string KeysMatch(const std::vector<std::string>& left, const std::vector<std::string>& right,
                      const std::vector<bool>& nullable) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < left.size(); ++i) {
    const bool may_be_null = nullable.empty() || nullable[i];
    parts.push_back(
        Render(may_be_null ? "({r} = {l} OR ({r} IS NULL AND {l} IS NULL))" : "{r} = {l}",
               {{"l", left[i]}, {"r", right[i]}}));
  }
  return sql::Join(parts, " AND ");
}

std::string FreshGroupsSql(const GroupShape& shape, std::string_view filter) {
  const std::vector<StateColumn> columns = StateColumns(shape);
  std::vector<std::string> items;
  for (const auto& key : shape.keys) {
    items.push_back("(" + key.expr + ") AS " + sql::Ident(key.column));
  }
  for (const auto& c : columns) items.push_back(c.Recompute() + " AS " + sql::Ident(c.name));
  // The groups' rows are found first (OFFSET 0 keeps the planner from
  // merging the two), and only their rows meet the WHERE and the aggregate
  // arguments: a row whose WHERE fails then fails the recompute of its own
  // group only, which failure charging can hold (spec/engine.md
  // "Charging a failure").
  const std::string source = filter.empty() ? SourceFrom(shape)
                                            : "(SELECT * FROM " + SourceFrom(shape) + " WHERE " +
                                                  std::string(filter) + " OFFSET 0) AS " +
                                                  sql::Ident(shape.alias);
  const std::string grouping =
      shape.keys.empty() ? "" : "\n  GROUP BY " + sql::Join(KeyExprs(shape), ", ");
  return Render("SELECT {items}\n  FROM {source}\n  WHERE {where}{grouping}",
                {{"items", sql::Join(items, ", ")},
                 {"source", source},
                 {"where", WhereOrTrue(shape)},
                 {"grouping", grouping}});
}

std::vector<std::string> StateColumnNames(const GroupShape& shape) {
  return Names(StateColumns(shape));
}

std::string RecomputeGroupsSql(const GroupShape& shape, std::string_view dirty) {
  const std::vector<std::string> names = StateColumnNames(shape);
  if (shape.keys.empty()) {
    // The one row, when `dirty` lists anything (always, without `dirty`):
    // upserted, so that the row is there whatever happened before.
    std::vector<std::string> sets;
    for (const auto& n : names) sets.push_back(n + " = EXCLUDED." + n);
    return Render(R"sql(WITH written AS (
  INSERT INTO {target} ({key}, {names})
  SELECT true, {f}.* FROM ({fresh}) AS {f}{when}
  ON CONFLICT ({key}) DO UPDATE SET {sets}
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), 0::bigint)sql",
                  {{"target", shape.target},
                   {"key", sql::Ident(kWholeTableKey)},
                   {"names", sql::Join(names, ", ")},
                   {"sets", sql::Join(sets, ", ")},
                   {"f", std::string(kFreshAlias)},
                   {"fresh", FreshGroupsSql(shape, "")},
                   {"when", dirty.empty() ? ""
                                          : "\n  WHERE EXISTS (SELECT 1 FROM " +
                                                std::string(dirty) + " AS d)"}});
  }
  // Groups whose keys are all non-NULL are matched with a plain `=`, which
  // the planner turns into an index or hash semi-join; groups with a NULL
  // key take a second branch, gated on the dirty list holding any such key.
  // One NULL-safe match for all (`a = b OR (a IS NULL AND b IS NULL)`) is a
  // nested loop comparing every source row with every dirty key: 215 s
  // instead of 0.7 s for 1 000 groups of a 1M-row table (bench/README.md,
  // "Aggregates").
  const std::string t = Dot(kTargetAlias);
  const std::vector<std::string> dirty_keys = DirtyKeys(shape);
  const std::vector<std::string> target_keys = KeyColumns(shape, t);
  const std::vector<std::string> fresh_keys = KeyColumns(shape, Dot(kFreshAlias));
  const std::vector<bool> never_null(shape.keys.size(), false);
  const std::string dirty_from = "__trellis_dirty AS " + std::string(kDirtyAlias);
  std::string fresh =
      FreshGroupsSql(shape, "EXISTS (SELECT 1 FROM " + dirty_from + " WHERE " +
                                KeysMatch(dirty_keys, KeyExprs(shape), never_null) + ")");
  std::string gone_null, counted_null;
  const std::string dirty_null = AnyNull(shape, dirty_keys);
  if (!dirty_null.empty()) {
    const std::string gate = "EXISTS (SELECT 1 FROM " + dirty_from + " WHERE " + dirty_null + ")";
    fresh += "\n  UNION ALL\n  " +
             FreshGroupsSql(shape, AnyNull(shape, KeyExprs(shape)) + " AND " + gate +
                                       " AND EXISTS (SELECT 1 FROM " + dirty_from + " WHERE " +
                                       dirty_null + " AND " +
                                       Match(shape, dirty_keys, KeyExprs(shape)) + ")");
    gone_null = Render(R"sql(
), gone_null AS (
  DELETE FROM {target} AS {t} USING {dirty_from}
  WHERE {gate} AND {target_null} AND {dirty_null} AND {dirty_match_target}
    AND NOT EXISTS (SELECT 1 FROM fresh AS {f} WHERE {fresh_match_target})
  RETURNING 1)sql",
                       {{"target", shape.target},
                        {"t", std::string(kTargetAlias)},
                        {"dirty_from", dirty_from},
                        {"gate", gate},
                        {"target_null", AnyNull(shape, target_keys)},
                        {"dirty_null", dirty_null},
                        {"dirty_match_target", Match(shape, dirty_keys, target_keys)},
                        {"f", std::string(kFreshAlias)},
                        {"fresh_match_target", Match(shape, fresh_keys, target_keys)}});
    counted_null = " + (SELECT count(*) FROM gone_null)";
  }
  return Render(
      R"sql(WITH __trellis_dirty AS MATERIALIZED (
  SELECT * FROM {dirty} AS d
), fresh AS (
  {fresh}
), gone AS (
  DELETE FROM {target} AS {t} USING {dirty_from}
  WHERE {dirty_match_target}
    AND NOT EXISTS (SELECT 1 FROM fresh AS {f} WHERE {fresh_match_target})
  RETURNING 1{gone_null}
), written AS (
  {upsert}
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone){counted_null})sql",
      {{"dirty", std::string(dirty)},
       {"fresh", fresh},
       {"target", shape.target},
       {"dirty_from", dirty_from},
       {"dirty_match_target", KeysMatch(dirty_keys, target_keys, never_null)},
       {"fresh_match_target", KeysMatch(fresh_keys, target_keys, never_null)},
       {"gone_null", gone_null},
       {"counted_null", counted_null},
       {"upsert", UpsertFreshSql(shape)},
       {"t", std::string(kTargetAlias)},
       {"f", std::string(kFreshAlias)}});
}

std::string UpsertFreshSql(const GroupShape& shape) {
  const std::string t = Dot(kTargetAlias);
  const std::vector<std::string> names = StateColumnNames(shape);
  std::vector<std::string> all = KeyColumns(shape, "");
  all.insert(all.end(), names.begin(), names.end());
  std::vector<std::string> sets;
  for (const auto& n : names) sets.push_back(n + " = EXCLUDED." + n);
  return Render(R"sql(INSERT INTO {target} AS {t} ({all}) SELECT {all} FROM fresh
  ON CONFLICT ({keys}) DO UPDATE SET {sets}
  WHERE ({t_names}) IS DISTINCT FROM ({excluded_names}))sql",
                {{"target", shape.target},
                 {"t", std::string(kTargetAlias)},
                 {"all", sql::Join(all, ", ")},
                 {"keys", sql::Join(KeyColumns(shape, ""), ", ")},
                 {"sets", sql::Join(sets, ", ")},
                 {"t_names", sql::Join(Prefixed(t, names), ", ")},
                 {"excluded_names", sql::Join(Prefixed("EXCLUDED.", names), ", ")}});
}

std::string RecomputeAllGroupsSql(const GroupShape& shape) {
  if (shape.keys.empty()) return RecomputeGroupsSql(shape, "");
  // Every target row is matched against every fresh group: a hash anti-join
  // on one-element arrays, whose equality treats two NULLs as equal (the
  // NULL-safe OR form would be a nested loop over both tables).
  std::vector<std::string> same;
  for (const auto& key : shape.keys) {
    const std::string column = sql::Ident(key.column);
    same.push_back("ARRAY[" + Dot(kFreshAlias) + column + "] = ARRAY[" + Dot(kTargetAlias) +
                   column + "]");
  }
  return Render(R"sql(WITH fresh AS (
  {fresh}
), gone AS (
  DELETE FROM {target} AS {t}
  WHERE NOT EXISTS (SELECT 1 FROM fresh AS {f} WHERE {same})
  RETURNING 1
), written AS (
  {upsert}
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone))sql",
                {{"fresh", FreshGroupsSql(shape, "")},
                 {"target", shape.target},
                 {"same", sql::Join(same, " AND ")},
                 {"upsert", UpsertFreshSql(shape)},
                 {"t", std::string(kTargetAlias)},
                 {"f", std::string(kFreshAlias)}});
}

std::string FoldChangesSql(const GroupShape& shape, std::string_view changes) {
  std::vector<std::string> items = KeyColumns(shape, Dot(kChangeAlias));
  for (const auto& c : StateColumns(shape)) {
    if (!c.delta_template.empty()) items.push_back(c.Delta() + " AS " + sql::Ident(c.name));
  }
  // Without GROUP BY an aggregate gives a row even over no changes; there is
  // nothing to apply then.
  const std::string grouping =
      shape.keys.empty() ? "HAVING count(*) > 0"
                         : "GROUP BY " + sql::Join(KeyColumns(shape, Dot(kChangeAlias)), ", ");
  return Render("SELECT {items} FROM {changes} AS {ch} {grouping}",
                {{"items", sql::Join(items, ", ")},
                 {"changes", std::string(changes)},
                 {"grouping", grouping},
                 {"ch", std::string(kChangeAlias)}});
}

std::vector<std::string> ApplyDeltasSql(const GroupShape& shape, std::string_view deltas) {
  const std::vector<StateColumn> columns = StateColumns(shape);
  const std::vector<std::string> t_keys = KeyColumns(shape, Dot(kTargetAlias));
  const std::vector<std::string> d_keys = KeyColumns(shape, Dot(kDeltaAlias));
  std::vector<std::string> sets;
  std::vector<std::string> inserts = d_keys;
  for (const auto& c : columns) {
    sets.push_back(sql::Ident(c.name) + " = " + c.Update(Recomputed(shape, c.Recompute(), t_keys)));
    inserts.push_back(c.Insert(Recomputed(shape, c.Recompute(), d_keys)));
  }
  const std::string match = shape.keys.empty() ? "true" : Match(shape, d_keys, t_keys);
  std::vector<std::string> statements;
  statements.push_back(
      Render("UPDATE {target} AS {t} SET {sets} FROM {deltas} AS {d} WHERE {match}",
             {{"target", shape.target},
              {"sets", sql::Join(sets, ", ")},
              {"deltas", std::string(deltas)},
              {"match", match},
              {"t", std::string(kTargetAlias)},
              {"d", std::string(kDeltaAlias)}}));
  // The one row of a transform without GROUP BY always exists.
  if (shape.keys.empty()) return statements;
  std::vector<std::string> all = KeyColumns(shape, "");
  for (const auto& name : Names(columns)) all.push_back(name);
  statements.push_back(
      Render("INSERT INTO {target} ({all}) SELECT {inserts} FROM {deltas} AS {d} "
             "WHERE NOT EXISTS (SELECT 1 FROM {target} AS {t} WHERE {match})",
             {{"target", shape.target},
              {"all", sql::Join(all, ", ")},
              {"inserts", sql::Join(inserts, ", ")},
              {"deltas", std::string(deltas)},
              {"match", match},
              {"t", std::string(kTargetAlias)},
              {"d", std::string(kDeltaAlias)}}));
  std::vector<std::string> zero;
  for (const auto& c : columns) {
    if (c.additive) zero.push_back(Dot(kTargetAlias) + sql::Ident(c.name) + " = 0");
  }
  statements.push_back(
      Render("DELETE FROM {target} AS {t} USING {deltas} AS {d} WHERE {match} AND {zero}",
             {{"target", shape.target},
              {"deltas", std::string(deltas)},
              {"match", match},
              {"zero", sql::Join(zero, " AND ")},
              {"t", std::string(kTargetAlias)},
              {"d", std::string(kDeltaAlias)}}));
  return statements;
}

}  // namespace trellis::plan::aggregates
