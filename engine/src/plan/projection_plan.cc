#include "plan/projection_plan.h"

#include <algorithm>
#include <set>

#include "capture/routing.h"
#include "grammar/render.h"
#include "plan/key_sql.h"
#include "plan/quarantine_sql.h"
#include "plan/where_scope.h"
#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The target's alias in every statement that writes it.
constexpr const char* kTarget = "__trellis_t";

std::vector<KeyColumn> KeyOf(const catalog::Transform& t) {
  std::vector<KeyColumn> key;
  for (size_t i = 0; i < t.source.key_columns.size(); ++i) {
    const std::string& column = t.source.key_columns[i];
    // A primary key column is never NULL; a key taken from a Trellis target
    // keyed UNIQUE NULLS NOT DISTINCT may be (a NULL group).
    key.push_back(KeyColumn{column, t.source.key_types[i],
                            sql::Ident(t.source_alias) + "." + sql::Ident(column),
                            t.source.KeyColumnMayBeNull(column)});
  }
  return key;
}

// The input a plan's units are rows of: the FROM table (t.source and
// t.source_alias), unless a kind names another (plan/join_tree.h).
catalog::Input FromInput(const catalog::Transform& t) {
  catalog::Input from;
  from.source = t.source;
  from.alias = t.source_alias;
  return from;
}

// Recompute of a set of keys, read from `keys_from` (a FROM list whose rows
// carry the keys as text in k.c1..cn, sql::KeyRows). Each key is looked
// up in the source once, in the keys CTE, to decide whether its target row
// is kept (the source row exists and passes the WHERE) or deleted; the CASE
// keeps the WHERE from running on a missing row. The value expressions run
// only in the upsert, on rows that exist. DISTINCT on the typed key: two
// texts of one value (1.0 and 1.00) must not make the upsert touch a row
// twice. Rows whose values did not change are not rewritten (no dead tuples,
// no trigger churn downstream); values compare as text so that types without
// equality (json) work. One lookup per key and no target lookup for kept
// keys made a drain ~20% cheaper than an upsert plus an anti-joined delete.
// The decoded keys sit in one FROM list with {from}, whose aliases are the
// user's (a join's `JOIN dims d`), so their own alias is a reserved name.
constexpr std::string_view kRecomputeKeys = R"sql(WITH __trellis_keys AS MATERIALIZED (
  SELECT {typed_keys}, {keep} AS __keep
  FROM (SELECT DISTINCT {decoded_keys} FROM {keys_from}) AS __trellis_d
  LEFT JOIN {from} ON {source_is_key}
), written AS (
  INSERT INTO {target} AS __trellis_t ({target_columns})
  SELECT {values} FROM {from}
  JOIN __trellis_keys ON {source_is_kept_key}
  WHERE __trellis_keys.__keep
  {on_conflict}
  RETURNING 1
), deleted AS (
  DELETE FROM {target} AS __trellis_t USING __trellis_keys
  WHERE {target_is_kept_key} AND NOT __trellis_keys.__keep
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted))sql";

// Recompute of a key range in place: upsert the range's rows, delete target
// rows in the range whose source row is gone or fails the WHERE.
//
// {range_rows} is the range's condition and the WHERE asked only of its
// rows (plan/where_scope.h): a WHERE that fails on a row of another range
// (a division by zero) must not fail this one, or the failure is charged
// to a key that does not fail. A generic plan of the gone-row check below,
// a hashed anti-join, read the whole source with the WHERE applied to
// every row (session 18: the charging test held the first and the last
// key of a rebuild's ranges for a row in the middle).
constexpr std::string_view kRecomputeRange = R"sql(WITH written AS (
  INSERT INTO {target} AS __trellis_t ({target_columns})
  SELECT {values} FROM {from}
  WHERE {range_rows}
  {on_conflict}
  RETURNING 1
), deleted AS (
  DELETE FROM {target} AS __trellis_t
  WHERE {target_in_range}
    AND {target_row_gone}
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted))sql";

