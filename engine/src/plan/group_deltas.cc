#include "plan/group_deltas.h"

#include <algorithm>

#include "plan/template.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The row versions of capture row `__trellis_s`, each as its routed values
// with its sign, for kStageDeltaRows and kStageFoldedDeltaRows alike. A
// capture row's `routing` is a 2-D array, one row per version (an UPDATE's
// old versions first, then as many new ones: capture/functions.cc), read
// with unnest and folded back by the capture row's own width (its width and
// version count come with it: capture/routing.h says why); a row narrower
// than the highest routed position predates this reader and yields nothing
// (capture/routing.h).
constexpr std::string_view kRowVersions = R"sql(LATERAL (
  SELECT (CASE WHEN __trellis_s.op = 'I' THEN 1
               WHEN __trellis_s.op = 'D' THEN -1
               WHEN (u.ord - 1) / __trellis_s.width
                    < __trellis_s.versions / 2 THEN -1
               ELSE 1 END)::smallint AS sign,
         ARRAY[{values}]::text[] AS row_values
  FROM pg_catalog.unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord)
  WHERE __trellis_s.width >= {highest}
  GROUP BY (u.ord - 1) / __trellis_s.width
) AS __trellis_v)sql";

// Each captured row version of the source (kRowVersions) as its routed
// values, with its sign; the sign is NULL (the group is recomputed, no
// delta) when the capture row's relation is not known to be under the
// source (`consumed.member`, capture/relations.h CapturedUnderSourceSql).
constexpr std::string_view kStageDeltaRows =
    R"sql(SELECT {transform_id} AS transform_id, {key} AS key,
       CASE WHEN __trellis_s.member THEN __trellis_v.sign END AS sign,
       __trellis_s.xid, __trellis_v.row_values, false AS folded
FROM consumed AS __trellis_s,
{versions}{group}
WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T')sql";

// Staging of a plan whose deltas fold (FoldsDeltas): the same row versions
// as kStageDeltaRows, each rebuilt once for its group key, whether it
// passes the WHERE and the aggregate arguments (evaluated only when it
// does), then folded by the plan's delta fragments into one row per
// (group, writer, sign). `sign` in `{ch}` is the version's sign when it
// passes the WHERE and NULL when not, and an argument is NULL when its
// version fails the WHERE, so the fragments (sums of signs, filtered sums
// of arguments, the min or max of arguments: aggregates/rules.h) count only
// what the drain would have counted; a row whose versions all fail the WHERE is left out.
// The stored sign is the version's, NULL for a capture row whose relation
// is not `member` (its group is recomputed, as in kStageDeltaRows).
constexpr std::string_view kStageFoldedDeltaRows =
    R"sql(SELECT {transform_id} AS transform_id, {ch}.__trellis_key AS key,
       {ch}.__trellis_sign AS sign, {ch}.__trellis_xid AS xid,
       ARRAY[{folded}]::text[] AS row_values, true AS folded
FROM (
  SELECT __trellis_g.__trellis_key, __trellis_s.xid AS __trellis_xid,
         CASE WHEN __trellis_s.member THEN __trellis_v.sign END AS __trellis_sign,
         __trellis_g.__trellis_kept,
         CASE WHEN __trellis_g.__trellis_kept THEN __trellis_v.sign END AS sign{args}
  FROM consumed AS __trellis_s,
  {versions},
  LATERAL (SELECT {key} AS __trellis_key, {kept} AS __trellis_kept{items}
           FROM {rebuilt} AS {alias}) AS __trellis_g
  WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T'
) AS {ch}
GROUP BY {ch}.__trellis_key, {ch}.__trellis_xid, {ch}.__trellis_sign
HAVING {ch}.__trellis_sign IS NULL OR bool_or({ch}.__trellis_kept))sql";

