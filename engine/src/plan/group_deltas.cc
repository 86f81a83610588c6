#include "plan/group_deltas.h"

#include <algorithm>

#include "plan/template.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// Each captured row version of the source as its routed values, with its
// sign; the sign is NULL (the group is recomputed, no delta) when the
// capture row's relation is not known to be under the source
// (`consumed.member`, capture/relations.h CapturedUnderSourceSql). A
// capture row's `routing` is a 2-D array, one row per version (an UPDATE's
// old versions first, then as many new ones: capture/functions.cc), read
// with unnest and folded back by the capture row's own width (its width and
// version count come with it: capture/routing.h says why); a row narrower
// than the highest routed position predates this reader and yields nothing
// (capture/routing.h).
constexpr std::string_view kStageDeltaRows =
    R"sql(SELECT {transform_id} AS transform_id, {key} AS key,
       CASE WHEN __trellis_s.member THEN __trellis_v.sign END AS sign,
       __trellis_s.xid, __trellis_v.row_values
FROM consumed AS __trellis_s,
LATERAL (
  SELECT (CASE WHEN __trellis_s.op = 'I' THEN 1
               WHEN __trellis_s.op = 'D' THEN -1
               WHEN (u.ord - 1) / __trellis_s.width
                    < __trellis_s.versions / 2 THEN -1
               ELSE 1 END)::smallint AS sign,
         ARRAY[{values}]::text[] AS row_values
  FROM pg_catalog.unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord)
  WHERE __trellis_s.width >= {highest}
  GROUP BY (u.ord - 1) / __trellis_s.width
) AS __trellis_v{group}
WHERE __trellis_s.source_id = {source_id} AND __trellis_s.op <> 'T')sql";

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
                                        = {width})
   OR EXISTS (SELECT 1 FROM {schema}.held_keys AS __trellis_h
              WHERE __trellis_h.transform_id = {transform_id} AND __trellis_h.key = {key})))sql";

constexpr std::string_view kRecomputeNeeded =
    R"sql(SELECT EXISTS (SELECT 1 FROM {schema}.pages
               WHERE id = ANY ($1::bigint[]) AND covered_width IS DISTINCT FROM {width})
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

}  // namespace

std::string StageDeltaRowsSql(const DeltaInputs& in) {
  std::vector<std::string> values;
  for (size_t p : in.routed_positions) {
    values.push_back(
        "max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = " + std::to_string(p - 1) + ")");
  }
  const size_t highest =
      in.routed_positions.empty()
          ? 0
          : *std::max_element(in.routed_positions.begin(), in.routed_positions.end());
  Slots slots{{"transform_id", std::to_string(in.transform_id)},
              {"source_id", std::to_string(in.source_id)},
              {"values", sql::Join(values, ", ")},
              {"highest", std::to_string(highest)}};
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

std::string RecomputeNeededSql(const DeltaInputs& in) {
  return Render(kRecomputeNeeded, {{"schema", sql::Ident(in.schema)},
                                   {"transform_id", std::to_string(in.transform_id)},
                                   {"width", std::to_string(in.routed_columns.size())}});
}

std::string RecordSnapshotSql(const DeltaInputs& in, const std::string& keys_sql,
                              const std::string& when) {
  return Render(kRecordSnapshot, {{"schema", sql::Ident(in.schema)},
                                  {"transform_id", std::to_string(in.transform_id)},
                                  {"keys", keys_sql},
                                  {"when", when.empty() ? "" : " WHERE " + when}});
}

std::vector<std::string> ApplyDeltaRowsSql(const DeltaInputs& in) {
  namespace agg = aggregates;
  std::vector<std::string> items;
  for (const auto& k : in.shape.keys)
    items.push_back("(" + k.expr + ") AS " + sql::Ident(k.column));
  for (const auto& a : in.shape.aggregates) {
    if (a.argument.empty()) continue;  // count(*) counts signs
    // A recomputed call reads the group's rows again, not its changes.
    if (a.call.function == grammar::AggregateFunction::kRecomputed) continue;
    items.push_back("(" + a.argument + ") AS " + sql::Ident(a.state_prefix + "arg"));
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
  return {agg::ApplyDeltasSql(in.shape, "(" + agg::FoldChangesSql(in.shape, changes) + ")")};
}

std::string RecomputedOnDeltaPage(const DeltaInputs& in, const std::string& page_id,
                                  const std::string& key_sql, const std::string& claimed) {
  return Render(kRecomputedOnDeltaPage, {{"schema", sql::Ident(in.schema)},
                                         {"transform_id", std::to_string(in.transform_id)},
                                         {"page_id", page_id},
                                         {"claimed", claimed},
                                         {"width", std::to_string(in.routed_columns.size())},
                                         {"key", key_sql}});
}

std::string CollectSnapshotsSql(const std::string& schema, const std::string& oldest_unstaged) {
  return Render(kCollectSnapshots,
                {{"schema", sql::Ident(schema)}, {"oldest_unstaged", oldest_unstaged}});
}

}  // namespace trellis::plan