// The whole target recomputed, as a difference: the definition's rows
// computed once, matched to the target's by key in one join (hashed: one
// read of each side), and only what differs written, existing rows by an
// UPDATE, new ones by an INSERT; target rows whose key the definition
// lacks deleted. The range recompute's INSERT ... ON CONFLICT probes the
// target's key index once per definition row: a rebuild after a 10%
// UPDATE of 1,000,000 orders took 6.9-8.2 s that way and 3.7-4.9 s with
// the join, against 1.6-1.9 s for a REFRESH of the same query
// (bench/README.md "Batch paths"). One statement, so readers see the old
// rows until it commits and the new ones after.
constexpr std::string_view kRebuildWhole = R"sql(WITH __trellis_fresh AS MATERIALIZED (
  SELECT {named_values} FROM {from} WHERE {where}
), __trellis_changed AS (
  SELECT __trellis_f.*, __trellis_t.ctid IS NOT NULL AS __trellis_present
  FROM __trellis_fresh AS __trellis_f LEFT JOIN {target} AS __trellis_t ON {fresh_is_target}
  WHERE __trellis_t.ctid IS NULL OR {row_differs}
), updated AS (
  UPDATE {target} AS __trellis_t SET {set_columns}
  FROM __trellis_changed AS __trellis_f
  WHERE __trellis_f.__trellis_present AND {fresh_is_target}
  RETURNING 1
), inserted AS (
  INSERT INTO {target} ({target_columns})
  SELECT {target_columns} FROM __trellis_changed WHERE NOT __trellis_present
  RETURNING 1
), deleted AS (
  DELETE FROM {target} AS __trellis_t
  WHERE NOT EXISTS (SELECT 1 FROM __trellis_fresh AS __trellis_f WHERE {fresh_is_target})
  RETURNING 1
)
SELECT (SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted),
       (SELECT count(*) FROM deleted))sql";

// {range_rows} as in kRecomputeRange.
constexpr std::string_view kAppendRange = R"sql(INSERT INTO {target} ({target_columns})
SELECT {values} FROM {from}
WHERE {range_rows})sql";

// A primary key, unless a key column may be NULL (the source's key does):
// then UNIQUE NULLS NOT DISTINCT, under which a NULL key is one row and ON
// CONFLICT finds it, as a GROUP BY's target is keyed.
constexpr std::string_view kAddKey = "ALTER TABLE {target} ADD {constraint} ({key_columns})";

constexpr std::string_view kKeyAfter = R"sql(SELECT {key_text} FROM {from}
WHERE {source_in_range}
ORDER BY {source_key} OFFSET {offset} - 1 LIMIT 1)sql";

// The middle key of a range, in one scan of it; no row when it holds fewer
// than two keys.
constexpr std::string_view kMiddleKey = R"sql(SELECT k FROM (
  SELECT {key_text} AS k, row_number() OVER (ORDER BY {source_key}) AS n, count(*) OVER () AS c
  FROM {from} WHERE {source_in_range}
) s WHERE c >= 2 AND n = c / 2)sql";

constexpr std::string_view kSampleBoundaries = R"sql(SELECT b FROM (
  SELECT {key_text} AS b, row_number() OVER (ORDER BY {source_key}) AS n
  FROM {source_table} AS {alias} TABLESAMPLE SYSTEM ({percent})
) s WHERE n % {per_boundary} = 0 ORDER BY n LIMIT {count})sql";

// The planner's rows per page scaled to the table's size now when it has
// been analysed with rows in it (free), else an exact count.
constexpr std::string_view kEstimateKeys = R"sql(SELECT CASE
  WHEN c.reltuples > 0 AND c.relpages > 0
    THEN (c.reltuples / c.relpages *
          (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint
  ELSE (SELECT count(*) FROM {source_table}) END
FROM pg_class c WHERE c.oid = {source_literal}::regclass)sql";

// The source row a key is computed from, for a failing key's record.
constexpr std::string_view kKeyInputs = R"sql(SELECT {key_text}, to_jsonb({alias}) FROM {from}
WHERE ROW({source_key}) = {key_param})sql";

