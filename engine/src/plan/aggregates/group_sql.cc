#include "plan/aggregates/group_sql.h"

#include "plan/aggregates/source_index_gap.h"
#include "plan/template.h"
#include "plan/where_scope.h"
#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

// Aliases of the dirty keys and of the recomputed groups; like the rules'
// aliases they start with kHiddenPrefix, which no definition may use.
constexpr std::string_view kDirtyAlias = "__trellis_k";
constexpr std::string_view kFreshAlias = "__trellis_f";
constexpr std::string_view kExtremeAlias = "__trellis_x";

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

// The source's rows for which `filter` holds, found before anything else is
// evaluated over them (OFFSET 0 keeps the planner from merging the two), as
// the source's alias.
std::string Fenced(const GroupShape& shape, const std::string& filter) {
  return "(SELECT * FROM " + SourceFrom(shape) + " WHERE " + filter + " OFFSET 0) AS " +
         sql::Ident(shape.alias);
}

// A SELECT of the key columns and `columns`' recomputes over the source rows
// `from` gives (as the source's alias) that pass the WHERE, grouped by the
// keys.
std::string GroupedSelect(const GroupShape& shape, const std::string& from,
                          const std::vector<StateColumn>& columns) {
  std::vector<std::string> items;
  for (const auto& key : shape.keys) {
    items.push_back("(" + key.expr + ") AS " + sql::Ident(key.column));
  }
  for (const auto& c : columns) items.push_back(c.Recompute() + " AS " + sql::Ident(c.name));
  const std::string grouping =
      shape.keys.empty() ? "" : "\n  GROUP BY " + sql::Join(KeyExprs(shape), ", ");
  return Render("SELECT {items}\n  FROM {source}\n  WHERE {where}{grouping}",
                {{"items", sql::Join(items, ", ")},
                 {"source", from},
                 {"where", WhereOrTrue(shape)},
                 {"grouping", grouping}});
}

// Equality of two relations' keys that a hash join can use: `=` for a key
// that cannot be NULL, else one-element arrays, whose equality treats two
// NULLs as equal. For joining small relations of the statement's own (no
// index to use on either side).
std::string SameKeys(const GroupShape& shape, const std::vector<std::string>& left,
                     const std::vector<std::string>& right) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < shape.keys.size(); ++i) {
    parts.push_back(shape.keys[i].nullable ? "ARRAY[" + left[i] + "] = ARRAY[" + right[i] + "]"
                                           : left[i] + " = " + right[i]);
  }
  return sql::Join(parts, " AND ");
}

// What ApplyDeltasSql decides per group from the delta row `d` and the
// group's target row `t` (NULL when the group is new), as SQL.
struct DeltaParts {
  std::string found;                    // the group has a target row
  std::string emptied;                  // its row count and every count and sum reach 0: deleted
  std::string new_group;                // over `d` alone: a new group that has anything to insert
  std::string flagged;                  // its recomputed columns need the source
  std::string size;                     // about how many source rows it has after the delta
  std::vector<StateColumn> recomputed;  // the columns that can be recomputed
};

DeltaParts DeltaPartsFor(const GroupShape& shape, const std::vector<StateColumn>& columns) {
  const std::string t = Dot(kTargetAlias);
  const std::string d = Dot(kDeltaAlias);
  DeltaParts parts;
  std::vector<std::string> sum_zero, delta_zero, when;
  for (const auto& c : columns) {
    if (c.additive) {
      sum_zero.push_back(c.IsZero());
      delta_zero.push_back(c.DeltaIsZero());
    }
    if (!c.RecomputeWhen().empty()) {
      when.push_back("(" + c.RecomputeWhen() + ")");
      parts.recomputed.push_back(c);
    }
  }
  // A target row's row count is never NULL: NULL is no row.
  parts.found = t + sql::Ident(kRowCountColumn) + " IS NOT NULL";
  const std::string rows = sql::Ident(kRowCountColumn);
  parts.size = "greatest(coalesce(" + t + rows + ", 0) + " + d + rows + ", 0)";
  // IS TRUE and IS NOT TRUE, so that the sets stay disjoint and cover
  // every delta row whatever is NULL. A group without GROUP BY is never
  // deleted.
  parts.emptied = shape.keys.empty() ? "false" : "(" + sql::Join(sum_zero, " AND ") + ") IS TRUE";
  parts.new_group = "(" + sql::Join(delta_zero, " AND ") + ") IS NOT TRUE";
  parts.flagged = when.empty()
                      ? "false"
                      : "CASE WHEN " + parts.found + " THEN (NOT " + parts.emptied + " AND (" +
                            sql::Join(when, " OR ") + ")) IS TRUE ELSE " + parts.new_group + " END";
  return parts;
}