// The folded delta rows of the claimed pages, each decoded to the target's
// key and state columns (json_populate_record over the target's row type,
// so each value is read by its column's own input function), less the rows
// a recorded recompute saw and those of held groups, as in kChanges: a
// folded row keeps its writer and its group, so a recompute's record
// skips exactly the changes it read.
constexpr std::string_view kFoldedChanges = R"sql(SELECT {columns}
  FROM {schema}.delta_rows AS __trellis_dr,
  LATERAL pg_catalog.json_populate_record(NULL::{target},
            pg_catalog.json_object(ARRAY[{names}]::text[], {values})) AS __trellis_fr
  WHERE __trellis_dr.page_id = ANY ($1::bigint[])
    AND __trellis_dr.folded
    AND pg_catalog.cardinality(__trellis_dr.row_values) = {folded_width}
    AND NOT EXISTS (SELECT 1 FROM {schema}.held_keys AS __trellis_h
                    WHERE __trellis_h.transform_id = {transform_id}
                      AND __trellis_h.key = __trellis_dr.key)
    AND NOT EXISTS (SELECT 1 FROM {schema}.group_snapshots AS __trellis_r
                    WHERE __trellis_r.transform_id = {transform_id}
                      AND pg_catalog.pg_visible_in_snapshot(__trellis_dr.xid, __trellis_r.snapshot)
                      AND (__trellis_r.keys IS NULL
                           OR __trellis_dr.key::text = ANY (__trellis_r.keys))))sql";

// The group of a rebuilt row version: the GROUP BY expressions' text over
// the row (json_populate_record runs each column type's input function), in
// a subquery of its own so that no name around it can capture a reference.
constexpr std::string_view kGroupOfVersion = R"sql(,
LATERAL (SELECT {key_text}::text[] AS key
         FROM {rebuilt} AS {alias}) AS __trellis_g)sql";

// Delta rows narrower than the routed columns were staged before an ALTER
// routed another column (their values lack it): they are left out of `ch`
// and their groups recomputed (kRecomputedOnDeltaPage), which reads the
// source as it is, so no change counts with a value missing (spec/engine.md
// "Deltas", routing at ALTER).
// The change rows of the claimed pages (the `ch` of aggregates/rules.h):
// each delta row's version rebuilt, kept when it passes the WHERE, with the
// group columns and the aggregate arguments evaluated over it, less the
// rows applied already by a recompute (a recorded snapshot sees their
// writer) and the rows of held groups.
constexpr std::string_view kChanges = R"sql((SELECT __trellis_dr.sign, __trellis_e.*
  FROM {schema}.delta_rows AS __trellis_dr,
  LATERAL (SELECT {items} FROM {rebuilt} AS {alias} WHERE {where}) AS __trellis_e
  WHERE __trellis_dr.page_id = ANY ($1::bigint[])
    AND NOT __trellis_dr.folded
    AND pg_catalog.cardinality(__trellis_dr.row_values) = {width}
    AND NOT EXISTS (SELECT 1 FROM {schema}.held_keys AS __trellis_h
                    WHERE __trellis_h.transform_id = {transform_id}
                      AND __trellis_h.key = __trellis_dr.key)
    AND NOT EXISTS (SELECT 1 FROM {schema}.group_snapshots AS __trellis_r
                    WHERE __trellis_r.transform_id = {transform_id}
                      AND pg_catalog.pg_visible_in_snapshot(__trellis_dr.xid, __trellis_r.snapshot)
                      AND (__trellis_r.keys IS NULL
                           OR __trellis_dr.key::text = ANY (__trellis_r.keys))))
)sql";

// The delta rows of all claimed pages are read once, into a hashed
// subplan (an uncorrelated NOT IN; both columns are NOT NULL, and arrays
// compare NULL elements as equal), not looked up per key: delta rows are
// indexed by page only (catalog step 9).
constexpr std::string_view kRecomputedOnDeltaPage =
    R"sql((({page_id}, {key}) NOT IN (SELECT __trellis_dr.page_id, __trellis_dr.key
                                  FROM {schema}.delta_rows AS __trellis_dr
                                  WHERE __trellis_dr.page_id = ANY ({claimed})
                                    AND pg_catalog.cardinality(__trellis_dr.row_values)
                                        = CASE WHEN __trellis_dr.folded THEN {folded_width}
                                               ELSE {width} END)
   OR EXISTS (SELECT 1 FROM {schema}.held_keys AS __trellis_h
              WHERE __trellis_h.transform_id = {transform_id} AND __trellis_h.key = {key})))sql";