constexpr std::string_view kDefinitionQuery = "SELECT {named_values} FROM {from} WHERE {where}";

// The target's columns take the types PostgreSQL infers for the key and
// the expressions; the key itself is made when the first build ends.
constexpr std::string_view kCreateTarget =
    "CREATE TABLE {target} AS SELECT {named_values} FROM {from} WITH NO DATA";

// The dirty target keys from consumed capture rows: a projection's key is
// the source key, the first routing values of every row version
// (spec/engine.md "Capture").
constexpr std::string_view kDirtyKeys =
    R"sql(SELECT DISTINCT {transform_id} AS transform_id, {key} AS key
FROM consumed s, {routing_rows}
WHERE s.source_id = {source_id} AND s.op <> 'T')sql";

// An expression or the predicate as written: the plan keeps them in
// parentheses; this is a view inside them.
std::string_view Unparenthesised(std::string_view e) { return e.substr(1, e.size() - 2); }

}  // namespace

bool IsColumnReference(const std::string& expr, const std::string& column,
                       const std::string& qualifier) {
  auto matches = [&](const std::string& text) {
    return text == column || text == sql::Ident(column);
  };
  if (matches(expr)) return true;
  for (const auto& q : {qualifier, sql::Ident(qualifier)}) {
    const std::string prefix = q + ".";
    if (expr.rfind(prefix, 0) == 0 && matches(expr.substr(prefix.size()))) return true;
  }
  return false;
}

ProjectionPlan::ProjectionPlan(const catalog::Transform& t, const std::string& schema)
    : ProjectionPlan(t, schema, FromInput(t), KeyOf(t), std::nullopt) {}

ProjectionPlan::ProjectionPlan(const catalog::Transform& t, const std::string& schema,
                               const catalog::Input& root, std::vector<KeyColumn> target_key,
                               std::optional<std::vector<KeyColumn>> unit,
                               std::optional<std::vector<KeyColumn>> range)
    : TransformPlan(t.id, t.name(), sql::Qualified(t.target_schema, t.target_name),
                    std::move(target_key), std::move(unit)),
      schema_(schema),
      range_key_(range ? std::move(*range) : unit_key()),
      source_id_(root.source.id),
      source_table_(sql::Qualified(root.source.schema_name, root.source.table_name)),
      alias_(sql::Ident(root.alias)) {
  // Quarantine records are kept by unit key: a row's own, and its root's
  // (the side key NULL) when units are finer than root rows.
  std::vector<std::string> key_texts{sql::KeyText(KeyExprs(unit_key()))};
  if (range_key_.size() < unit_key().size()) {
    std::vector<std::string> root = KeyExprs(range_key_);
    root.resize(unit_key().size(), "NULL");
    key_texts.push_back(sql::KeyText(root));
  }
  for (const auto& c : t.columns) {
    if (!IsWritten(c)) continue;  // a paused column keeps what it has
    column_names_.push_back(c.name);
    columns_.push_back(sql::Ident(c.name));
    const std::string expr = "(" + c.expr + ")";
    exprs_.push_back(c.state == ColumnState::kLive
                         ? expr
                         : QuarantineGuarded(schema, t.id, c.name, key_texts, expr));
  }
  // One copy of the predicate, made in place (`"(" + where + ")"` would
  // make two); CheckDefinition hands the check a view of it.
  filtered_ = t.where_sql.has_value();
  if (filtered_) {
    where_.reserve(t.where_sql->size() + 2);
    where_ += '(';
    where_ += *t.where_sql;
    where_ += ')';
  } else {
    where_ = "true";
  }
}