// `column`'s recompute for the group of the delta row `d`, a scalar
// subquery: a lone aggregate over one relation, the one form in which
// PostgreSQL answers a min or max from an index on the group's columns and
// the argument by reading one entry (a grouped lookup, as GroupedSelect
// writes it, reads every row of the group). Measured in the freshness
// benchmark (bench/README.md, "Extremes by index"): max(written_at) over
// groups of ~100 rows went from reading every row of 140 flagged groups
// (36 ms of a 40 ms drain) to one entry each. The user's WHERE is asked
// only of the group's own rows (the CASE), as the fenced lookup
// guarantees: an expression that fails on another group's row must not
// fail this one. Keys are matched by `=`: only groups without a NULL key
// come here.
std::string LookupForDelta(const GroupShape& shape, const StateColumn& column) {
  const std::vector<bool> never_null(shape.keys.size(), false);
  const std::string match =
      KeysMatch(KeyColumns(shape, Dot(kDeltaAlias)), KeyExprs(shape), never_null);
  const std::string where = shape.where ? " AND " + WhereWhen(match, WhereOrTrue(shape)) : "";
  return "(SELECT " + column.Recompute() + " FROM " + SourceFrom(shape) + " WHERE " + match +
         where + ")";
}

// The columns an index must lead with to answer the one recomputed column
// of `recomputed`, a min or max, by one entry per group: the group's
// columns, then the argument. Empty when no index can (more recomputed
// columns, another aggregate, an expression rather than a column).
std::vector<std::string> ExtremeIndexColumns(const GroupShape& shape,
                                             const std::vector<StateColumn>& recomputed) {
  // Without GROUP BY the one row's recompute is one statement already.
  if (shape.keys.empty() || recomputed.size() != 1 || !recomputed.front().extreme) return {};
  std::vector<std::string> columns;
  for (const auto& key : shape.keys) {
    auto name = ColumnName(key.expr, shape.alias);
    if (!name) return {};
    columns.push_back(*name);
  }
  const auto argument = recomputed.front().slots.find("arg");
  if (argument == recomputed.front().slots.end()) return {};
  auto name = ColumnName(argument->second, shape.alias);
  if (!name) return {};
  columns.push_back(*name);
  return columns;
}

// SQL true when the source has that index; "" when none can serve.
std::string ExtremeIndexSql(const GroupShape& shape, const std::vector<StateColumn>& recomputed) {
  const std::vector<std::string> columns = ExtremeIndexColumns(shape, recomputed);
  return columns.empty() ? "" : HasIndexOnSql(shape.source, columns);
}

