#include "drain/self_check_compare.h"

#include "capture/feed.h"
#include "plan/key_sql.h"
#include "sql/key_text.h"
#include "sql/quote.h"
#include "trellis/states.h"

namespace trellis::drain {
namespace {

// ROW(a1, a2) IS DISTINCT FROM ROW(b1, b2) over the value columns; false
// when there are none (a key-only target differs only by presence).
std::string ValuesDiffer(const std::vector<std::string>& columns) {
  if (columns.empty()) return "false";
  std::vector<std::string> t, d;
  for (const auto& c : columns) {
    t.push_back("t." + c);
    d.push_back("d." + c);
  }
  return "ROW(" + sql::Join(t, ", ") + ") IS DISTINCT FROM ROW(" + sql::Join(d, ", ") + ")";
}

// The key cast back to its types from its text form `array`.
std::vector<std::string> TypedKey(const std::vector<plan::KeyColumn>& key,
                                  const std::string& array) {
  return sql::KeyValues(array, plan::KeyTypes(key));
}

// The target and definition rows of one key, as a FULL JOIN condition. A
// FULL JOIN needs a hash- or merge-joinable condition, which the NULL-safe
// OR form of a nullable key (a group key) is not; one-element arrays are,
// and their equality treats two NULLs as equal.
std::string JoinableKeyEquals(const std::vector<plan::KeyColumn>& key) {
  std::vector<std::string> parts;
  for (const auto& k : key) {
    const std::string t = "t." + sql::Ident(k.name);
    const std::string d = "d." + sql::Ident(k.name);
    parts.push_back(k.nullable ? "ARRAY[" + t + "] = ARRAY[" + d + "]" : t + " = " + d);
  }
  return sql::Join(parts, " AND ");
}

// The key columns of the row on whichever side of a FULL JOIN of the
// target `t` and the definition `d` has it.
std::vector<std::string> EitherSide(const std::vector<plan::KeyColumn>& key) {
  std::vector<std::string> out;
  for (const auto& k : key) {
    out.push_back("coalesce(t." + sql::Ident(k.name) + ", d." + sql::Ident(k.name) + ")");
  }
  return out;
}

}  // namespace

SelfCheckStatements::SelfCheckStatements(const plan::TransformPlan& plan,
                                         std::vector<std::string> columns, std::string schema)
    : plan_(plan), names_(std::move(columns)), schema_(std::move(schema)) {
  for (const auto& c : names_) columns_.push_back(sql::Ident(c));
  const auto& key = plan_.target_key();
  const auto& unit = plan_.unit_key();
  // The unit key's columns are target key columns (plan/transform_plan.h),
  // so the key names select them too.
  const std::string selected = sql::Join(plan::KeyNames(key, ""), ", ") +
                               (columns_.empty() ? "" : ", " + sql::Join(columns_, ", "));
  std::vector<std::string> triples;
  for (const auto& c : columns_) {
    triples.push_back("t." + c + "::text, d." + c + "::text, t." + c + " IS DISTINCT FROM d." + c);
  }
  const std::vector<std::string> candidate = TypedKey(unit, "c.key");
  // The rows of either side under a candidate unit, paired by target key:
  // a unit may hold many rows, and each is compared with its counterpart.
  auto under_candidate = [&](const std::string& alias) {
    return "EXISTS (SELECT 1 FROM c WHERE " +
           plan_.UnitCovers(plan::KeyNames(unit, alias), candidate) + ")";
  };
  recheck_ =
      "WITH c AS (" + sql::KeysOfList("$1") + "),\npending_all AS (" + AllPendingSql() +
      "),\npending AS (" + PendingKeysSql() + ")\nSELECT " + sql::KeyLiteralOf("c.key") +
      ",\n  (SELECT all_pending FROM pending_all) OR EXISTS (SELECT 1 FROM pending p WHERE " +
      plan_.UnitsOverlap(TypedKey(unit, "p.key"), candidate) +
      "),\n  t.__t IS NOT NULL, d.__d IS NOT NULL,\n  EXISTS (SELECT 1 FROM " +
      sql::WithSchema("{schema}", schema_) +
      ".held_keys h WHERE h.transform_id = " + std::to_string(plan_.transform_id()) +
      " AND h.key = c.key),\n  " + sql::KeyLiteralOf(sql::KeyText(EitherSide(key))) +
      (triples.empty() ? "" : ",\n  " + sql::Join(triples, ",\n  ")) +
      ",\n  t.__trellis_xmin\nFROM c\nLEFT JOIN ((SELECT true AS __t, t0.xmin::text AS "
      "__trellis_xmin, " +
      selected + " FROM " + plan_.target() + " t0 WHERE " + under_candidate("t0") +
      ") t\n  FULL JOIN (SELECT true AS __d, " + selected + " FROM (" + plan_.DefinitionQuerySql() +
      ") d0 WHERE " + under_candidate("d0") + ") d\n  ON " + JoinableKeyEquals(key) + ")\n  ON " +
      plan_.UnitCovers(EitherSide(unit), candidate) + "\nORDER BY c.key";
}

std::string SelfCheckStatements::AllPendingSql() const {
  // Work that may change any key: the transform is not built (building,
  // rebuilding) or paused, has a job queued or a whole page (a bulk write
  // staged for a rebuild: staging/whole_pages.h), or a TRUNCATE of an input
  // waits in the capture feed, not staged yet.
  std::vector<std::string> sources;
  for (const auto& d : plan_.DirtyKeySql()) sources.push_back(std::to_string(d.source_id));
  const std::string catalog = sql::WithSchema("{schema}", schema_);
  return "SELECT t.status NOT IN (" + sql::Literal(WireName(TransformState::kLive)) + ", " +
         sql::Literal(WireName(TransformState::kCatchingUp)) + ")" +
         "\n    OR EXISTS (SELECT 1 FROM " + catalog + ".jobs j WHERE j.transform_id = t.id)" +
         "\n    OR EXISTS (SELECT 1 FROM " + catalog +
         ".pages p WHERE p.transform_id = t.id AND p.whole)" + "\n    OR EXISTS (SELECT 1 FROM (" +
         capture::CatalogFeed(schema_)->UnstagedRowsSql(false) +
         ") x WHERE x.op = 'T' AND x.source_id IN (" +
         (sources.empty() ? std::string("NULL") : sql::Join(sources, ", ")) +
         ")) AS all_pending\n  FROM " + catalog +
         ".transforms t WHERE t.id = " + std::to_string(plan_.transform_id());
}

std::string SelfCheckStatements::PendingKeysSql() const {
  // Keys with ledger pages, and keys the captured changes not staged yet
  // will dirty (the plan's own dirty-key SQL over every such change the
  // capture feed shows, as staging would consume them).
  const size_t n = plan_.unit_key().size();
  std::string out = "SELECT " + sql::KeyOfRow("k", n) + " AS key FROM " +
                    sql::WithSchema("{schema}", schema_) + ".pages p, " +
                    sql::KeyRows("p.keys", "p.id", n, "k") +
                    " WHERE p.transform_id = " + std::to_string(plan_.transform_id());
  const std::string unstaged = capture::CatalogFeed(schema_)->UnstagedRowsSql(/*member=*/false);
  for (const auto& dirty : plan_.DirtyKeySql()) {
    out +=
        "\n  UNION ALL SELECT key FROM (WITH consumed AS (" + unstaged + ")\n" + dirty.sql + ") x";
  }
  return out;
}

plan::Bound SelfCheckStatements::CompareRange(const plan::KeyRange& range) const {
  const auto& key = plan_.target_key();
  plan::Bound out;
  const std::string target_in_range =
      plan::InRange(key, plan::KeyNames(key, "t0"), range, out.params);
  pg::Params same;  // the same bounds again, as the same parameters
  const std::string definition_in_range =
      plan::InRange(key, plan::KeyNames(key, "d0"), range, same);
  const std::string selected = sql::Join(plan::KeyNames(key, ""), ", ") +
                               (columns_.empty() ? "" : ", " + sql::Join(columns_, ", "));
  out.text = "SELECT count(*), coalesce(array_agg(" +
             sql::KeyLiteralOf(sql::KeyText(EitherSide(plan_.unit_key()))) +
             ") FILTER (WHERE t.__t IS NULL OR d.__d IS NULL OR " + ValuesDiffer(columns_) +
             "), '{}')\nFROM (SELECT true AS __t, " + selected + " FROM " + plan_.target() +
             " t0 WHERE " + target_in_range + ") t\nFULL JOIN (SELECT true AS __d, " + selected +
             " FROM (" + plan_.DefinitionQuerySql() + ") d0 WHERE " + definition_in_range +
             ") d\n  ON " + JoinableKeyEquals(key);
  return out;
}

std::string SelfCheckStatements::SampleTargetKeysSql() const {
  return "SELECT " + sql::KeyLiteralOf(sql::KeyText(plan::KeyNames(plan_.unit_key(), "t"))) +
         " FROM " + plan_.target() + " t TABLESAMPLE BERNOULLI ($1::float8) LIMIT $2::bigint";
}

}  // namespace trellis::drain