Result<catalog::Transform> ProjectionPlan::Draft(
    const grammar::TransformStmt& stmt, const std::vector<capture::ResolvedTable>& inputs) {
  const capture::ResolvedTable& source = inputs.front();
  const std::string& name = stmt.target.name;
  if (source.key_columns.empty()) {
    return Status::Validation("source table " + grammar::RenderQualified(stmt.source.table) +
                              " has no primary key; Trellis keys a projection's target by its "
                              "source's primary key: add one (ALTER TABLE ... ADD PRIMARY KEY)");
  }
  const std::string qualifier = stmt.source.Qualifier();
  catalog::Transform t;
  t.target_schema = stmt.target.schema.value_or("");
  t.target_name = name;
  t.kind = catalog::TransformKind::kProjection;
  t.where_sql = stmt.where;
  t.key_indexed = false;
  t.source = capture::DraftSource(source);
  t.source_alias = qualifier;
  catalog::Input from;  // ordinal 1, role kFrom: the FROM table, joined to nothing
  from.source = t.source;
  from.alias = qualifier;
  t.inputs.push_back(std::move(from));
  for (size_t i = 0; i < source.key_columns.size(); ++i) {
    t.key.push_back(catalog::KeyColumn{
        source.key_columns[i], sql::Ident(qualifier) + "." + sql::Ident(source.key_columns[i]),
        source.key_types[i]});
  }
  // The SELECT items the target stores; items that repeat a key column are
  // the key itself.
  const std::set<std::string> keys(source.key_columns.begin(), source.key_columns.end());
  for (const auto& item : stmt.select) {
    if (keys.count(item.alias)) {
      if (IsColumnReference(item.expr, item.alias, qualifier)) continue;
      return Status::Validation("column " + sql::Ident(item.alias) + " of transform " +
                                sql::Ident(name) +
                                " is the target's key (the source's primary key column); give "
                                "this expression another name");
    }
    catalog::Column column;
    column.name = item.alias;
    column.expr = item.expr;
    t.columns.push_back(std::move(column));
  }
  return t;
}

Status ProjectionPlan::CheckDefinition(pg::Connection&, const ExpressionCheck& check) const {
  std::vector<std::string_view> exprs;
  for (const auto& e : exprs_) exprs.push_back(Unparenthesised(e));
  std::optional<std::string_view> where;
  if (filtered_) where = Unparenthesised(where_);
  auto checked = check(FromClause(), exprs, where);
  return checked.ok() ? Status::OK() : checked.status();
}

Result<std::string> ProjectionPlan::CheckColumn(pg::Connection&, const ExpressionCheck& check,
                                                const grammar::SelectItem& item) const {
  auto types = check(FromClause(), {item.expr}, std::nullopt);
  if (!types.ok()) return types.status();
  return types->front();
}

std::string ProjectionPlan::CreateTargetSql() const {
  Slots slots = BaseSlots();
  slots["named_values"] = NamedValues();
  return Render(kCreateTarget, slots);
}

std::string ProjectionPlan::FromClause() const { return source_table_ + " AS " + alias_; }

Slots ProjectionPlan::BaseSlots() const {
  const auto& key = target_key();
  const std::vector<std::string> key_exprs = KeyExprs(target_key());
  // Ranges, samples and their order cut the range key (the unit key, unless
  // units are finer than the root's rows).
  const std::vector<std::string> unit_exprs = KeyExprs(range_key());
  std::vector<std::string> target_columns = KeyNames(key, "");
  target_columns.insert(target_columns.end(), columns_.begin(), columns_.end());
  std::vector<std::string> values = key_exprs;
  values.insert(values.end(), exprs_.begin(), exprs_.end());
  return Slots{
      {"target", target()},
      {"from", FromClause()},
      {"source_table", source_table_},
      {"source_literal", sql::Literal(source_table_)},
      {"alias", alias_},
      {"where", where_},
      {"key_columns", sql::Join(KeyNames(key, ""), ", ")},
      {"source_key", sql::Join(unit_exprs, ", ")},
      {"key_text", sql::KeyText(unit_exprs)},
      {"target_columns", sql::Join(target_columns, ", ")},
      {"values", sql::Join(values, ", ")},
      {"source_is_target", KeyEquals(key, key_exprs, KeyNames(key, kTarget))},
  };
}