constexpr std::string_view kUnfoldedNeeded =
    R"sql(SELECT EXISTS (SELECT 1 FROM {schema}.delta_rows
               WHERE page_id = ANY ($1::bigint[]) AND NOT folded))sql";

constexpr std::string_view kRecomputeNeeded =
    R"sql(SELECT EXISTS (SELECT 1 FROM {schema}.pages
               WHERE id = ANY ($1::bigint[]) AND covered_width IS DISTINCT FROM {covered_width})
    OR EXISTS (SELECT 1 FROM {schema}.held_keys WHERE transform_id = {transform_id}))sql";

constexpr std::string_view kRecordSnapshot =
    R"sql(INSERT INTO {schema}.group_snapshots (transform_id, keys, snapshot)
  SELECT {transform_id}, {keys}, pg_catalog.pg_current_snapshot(){when})sql";

constexpr std::string_view kCollectSnapshots = R"sql(DELETE FROM {schema}.group_snapshots
WHERE pg_catalog.pg_snapshot_xmax(snapshot) <= LEAST(
  ({oldest_unstaged}),
  (SELECT xid FROM {schema}.delta_rows ORDER BY xid LIMIT 1),
  pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())))sql";

// The row version rebuilt from `values` (text[] in routed column order) as
// a row of the source's type.
std::string Rebuilt(const DeltaInputs& in, const std::string& values) {
  std::vector<std::string> names;
  for (const auto& c : in.routed_columns) names.push_back(sql::Literal(c));
  return "pg_catalog.json_populate_record(NULL::" + in.shape.source +
         ", pg_catalog.json_object(ARRAY[" + sql::Join(names, ", ") + "]::text[], " + values + "))";
}

// The state columns a folded delta row holds, in its order: those the
// plan's fragments fold from changes (a delta fragment).
std::vector<aggregates::StateColumn> FoldedColumns(const DeltaInputs& in) {
  std::vector<aggregates::StateColumn> out;
  for (auto& c : aggregates::StateColumns(in.shape)) {
    if (!c.delta_template.empty()) out.push_back(std::move(c));
  }
  return out;
}

// The routed values of one version as the staging statements read them.
std::string RoutedValues(const DeltaInputs& in) {
  std::vector<std::string> values;
  for (size_t p : in.routed_positions) {
    values.push_back(
        "max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = " + std::to_string(p - 1) + ")");
  }
  return sql::Join(values, ", ");
}

size_t HighestPosition(const DeltaInputs& in) {
  return in.routed_positions.empty()
             ? 0
             : *std::max_element(in.routed_positions.begin(), in.routed_positions.end());
}

// The changes' columns the fragments read besides `sign`: each aggregate's
// argument (`{ch_arg}`), a recomputed call's excepted (it reads the
// group's rows again).
std::vector<const aggregates::AggregateInput*> ChangeArguments(const DeltaInputs& in) {
  std::vector<const aggregates::AggregateInput*> out;
  for (const auto& a : in.shape.aggregates) {
    if (a.argument.empty()) continue;  // count(*) counts signs
    if (a.call.function == grammar::AggregateFunction::kRecomputed) continue;
    out.push_back(&a);
  }
  return out;
}

// The width a folded row of this plan has; -1 when the plan does not fold
// (no folded row then matches: its group is recomputed).
long FoldedWidth(const DeltaInputs& in) {
  return FoldsDeltas(in) ? static_cast<long>(FoldedColumns(in).size()) : -1;
}

// kRowVersions for `in`.
std::string RowVersionsSql(const DeltaInputs& in) {
  return Render(kRowVersions,
                {{"values", RoutedValues(in)}, {"highest", std::to_string(HighestPosition(in))}});
}

}  // namespace