// The recomputed columns of the groups `__trellis_pre` flags, keyed like
// the target. Groups with non-NULL keys are read one by one by their keys
// (a lateral, fenced lookup: the GROUP BY index, or an index on the group
// columns and the argument, serves it whatever the planner guesses of how
// many groups are flagged), unless the flagged groups hold more than a
// tenth of the source's rows (pg_class.reltuples): each of their rows is
// then a random read, and one scan of the whole source with a hash of the
// flagged keys is cheaper (the planner would pick it with the right
// estimate, which it lacks for a CTE's flags). Measured on 1M rows, all
// cached: 18 600 rows by lookups beat the scan, 180 000 did not. Without
// statistics (never analyzed, or a partitioned parent) the lookups run.
// Groups with a NULL key take a third branch.
std::string FlaggedGroupsSql(const GroupShape& shape, const std::vector<StateColumn>& recomputed) {
  const std::string d = std::string(kDeltaAlias);
  const std::string flagged =
      "SELECT 1 FROM __trellis_pre AS " + d + " WHERE " + Dot(kDeltaAlias) + "__trellis_flagged";
  if (shape.keys.empty()) {
    return GroupedSelect(shape, Fenced(shape, "EXISTS (" + flagged + ")"), recomputed);
  }
  const std::vector<std::string> d_keys = KeyColumns(shape, Dot(kDeltaAlias));
  const std::string d_null = AnyNull(shape, d_keys);
  const std::string not_null = d_null.empty() ? "" : " AND NOT " + d_null;
  // The flagged keys under names no user expression can mean.
  auto flagged_keys = [&](const std::string& which) {
    std::vector<std::string> items;
    for (std::size_t i = 0; i < d_keys.size(); ++i) {
      items.push_back(d_keys[i] + " AS " + DirtyKeyColumn(i + 1));
    }
    return "(SELECT " + sql::Join(items, ", ") + " FROM __trellis_pre AS " + d + " WHERE " +
           Dot(kDeltaAlias) + "__trellis_flagged" + which + ") AS " + std::string(kDirtyAlias);
  };
  std::string scan = "coalesce((SELECT sum(" + Dot(kDeltaAlias) +
                     "__trellis_size) FROM __trellis_pre AS " + d + " WHERE " + Dot(kDeltaAlias) +
                     "__trellis_flagged" + not_null +
                     ") > (SELECT nullif(greatest(reltuples, 0), 0) / 10 FROM "
                     "pg_catalog.pg_class WHERE oid = "
                     "pg_catalog.to_regclass(" +
                     sql::Literal(shape.source) + ")), false)";
  const std::vector<bool> never_null(shape.keys.size(), false);
  const std::string match = KeysMatch(DirtyKeys(shape), KeyExprs(shape), never_null);
  // A lone min or max that an index answers by one entry per group is looked
  // up by the statement that applies it (ApplyDeltasSql), for groups with no
  // NULL key: these two branches then read nothing.
  const std::string indexed = ExtremeIndexSql(shape, recomputed);
  const std::string unindexed = indexed.empty() ? "" : " AND NOT " + indexed;
  if (!indexed.empty()) scan = "(" + scan + unindexed + ")";
  std::string out =
      GroupedSelect(shape,
                    flagged_keys(not_null + unindexed + " AND NOT " + scan) +
                        " CROSS JOIN LATERAL " + Fenced(shape, match),
                    recomputed) +
      "\n  UNION ALL\n  " +
      GroupedSelect(shape,
                    Fenced(shape, scan + " AND EXISTS (SELECT 1 FROM " + flagged_keys(not_null) +
                                      " WHERE " + match + ")"),
                    recomputed);
  if (!d_null.empty()) {
    out += "\n  UNION ALL\n  " +
           GroupedSelect(shape,
                         Fenced(shape, AnyNull(shape, KeyExprs(shape)) + " AND EXISTS (" + flagged +
                                           " AND " + d_null + ") AND EXISTS (SELECT 1 FROM " +
                                           flagged_keys(" AND " + d_null) + " WHERE " +
                                           Match(shape, DirtyKeys(shape), KeyExprs(shape)) + ")"),
                         recomputed);
  }
  return out;
}

// `record` (a data-modifying statement, or empty) as one more CTE of a
// recompute statement, so it runs in the recompute's snapshot.
std::string RecordCte(std::string_view record) {
  if (record.empty()) return "";
  return ", __trellis_recorded AS (\n  " + std::string(record) + "\n)";
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
  // The groups' rows are found first, and only their rows meet the WHERE and
  // the aggregate arguments: a row whose WHERE fails then fails the
  // recompute of its own group only, which failure charging can hold
  // (spec/engine.md "Charging a failure").
  return GroupedSelect(shape,
                       filter.empty() ? SourceFrom(shape) : Fenced(shape, std::string(filter)),
                       StateColumns(shape));
}

std::vector<std::string> StateColumnNames(const GroupShape& shape) {
  return Names(StateColumns(shape));
}