std::string ProjectionPlan::RecomputeKeysFrom(const std::string& keys_from) const {
  // The unit keys read, decoded and looked up in the source; the row of a
  // unit (a row kind has one per unit) upserted on the target key.
  const auto& key = unit_key();
  Slots slots = BaseSlots();
  std::vector<std::string> decoded = sql::KeyRowValues("k", KeyTypes(key));
  std::vector<std::string> typed;
  std::vector<std::string> source_key;
  for (size_t i = 0; i < key.size(); ++i) {
    const std::string name = sql::Ident("__k" + std::to_string(i + 1));
    decoded[i] += " AS " + name;
    typed.push_back("__trellis_d." + name);
    source_key.push_back(key[i].expr);
  }
  std::vector<std::string> cte_keys;
  for (size_t i = 0; i < key.size(); ++i) {
    cte_keys.push_back("__trellis_keys." + sql::Ident("__k" + std::to_string(i + 1)));
  }
  slots["typed_keys"] = sql::Join(typed, ", ");
  slots["decoded_keys"] = sql::Join(decoded, ", ");
  slots["keys_from"] = keys_from;
  // Whether the LEFT JOIN found the unit's row: its first key column is
  // NULL when it did not, unless a key column may be NULL itself (a key
  // taken from a target keyed UNIQUE NULLS NOT DISTINCT); then the root's
  // row identity says it (the root is never NULL-extended).
  const bool may_be_null =
      std::any_of(key.begin(), key.end(), [](const KeyColumn& k) { return k.nullable; });
  const std::string missing = may_be_null ? alias_ + ".ctid IS NULL" : source_key[0] + " IS NULL";
  slots["keep"] = "CASE WHEN " + missing + " THEN false ELSE coalesce(" + where_ + ", false) END";
  slots["source_is_key"] = KeyEquals(key, source_key, typed);
  slots["source_is_kept_key"] = KeyEquals(key, source_key, cte_keys);
  slots["target_is_kept_key"] = KeyEquals(key, KeyNames(key, kTarget), cte_keys);
  slots["on_conflict"] = OnConflictUpdate(target_key(), columns_, kTarget);
  return Render(kRecomputeKeys, slots);
}

std::vector<DirtyKeys> ProjectionPlan::DirtyKeySql() const { return {RootKeys(0)}; }

DirtyKeys ProjectionPlan::RootKeys(size_t null_padding) const {
  // The key is the first routing values of every row version, each capture
  // row read by its own width (capture/routing.h).
  const size_t n = range_key().size();
  std::vector<size_t> positions;
  for (size_t i = 1; i <= n; ++i) positions.push_back(i);
  std::vector<std::string> key = sql::KeyRowCells("k", n);
  key.insert(key.end(), null_padding, "NULL");
  Slots slots{
      {"transform_id", std::to_string(transform_id())},
      {"key", "ARRAY[" + sql::Join(key, ", ") + "]"},
      {"routing_rows", capture::RoutingRows("s", positions, "k")},
      {"source_id", std::to_string(source_id_)},
  };
  return DirtyKeys{source_id_, Render(kDirtyKeys, slots)};
}

std::string ProjectionPlan::RecomputePagesSql() const {
  const size_t n = unit_key().size();
  return RecomputeKeysFrom(sql::Ident(schema_) + ".pages AS p, " +
                           sql::KeyRows("p.keys", "p.id", n, "k") +
                           " WHERE p.id = ANY($1::bigint[])");
}

std::string ProjectionPlan::RecomputeKeysSql() const {
  const size_t n = unit_key().size();
  return RecomputeKeysFrom("(SELECT 1 AS id, $1::text[] AS keys) AS p, " +
                           sql::KeyRows("p.keys", "p.id", n, "k"));
}

