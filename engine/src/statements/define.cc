#include "statements/define.h"

#include <algorithm>

#include "capture/publication.h"
#include "capture/row_security.h"
#include "capture/sources.h"
#include "catalog/chains.h"
#include "catalog/locks.h"
#include "catalog/migrations.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "pg/sqlstate.h"
#include "plan/bind.h"
#include "plan/define_statement.h"
#include "plan/expression_check.h"
#include "sql/quote.h"
#include "sql/row_reader.h"
#include "statements/define_inputs.h"
#include "statements/target_readers.h"

namespace trellis::statements {
namespace {

// Stores draft `t` (its sources registered): the transform row, its inputs,
// its target key and its columns, each typed as the created target says.
// Returns the transform's id. Takes the draft: once the plan is bound from
// it, the catalog rows are all it is for.
Result<int> Store(pg::Connection& conn, const std::string& schema, std::string definition,
                  catalog::Transform t) {
  // Moved in rather than listed (a list copies each value twice): the
  // definition and its WHERE may be a megabyte each, and every copy counts
  // in the port's peak memory (bench/README.md, "Memory of a large statement").
  pg::Params row{t.target_schema, t.target_name, std::string(WireName(t.kind))};
  row.push_back(std::move(definition));
  row.push_back(std::move(t.where_sql));
  row.push_back(std::string(t.source_index_optional ? "true" : "false"));
  row.push_back(std::string(t.side_units ? "true" : "false"));
  auto inserted = conn.Query(sql::WithSchema(R"sql(
INSERT INTO {schema}.transforms
  (target_schema, target_name, kind, definition, where_sql, source_index_optional, side_units)
VALUES ($1, $2, $3, $4, $5, $6::boolean, $7::boolean) RETURNING id)sql",
                                             schema),
                             row);
  if (!inserted.ok()) return inserted.status();
  auto new_id = sql::ScalarInt64(inserted.value());
  if (!new_id.ok()) return new_id.status();
  row.clear();  // the megabytes above go before the rows below are written
  t.id = static_cast<int>(new_id.value());
  const std::string id = std::to_string(t.id);
  const std::string target = sql::Qualified(t.target_schema, t.target_name);
  for (const auto& input : t.inputs) {
    std::optional<std::string> joined_to;
    if (input.joined_to) joined_to = std::to_string(*input.joined_to);
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_inputs
  (transform_id, ordinal, source_id, alias, role, joined_to, join_columns, joined_columns,
   routed_columns, routes_values)
VALUES ($1::int, $2::int, $3::int, $4, $5, $6::int, $7::text[], $8::text[], $9::text[],
        $10::boolean))sql",
                                  schema),
                  {id, std::to_string(input.ordinal), std::to_string(input.source.id), input.alias,
                   std::string(catalog::InputRoleName(input.role)), joined_to,
                   input.join_columns.empty()
                       ? std::nullopt
                       : std::optional<std::string>(sql::ArrayLiteral(input.join_columns)),
                   input.joined_columns.empty()
                       ? std::nullopt
                       : std::optional<std::string>(sql::ArrayLiteral(input.joined_columns)),
                   sql::ArrayLiteral(input.routed_columns),
                   std::string(input.routes_values ? "true" : "false")}));
  }
  // Types as the target has them (the types PostgreSQL inferred).
  constexpr std::string_view kTypeOf =
      "(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
      "WHERE a.attrelid = $5::regclass AND a.attname = $3::name)";
  for (size_t i = 0; i < t.key.size(); ++i) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec(sql::WithSchema(R"sql(
INSERT INTO {schema}.target_key_columns (transform_id, ordinal, name, expr, sql_type)
VALUES ($1::int, $2::int, $3::text, $4::text, )sql" +
                                      std::string(kTypeOf) + ")",
                                  schema),
                  {id, std::to_string(i + 1), t.key[i].name, t.key[i].expr, target}));
  }
  for (size_t i = 0; i < t.columns.size(); ++i) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema(R"sql(
INSERT INTO {schema}.transform_columns
  (transform_id, ordinal, name, expr, sql_type, role, argument_type)
VALUES ($1::int, $2::int, $3::text, $4::text, )sql" +
                            std::string(kTypeOf) + ", $6, $7)",
                        schema),
        {id, std::to_string(t.columns[i].ordinal ? t.columns[i].ordinal : i + 1), t.columns[i].name,
         t.columns[i].expr, target, std::string(catalog::ColumnRoleName(t.columns[i].role)),
         t.columns[i].argument_type}));
  }
  return t.id;
}

}  // namespace