std::string StageDeltaRowsSql(const DeltaInputs& in) {
  Slots slots{{"transform_id", std::to_string(in.transform_id)},
              {"source_id", std::to_string(in.source_id)},
              {"versions", RowVersionsSql(in)}};
  if (in.shape.keys.empty()) {
    // Without GROUP BY every version is of the one group.
    slots["key"] = "ARRAY['true']::text[]";
    slots["group"] = "";
  } else {
    std::vector<std::string> key_exprs;
    for (const auto& k : in.shape.keys) key_exprs.push_back("(" + k.expr + ")");
    slots["key"] = "__trellis_g.key";
    slots["group"] = Render(kGroupOfVersion, {{"key_text", sql::KeyText(key_exprs)},
                                              {"rebuilt", Rebuilt(in, "__trellis_v.row_values")},
                                              {"alias", sql::Ident(in.shape.alias)}});
  }
  return Render(kStageDeltaRows, slots);
}

bool FoldsDeltas(const DeltaInputs& in) {
  const auto columns = FoldedColumns(in);
  return !columns.empty() &&
         std::all_of(columns.begin(), columns.end(),
                     [](const aggregates::StateColumn& c) { return !c.combine_template.empty(); });
}

std::string StageFoldedDeltaRowsSql(const DeltaInputs& in) {
  const std::string kept = in.shape.where ? "(" + *in.shape.where + ") IS TRUE" : "true";
  std::string items, args;
  for (const auto* a : ChangeArguments(in)) {
    const std::string name = sql::Ident(a->state_prefix + "arg");
    items += ", " +
             (in.shape.where ? "CASE WHEN " + kept + " THEN (" + a->argument + ") END"
                             : "(" + a->argument + ")") +
             " AS " + name;
    args += ", __trellis_g." + name;
  }
  std::vector<std::string> folded;
  for (const auto& c : FoldedColumns(in)) folded.push_back("(" + c.Delta() + ")::text");
  std::string key = "ARRAY['true']::text[]";
  if (!in.shape.keys.empty()) {
    std::vector<std::string> key_exprs;
    for (const auto& k : in.shape.keys) key_exprs.push_back("(" + k.expr + ")");
    key = sql::KeyText(key_exprs) + "::text[]";
  }
  return Render(kStageFoldedDeltaRows, {{"transform_id", std::to_string(in.transform_id)},
                                        {"source_id", std::to_string(in.source_id)},
                                        {"versions", RowVersionsSql(in)},
                                        {"ch", std::string(aggregates::kChangeAlias)},
                                        {"folded", sql::Join(folded, ", ")},
                                        {"args", args},
                                        {"items", items},
                                        {"key", key},
                                        {"kept", kept},
                                        {"rebuilt", Rebuilt(in, "__trellis_v.row_values")},
                                        {"alias", sql::Ident(in.shape.alias)}});
}

std::string RecomputeNeededSql(const DeltaInputs& in) {
  // Staging writes a page's covered width from its rows: a folded plan's
  // pages carry folded rows (an unfolded batch, staged so when its fold
  // failed, then asks for the recompute, which finds nothing to do).
  const long covered =
      FoldsDeltas(in) ? FoldedWidth(in) : static_cast<long>(in.routed_columns.size());
  return Render(kRecomputeNeeded, {{"schema", sql::Ident(in.schema)},
                                   {"transform_id", std::to_string(in.transform_id)},
                                   {"covered_width", std::to_string(covered)}});
}

std::string RecordSnapshotSql(const DeltaInputs& in, const std::string& keys_sql,
                              const std::string& when) {
  return Render(kRecordSnapshot, {{"schema", sql::Ident(in.schema)},
                                  {"transform_id", std::to_string(in.transform_id)},
                                  {"keys", keys_sql},
                                  {"when", when.empty() ? "" : " WHERE " + when}});
}