Bound ProjectionPlan::RecomputeRange(
    const KeyRange& range, const std::optional<std::vector<std::string>>& only_columns) const {
  const auto& key = target_key();
  std::vector<std::string> update = columns_;
  if (only_columns) {
    update.clear();
    for (const auto& c : *only_columns) {
      const std::string quoted = sql::Ident(c);
      for (const auto& live : columns_) {
        if (live == quoted) update.push_back(quoted);
      }
    }
  }
  Bound out;
  Slots slots = BaseSlots();
  const auto& unit = range_key();
  slots["range_rows"] = WhereAmong(InRange(unit, KeyExprs(unit), range, out.params), where_);
  // The same bounds again, as the same parameters, over the target's columns.
  pg::Params unused;
  slots["target_in_range"] = InRange(unit, KeyNames(unit, kTarget), range, unused);
  slots["on_conflict"] = OnConflictUpdate(key, update, kTarget);
  slots["target_row_gone"] = TargetRowGone();
  out.text = Render(kRecomputeRange, slots);
  return out;
}

Bound ProjectionPlan::RebuildWhole() const {
  const auto& key = target_key();
  // A key that may be NULL matches by IS NULL pairs, which no hash join
  // can take: the range recompute's index probes are the faster form then.
  for (const auto& k : key) {
    if (k.nullable) return RecomputeRange(KeyRange{}, std::nullopt);
  }
  Slots slots = BaseSlots();
  slots["named_values"] = NamedValues();
  slots["fresh_is_target"] = KeyEquals(key, KeyNames(key, "__trellis_f"), KeyNames(key, kTarget));
  std::vector<std::string> sets, mine, theirs;
  for (const auto& c : columns_) {
    sets.push_back(c + " = __trellis_f." + c);
    mine.push_back(std::string(kTarget) + "." + c);
    theirs.push_back("__trellis_f." + c);
  }
  // Compared as text, as the range recompute's ON CONFLICT compares them:
  // every type has a text form, not every type an equality.
  slots["row_differs"] = columns_.empty()
                             ? "false"
                             : "ROW(" + sql::Join(mine, ", ") + ")::text IS DISTINCT FROM ROW(" +
                                   sql::Join(theirs, ", ") + ")::text";
  // With no value column nothing is ever updated: a key is there or not.
  slots["set_columns"] = columns_.empty() ? "" : sql::Join(sets, ", ");
  Bound out;
  out.text = Render(kRebuildWhole, slots);
  if (columns_.empty()) {
    // No UPDATE can name no column: only the insert and the delete.
    out.text = Render(
        R"sql(WITH __trellis_fresh AS MATERIALIZED (
  SELECT {named_values} FROM {from} WHERE {where}
), inserted AS (
  INSERT INTO {target} ({target_columns})
  SELECT {target_columns} FROM __trellis_fresh AS __trellis_f
  WHERE NOT EXISTS (SELECT 1 FROM {target} AS __trellis_t WHERE {fresh_is_target})
  RETURNING 1
), deleted AS (
  DELETE FROM {target} AS __trellis_t
  WHERE NOT EXISTS (SELECT 1 FROM __trellis_fresh AS __trellis_f WHERE {fresh_is_target})
  RETURNING 1
)
SELECT (SELECT count(*) FROM inserted), (SELECT count(*) FROM deleted))sql",
        slots);
  }
  return out;
}

Bound ProjectionPlan::AppendRange(const KeyRange& range) const {
  Bound out;
  Slots slots = BaseSlots();
  slots["range_rows"] =
      WhereAmong(InRange(range_key(), KeyExprs(range_key()), range, out.params), where_);
  out.text = Render(kAppendRange, slots);
  return out;
}

std::string ProjectionPlan::TargetRowGone() const {
  // Only the target row's own source row is asked the WHERE
  // (plan/where_scope.h).
  Slots slots = BaseSlots();
  slots["matched"] = WhereAmong(slots["source_is_target"], where_);
  return Render("NOT EXISTS (SELECT 1 FROM {from} WHERE {matched})", slots);
}

const RangePlan* ProjectionPlan::Ranges() const {
  const auto& unit = range_key();
  const bool may_be_null =
      std::any_of(unit.begin(), unit.end(), [](const KeyColumn& k) { return k.nullable; });
  return may_be_null ? nullptr : this;
}