Result<int> DefineOver(pg::Connection& conn, const std::string& schema,
                       const grammar::TransformStmt& stmt,
                       const std::vector<capture::ResolvedTable>& inputs) {
  const std::string& name = stmt.target.name;
  const std::string shown_target = grammar::RenderQualified(stmt.target);
  const capture::ResolvedTable* source = &inputs.front();
  const std::vector<capture::ResolvedTable> joined(inputs.begin() + 1, inputs.end());
  // The plan of the statement's kind binds it to its inputs: the draft
  // catalog rows, or the refusal of a kind or key it cannot run.
  auto draft = plan::BindDefinition(stmt, inputs);
  if (!draft.ok()) return draft.status();
  catalog::Transform& t = draft.value();

  // Every wait on the source happens here, before any catalog lock: a long
  // transaction holding the source delays this define and nothing else
  // (spec/engine.md "Locks"). A source read by no transform yet gets its
  // capture triggers below, which needs SHARE ROW EXCLUSIVE; that lock also
  // keeps writers out until the define commits.
  auto registered =
      conn.Query(sql::WithSchema("SELECT 1 FROM {schema}.sources WHERE relid = $1::oid", schema),
                 {source->oid});
  if (!registered.ok()) return registered.status();
  const std::string source_table = sql::Qualified(source->schema_name, source->table_name);
  // A kind that routes columns (capture/routing.h) may regenerate capture too.
  const bool may_route = registered->empty() || plan::MayRouteColumns(t.kind);
  TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " + source_table + " IN " +
                                    (may_route ? "SHARE ROW EXCLUSIVE" : "ACCESS SHARE") +
                                    " MODE"));
  TRELLIS_RETURN_IF_ERROR(LockTables(conn, joined));
  // No staging batch runs across this define's commit (catalog/locks.h):
  // one that loaded the transforms before it would miss the new one.
  TRELLIS_RETURN_IF_ERROR(catalog::FenceStaging(conn, schema));
  // Defines and drops serialise on the catalog, so two nodes defining the same
  // name cannot both pass the checks below.
  TRELLIS_RETURN_IF_ERROR(conn.Exec(
      sql::WithSchema("LOCK TABLE {schema}.transforms IN SHARE ROW EXCLUSIVE MODE", schema)));

  auto taken = conn.Query(
      sql::WithSchema("SELECT 1 FROM {schema}.transforms WHERE target_name = $1", schema), {name});
  if (!taken.ok()) return taken.status();
  if (!taken->empty()) {
    return Status::AlreadyExists("a transform named " + sql::Ident(name) +
                                 " already exists; DROP TRANSFORM it first or choose another name");
  }

  // An unqualified target goes where CREATE TABLE would put it.
  if (t.target_schema.empty()) {
    auto current_schema = conn.Query("SELECT current_schema()");
    if (!current_schema.ok()) return current_schema.status();
    t.target_schema = current_schema->text(0, 0);
  }
  const std::string target = sql::Qualified(t.target_schema, name);
  auto exists = conn.Query("SELECT to_regclass($1) IS NOT NULL", {target});
  if (!exists.ok()) return exists.status();
  if (exists->text(0, 0) == "t") {
    return Status::AlreadyExists("a table named " + shown_target +
                                 " already exists; a transform creates its own target table: "
                                 "choose another target name");
  }

  // The plan's own define-time checks, the draft completed with what only
  // the server knows (bound again when it changed), then its empty target.
  auto bound = plan::Bind(t, schema);
  if (!bound.ok()) return bound.status();
  TRELLIS_RETURN_IF_ERROR(
      bound.value()->CheckDefinition(conn, plan::ExpressionCheckFor(conn, name)));
  auto completed = bound.value()->CompleteDraft(conn, stmt, inputs);
  if (!completed.ok()) return completed.status();
  if (completed->has_value()) {
    (*completed)->target_schema = t.target_schema;
    t = std::move(**completed);
    bound = plan::Bind(t, schema);
    if (!bound.ok()) return bound.status();
  }
  const plan::TransformPlan& plan = *bound.value();
  Status created = conn.Exec(plan.CreateTargetSql());
  if (!created.ok()) return plan::DefinitionError(name, created);

  TRELLIS_RETURN_IF_ERROR(CaptureInputs(conn, schema, plan, inputs, t));
  auto stored = Store(conn, schema, grammar::Render(stmt), std::move(t));
  if (!stored.ok()) return stored.status();
  const int id = stored.value();

  // A source with no rows (the usual case in a migration) is built now: the
  // first build is one append of the whole (empty) input and the key. Safe
  // against writers: those that committed earlier are seen here, and later
  // ones are captured and staged only once the define has committed.
  // Not over an upstream that is still building: the empty target it has
  // now is not its content, and the build waits for it (catalog/chains.h).
  auto empty = conn.Query("SELECT NOT EXISTS (SELECT 1 FROM " + source_table + ") AND NOT " +
                          catalog::UpstreamNotLiveSql(schema, std::to_string(id)));
  if (!empty.ok()) return empty.status();
  if (empty->text(0, 0) == "t") {
    // Bound again from the stored rows: a plan that records its build's
    // snapshot (a group plan's, spec/engine.md "Deltas") names the id.
    // Only such a plan: binding again copies the stored definition, which
    // for a 1 MB statement is memory define must not take.
    std::unique_ptr<plan::TransformPlan> rebound;
    if (plan.BuildsFromStoredRows()) {
      auto stored_t = catalog::LoadTransformById(conn, schema, id);
      if (!stored_t.ok()) return stored_t.status();
      auto built = plan::Bind(stored_t.value(), schema);
      if (!built.ok()) return built.status();
      rebound = std::move(built.value());
    }
    const plan::Bound everything = (rebound ? *rebound : plan).AppendRange(plan::KeyRange{});
    TRELLIS_RETURN_IF_ERROR(conn.Exec(everything.text, everything.params));
    TRELLIS_RETURN_IF_ERROR(conn.Exec(plan.AddKeySql()));
    TRELLIS_RETURN_IF_ERROR(catalog::FinishEmptyBuild(conn, schema, id));
  }
  return id;
}