std::vector<PagesStatement> ApplyDeltaRowsSql(const DeltaInputs& in) {
  namespace agg = aggregates;
  std::vector<std::string> items;
  for (const auto& k : in.shape.keys)
    items.push_back("(" + k.expr + ") AS " + sql::Ident(k.column));
  for (const auto* a : ChangeArguments(in)) {
    items.push_back("(" + a->argument + ") AS " + sql::Ident(a->state_prefix + "arg"));
  }
  if (items.empty()) items.push_back("true AS __trellis_any");
  const std::string changes =
      Render(kChanges, {{"schema", sql::Ident(in.schema)},
                        {"transform_id", std::to_string(in.transform_id)},
                        {"items", sql::Join(items, ", ")},
                        {"rebuilt", Rebuilt(in, "__trellis_dr.row_values")},
                        {"alias", sql::Ident(in.shape.alias)},
                        {"where", in.shape.where ? "(" + *in.shape.where + ")" : "true"},
                        {"width", std::to_string(in.routed_columns.size())}});
  PagesStatement unfolded{
      agg::ApplyDeltasSql(in.shape, "(" + agg::FoldChangesSql(in.shape, changes) + ")"), ""};
  if (!FoldsDeltas(in)) return {std::move(unfolded)};

  // Folded rows combine per group, each column by its own combiner (a sum,
  // element by element for a count per display scale, a min or max for an
  // extreme), and are applied first. Rows staged unfolded (before catalog step 25, or in a
  // batch whose fold failed: stage_batch.cc) are applied after, by the
  // statement that applied every row before folding, asked for only when
  // the pages hold one: deltas of a group add up in any order. (One
  // statement over both, their union folded again, took the server about
  // three times as long to plan as to run for a small batch.)
  unfolded.needed = Render(kUnfoldedNeeded, {{"schema", sql::Ident(in.schema)}});
  const std::string ch = std::string(agg::kChangeAlias);
  std::vector<std::string> names, decoded, keys, combined;
  for (const auto& k : in.shape.keys) {
    names.push_back(sql::Literal(k.column));
    decoded.push_back("__trellis_fr." + sql::Ident(k.column));
    keys.push_back(ch + "." + sql::Ident(k.column));
  }
  for (const auto& c : FoldedColumns(in)) {
    const std::string column = sql::Ident(c.name);
    names.push_back(sql::Literal(c.name));
    decoded.push_back("__trellis_fr." + column);
    combined.push_back(c.Combine(ch + "." + column) + " AS " + column);
  }
  const std::string folded =
      Render(kFoldedChanges,
             {{"schema", sql::Ident(in.schema)},
              {"transform_id", std::to_string(in.transform_id)},
              {"target", in.shape.target},
              {"columns", sql::Join(decoded, ", ")},
              {"names", sql::Join(names, ", ")},
              {"values", in.shape.keys.empty() ? "__trellis_dr.row_values"
                                               : "__trellis_dr.key || __trellis_dr.row_values"},
              {"folded_width", std::to_string(FoldedWidth(in))}});
  std::vector<std::string> select = keys;
  select.insert(select.end(), combined.begin(), combined.end());
  const std::string grouping =
      in.shape.keys.empty() ? "HAVING count(*) > 0" : "GROUP BY " + sql::Join(keys, ", ");
  const std::string deltas =
      "SELECT " + sql::Join(select, ", ") + " FROM (" + folded + ") AS " + ch + " " + grouping;
  return {PagesStatement{agg::ApplyDeltasSql(in.shape, "(" + deltas + ")"), ""},
          std::move(unfolded)};
}

std::string RecomputedOnDeltaPage(const DeltaInputs& in, const std::string& page_id,
                                  const std::string& key_sql, const std::string& claimed) {
  return Render(kRecomputedOnDeltaPage, {{"schema", sql::Ident(in.schema)},
                                         {"transform_id", std::to_string(in.transform_id)},
                                         {"page_id", page_id},
                                         {"claimed", claimed},
                                         {"width", std::to_string(in.routed_columns.size())},
                                         {"folded_width", std::to_string(FoldedWidth(in))},
                                         {"key", key_sql}});
}

std::string CollectSnapshotsSql(const std::string& schema, const std::string& oldest_unstaged) {
  return Render(kCollectSnapshots,
                {{"schema", sql::Ident(schema)}, {"oldest_unstaged", oldest_unstaged}});
}

}  // namespace trellis::plan