std::string ProjectionPlan::AddKeySql() const {
  Slots slots = BaseSlots();
  const auto& key = target_key();
  const bool may_be_null =
      std::any_of(key.begin(), key.end(), [](const KeyColumn& k) { return k.nullable; });
  slots["constraint"] = may_be_null ? "UNIQUE NULLS NOT DISTINCT" : "PRIMARY KEY";
  return Render(kAddKey, slots);
}

Bound ProjectionPlan::KeyAfter(const std::optional<std::string>& after, long offset) const {
  Bound out;
  Slots slots = BaseSlots();
  slots["source_in_range"] =
      InRange(range_key(), KeyExprs(range_key()), KeyRange{after, {}}, out.params);
  out.params.push_back(std::to_string(offset));
  slots["offset"] = "$" + std::to_string(out.params.size()) + "::bigint";
  out.text = Render(kKeyAfter, slots);
  return out;
}

Bound ProjectionPlan::MiddleKey(const KeyRange& range) const {
  Bound out;
  Slots slots = BaseSlots();
  slots["source_in_range"] = InRange(range_key(), KeyExprs(range_key()), range, out.params);
  out.text = Render(kMiddleKey, slots);
  return out;
}

Bound ProjectionPlan::SampleBoundaries(double percent, long per_boundary, long count) const {
  Slots slots = BaseSlots();
  slots["percent"] = "$1::float8";
  slots["per_boundary"] = "$2::bigint";
  slots["count"] = "$3::bigint";
  return Bound{Render(kSampleBoundaries, slots),
               {std::to_string(percent), std::to_string(per_boundary), std::to_string(count)}};
}

std::string ProjectionPlan::EstimateKeysSql() const { return Render(kEstimateKeys, BaseSlots()); }

std::string ProjectionPlan::KeyInputsSql() const {
  Slots slots = BaseSlots();
  const std::vector<std::string> unit = KeyExprs(unit_key());
  slots["key_text"] = sql::KeyText(unit);
  slots["source_key"] = sql::Join(unit, ", ");
  slots["key_param"] = KeyFromParam(unit_key(), 1);
  return Render(kKeyInputs, slots);
}

std::string ProjectionPlan::NamedValues() const {
  std::vector<std::string> values;
  for (const auto& k : target_key()) values.push_back(k.expr + " AS " + sql::Ident(k.name));
  for (size_t i = 0; i < columns_.size(); ++i) values.push_back(exprs_[i] + " AS " + columns_[i]);
  return sql::Join(values, ", ");
}

std::string ProjectionPlan::DefinitionQuerySql() const {
  Slots slots = BaseSlots();
  slots["named_values"] = NamedValues();
  return Render(kDefinitionQuery, slots);
}

std::vector<NamedStatement> ProjectionPlan::Statements() const {
  std::vector<NamedStatement> out;
  for (const auto& d : DirtyKeySql()) {
    out.push_back({"dirty_keys_" + std::to_string(d.source_id), d.sql});
  }
  out.push_back({"recompute_pages", RecomputePagesSql()});
  out.push_back({"recompute_keys", RecomputeKeysSql()});
  for (const auto& range : RangeVariants()) {
    const std::string variant = RangeVariantName(range);
    out.push_back({"recompute_range_" + variant, RecomputeRange(range, std::nullopt).text});
    out.push_back({"append_range_" + variant, AppendRange(range).text});
    out.push_back({"middle_key_" + variant, MiddleKey(range).text});
  }
  if (!column_names_.empty()) {
    out.push_back(
        {"recompute_range_columns",
         RecomputeRange(KeyRange{"{0}", "{0}"}, std::vector<std::string>{column_names_.back()})
             .text});
  }
  out.push_back({"add_key", AddKeySql()});
  out.push_back({"key_after_start", KeyAfter(std::nullopt, 1).text});
  out.push_back({"key_after", KeyAfter("{0}", 1).text});
  out.push_back({"sample_boundaries", SampleBoundaries(1, 1, 1).text});
  out.push_back({"estimate_keys", EstimateKeysSql()});
  out.push_back({"definition_query", DefinitionQuerySql()});
  out.push_back({"create_target", CreateTargetSql()});
  return out;
}

}  // namespace trellis::plan