namespace {

// One attempt of Define in a transaction of its own: first the locks of
// `lock_first`, then every part. Appends the inputs of each part it
// reached to `reached`.
Status DefineOnce(pg::Connection& conn, const std::string& schema,
                  const grammar::TransformStmt& stmt, const std::vector<std::string>& lock_first,
                  std::vector<std::string>& reached) {
  auto tx = pg::Transaction::Begin(conn);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(capture::LockForIdentityChanges(conn, lock_first));
  TRELLIS_RETURN_IF_ERROR(catalog::CheckMigrated(conn, schema));
  // The plan room says which catalog transforms the statement is (one, or a
  // grouped join's two parts); each is defined here, by DefineOver.
  const plan::DefineSteps steps{
      [&](const grammar::QualifiedName& name, const std::string& role) {
        return ResolveInput(conn, schema, name, role);
      },
      [&](const grammar::TransformStmt& part) { return ResolveInputs(conn, schema, part); },
      [&](const grammar::TransformStmt& part, const std::vector<capture::ResolvedTable>& inputs) {
        for (const auto& input : inputs) reached.push_back(input.oid);
        return DefineOver(conn, schema, part, inputs);
      }};
  TRELLIS_RETURN_IF_ERROR(capture::RefuseRowSecurity(conn, stmt));
  TRELLIS_RETURN_IF_ERROR(plan::DefineStatement(conn, schema, stmt, steps));
  TRELLIS_RETURN_IF_ERROR(GrantTargetReaders(conn, schema, stmt));
  return tx.value()->Commit();
}

}  // namespace

Result<std::string> Define(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt) {
  // Logical capture may need a source's replica identity set (an ACCESS
  // EXCLUSIVE lock) once the define holds the catalog; there it never
  // waits (capture::ClaimIdentityChange). A table in use makes the define
  // start over with the lock of every table its parts had reached taken
  // first, before any catalog lock. Each attempt that fails so has reached
  // a table not locked first (the claim's table was resolved, and a table
  // locked first is claimed at once), so the attempts end.
  std::vector<std::string> lock_first;
  while (true) {
    std::vector<std::string> reached;
    Status defined = DefineOnce(conn, schema, stmt, lock_first, reached);
    if (defined.ok()) return grammar::RenderQualified(stmt.target);
    if (!pg::HasSqlState(defined, pg::kLockNotAvailable)) return defined;
    const size_t before = lock_first.size();
    for (auto& oid : reached) {
      if (std::find(lock_first.begin(), lock_first.end(), oid) == lock_first.end()) {
        lock_first.push_back(std::move(oid));
      }
    }
    if (lock_first.size() == before) return defined;
  }
}

}  // namespace trellis::statements