std::string RecomputeGroupsSql(const GroupShape& shape, std::string_view dirty,
                               std::string_view record) {
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
){recorded}
SELECT (SELECT count(*) FROM written), 0::bigint)sql",
                  {{"target", shape.target},
                   {"recorded", RecordCte(record)},
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
){recorded}
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone){counted_null})sql",
      {{"dirty", std::string(dirty)},
       {"recorded", RecordCte(record)},
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

std::string RecomputeAllGroupsSql(const GroupShape& shape, std::string_view record) {
  if (shape.keys.empty()) return RecomputeGroupsSql(shape, "", record);
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
){recorded}
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone))sql",
                {{"fresh", FreshGroupsSql(shape, "")},
                 {"recorded", RecordCte(record)},
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

std::string ApplyDeltasSql(const GroupShape& shape, std::string_view deltas) {
  const std::vector<StateColumn> columns = StateColumns(shape);
  const DeltaParts parts = DeltaPartsFor(shape, columns);
  const std::string d = std::string(kDeltaAlias);
  const std::string t = std::string(kTargetAlias);
  const std::vector<std::string> d_keys = KeyColumns(shape, Dot(kDeltaAlias));
  const std::vector<std::string> t_keys = KeyColumns(shape, Dot(kTargetAlias));
  const bool grouped = !shape.keys.empty();
  const std::string d_null = AnyNull(shape, d_keys);  // "" when no key can be NULL
  const std::vector<bool> never_null(shape.keys.size(), false);
  // A delta row's group is matched by `=` on its keys (an index probe or a
  // hash join on the target's key), and a group with a NULL key by a second
  // branch, gated on there being one: the NULL-safe form is a nested loop.
  const std::string key_eq = grouped ? KeysMatch(d_keys, t_keys, never_null) : "true";
  const std::string not_null = d_null.empty() ? "" : " AND NOT " + d_null;
  const std::string plain_match = key_eq + not_null;
  const std::string null_match = d_null.empty() ? ""
                                                : d_null + " AND " + AnyNull(shape, t_keys) +
                                                      " AND " + Match(shape, d_keys, t_keys);
  auto null_gate = [&](std::string_view relation) {
    return "EXISTS (SELECT 1 FROM " + std::string(relation) + " AS " + d + " WHERE " + d_null + ")";
  };

  // 1. Every delta row with its group's target row as it was before this
  // statement (every CTE below reads that same snapshot), and what happens
  // to the group: updated, inserted (not found), deleted (emptied), and
  // whether a min/max or recomputed column needs the source (flagged).
  const std::string pre_select =
      "SELECT " + d + ".*, " + parts.found + " AS __trellis_found, " + parts.emptied +
      " AS __trellis_emptied, " + parts.flagged + " AS __trellis_flagged, " + parts.size +
      " AS __trellis_size\n    FROM " + "__trellis_deltas AS " + d + " LEFT JOIN ";
  // A page of deltas is small next to its target: each delta row looks its
  // group up by the target's key (fenced, so the planner cannot turn it
  // into a hash of the whole target, which it did for 941 deltas over 10k
  // groups: 9.5 ms of 11 building the hash).
  std::string pre = pre_select +
                    (grouped ? "LATERAL (SELECT * FROM " + shape.target + " AS " + t + " WHERE " +
                                   key_eq + " OFFSET 0) AS " + t + " ON true"
                             : shape.target + " AS " + t + " ON true") +
                    (d_null.empty() ? "" : "\n    WHERE NOT " + d_null);
  if (!d_null.empty()) {
    pre += "\n  UNION ALL\n  " + pre_select + shape.target + " AS " + t + " ON " + null_match +
           "\n    WHERE " + null_gate("__trellis_deltas") + " AND " + d_null;
  }
  std::string ctes = "WITH __trellis_deltas AS MATERIALIZED (\n  SELECT * FROM " +
                     std::string(deltas) + " AS d\n), __trellis_pre AS MATERIALIZED (\n  " + pre +
                     "\n)";

  // 2. The flagged groups' recomputed columns, in one statement over their
  // source rows only.
  std::string from_pre = "__trellis_pre AS " + d;
  if (!parts.recomputed.empty()) {
    ctes += ", __trellis_extremes AS (\n  " + FlaggedGroupsSql(shape, parts.recomputed) + "\n)";
    from_pre += " LEFT JOIN __trellis_extremes AS " + std::string(kExtremeAlias) + " ON " +
                (grouped ? SameKeys(shape, KeyColumns(shape, Dot(kExtremeAlias)), d_keys) : "true");
  }

  // 3. The three actions, over disjoint sets of groups of that one pre-image.
  // They find their rows by key again, not by the pre-image's ctid: the
  // page's bucket locks keep any other writer off these groups, and were one
  // to slip through, PostgreSQL would re-check a key match against the new
  // row version, where a ctid match would silently skip it.
  std::vector<std::string> sets;
  std::vector<std::string> inserts = d_keys;
  // A lone min or max that an index answers: looked up here, per group that
  // needs it (the update's and insert's CASE asks only for those), rather
  // than by __trellis_extremes, whose join back to the groups PostgreSQL may
  // plan as a nested loop over both (it cannot estimate the flagged groups:
  // 717 of them cost 800 ms so).
  const std::string indexed = ExtremeIndexSql(shape, parts.recomputed);
  for (const auto& c : columns) {
    std::string recomputed =
        c.RecomputeWhen().empty() ? "" : Dot(kExtremeAlias) + sql::Ident(c.name);
    if (!indexed.empty() && !recomputed.empty()) {
      recomputed = "CASE WHEN " + indexed + (d_null.empty() ? "" : " AND NOT " + d_null) +
                   " THEN " + LookupForDelta(shape, c) + " ELSE " + recomputed + " END";
    }
    sets.push_back(sql::Ident(c.name) + " = " + c.Update(recomputed));
    inserts.push_back(c.Insert(recomputed));
  }
  const std::string update = "UPDATE " + shape.target + " AS " + t + " SET " +
                             sql::Join(sets, ", ") + "\n    FROM " + from_pre + "\n    WHERE ";
  const std::string updated = " AND " + d + ".__trellis_found AND NOT " + d + ".__trellis_emptied";
  ctes += ", __trellis_updated AS (\n  " + update + plain_match + updated + "\n  RETURNING 1\n)";
  std::vector<std::string> written = {"(SELECT count(*) FROM __trellis_updated)"};
  std::vector<std::string> gone;
  if (!d_null.empty()) {
    ctes += ", __trellis_updated_null AS (\n  " + update + null_gate("__trellis_pre") + " AND " +
            null_match + updated + "\n  RETURNING 1\n)";
    written.push_back("(SELECT count(*) FROM __trellis_updated_null)");
  }
  // The one row of a transform without GROUP BY always exists, and stays.
  if (grouped) {
    std::vector<std::string> all = KeyColumns(shape, "");
    for (const auto& name : Names(columns)) all.push_back(name);
    ctes += ", __trellis_inserted AS (\n  INSERT INTO " + shape.target + " (" +
            sql::Join(all, ", ") + ")\n    SELECT " + sql::Join(inserts, ", ") + "\n    FROM " +
            from_pre + "\n    WHERE NOT " + d + ".__trellis_found AND " + parts.new_group +
            "\n  RETURNING 1\n)";
    written.push_back("(SELECT count(*) FROM __trellis_inserted)");
    const std::string remove = "DELETE FROM " + shape.target + " AS " + t +
                               " USING __trellis_pre AS " + d + "\n    WHERE ";
    const std::string emptied = " AND " + d + ".__trellis_emptied";
    ctes += ", __trellis_deleted AS (\n  " + remove + plain_match + emptied + "\n  RETURNING 1\n)";
    gone.push_back("(SELECT count(*) FROM __trellis_deleted)");
    if (!d_null.empty()) {
      ctes += ", __trellis_deleted_null AS (\n  " + remove + null_gate("__trellis_pre") + " AND " +
              null_match + emptied + "\n  RETURNING 1\n)";
      gone.push_back("(SELECT count(*) FROM __trellis_deleted_null)");
    }
  }
  return ctes + "\nSELECT " + sql::Join(written, " + ") + ", " +
         (gone.empty() ? "0::bigint" : sql::Join(gone, " + "));
}

std::vector<std::string> LoneExtremeIndexColumns(const GroupShape& shape) {
  std::vector<StateColumn> recomputed;
  for (const auto& c : StateColumns(shape)) {
    if (!c.RecomputeWhen().empty()) recomputed.push_back(c);
  }
  return ExtremeIndexColumns(shape, recomputed);
}

}  // namespace trellis::plan::aggregates
