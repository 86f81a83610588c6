#include "statements/define_inputs.h"

#include "capture/publication.h"
#include "capture/routing.h"
#include "catalog/chains.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::statements {
namespace {

// Refuses a partition or an inheritance child as an input: a write made
// through its parent fires the parent's triggers, not its own. A
// partitioned table or an inheritance parent is accepted: capture covers
// every relation under it (capture/relations.h).
Status RefusePartOfParent(pg::Connection& conn, const capture::ResolvedTable& table,
                          const std::string& shown) {
  auto rows = conn.Query(R"sql(
SELECT c.relispartition OR EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid)
FROM pg_catalog.pg_class c WHERE c.oid = $1::oid)sql",
                         {table.oid});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return Status::NotFound(shown + " does not exist");
  if (rows->text(0, 0) == "t") {
    return Status::Validation(shown +
                              " is a partition or inheritance child, and writes made through its "
                              "parent would not reach the target; define the transform over the "
                              "parent (with a WHERE for the rows you want)");
  }
  return Status::OK();
}

// Keys `table` by the key its transform's first build will give it, when
// it is a transform's target without its key yet.
Status AdoptPendingTargetKey(pg::Connection& conn, const std::string& schema,
                             capture::ResolvedTable& table) {
  if (!table.key_columns.empty()) return Status::OK();
  auto key = catalog::PendingTargetKey(conn, schema, table.oid);
  if (!key.ok()) return key.status();
  for (const auto& [name, type] : key.value()) {
    table.key_columns.push_back(name);
    table.key_types.push_back(type);
  }
  // A key that is not a primary key may hold NULL where the table allows it
  // (a GROUP BY's NULL group, a fan-out join's missing outer side); the
  // catalog reads the same again each time it loads (catalog/model.h).
  auto nullable = conn.Query(
      "SELECT a.attname::text FROM pg_catalog.pg_attribute a "
      "WHERE a.attrelid = $1::oid AND a.attname = ANY ($2::text[]) AND NOT a.attnotnull",
      {table.oid, sql::ArrayLiteral(table.key_columns)});
  if (!nullable.ok()) return nullable.status();
  for (size_t r = 0; r < nullable->size(); ++r) {
    table.nullable_key_columns.push_back(nullable->text(r, 0));
  }
  return Status::OK();
}

}  // namespace

Result<capture::ResolvedTable> ResolveInput(pg::Connection& conn, const std::string& schema,
                                            const grammar::QualifiedName& name,
                                            const std::string& role) {
  auto table = capture::ResolveTable(conn, name);
  if (!table.ok()) return table.status();
  TRELLIS_RETURN_IF_ERROR(
      RefusePartOfParent(conn, table.value(), role + " " + grammar::RenderQualified(name)));
  // Another transform's target gets its key when its first build ends; a
  // transform over it is keyed by the key it will have, and waits to build.
  TRELLIS_RETURN_IF_ERROR(AdoptPendingTargetKey(conn, schema, table.value()));
  return table;
}

Result<std::vector<capture::ResolvedTable>> ResolveInputs(pg::Connection& conn,
                                                          const std::string& schema,
                                                          const grammar::TransformStmt& stmt) {
  auto source = ResolveInput(conn, schema, stmt.source.table, "source table");
  if (!source.ok()) return source.status();
  std::vector<capture::ResolvedTable> out{std::move(source.value())};
  for (const auto& join : stmt.joins) {
    auto table = ResolveInput(conn, schema, join.table.table, "joined table");
    if (!table.ok()) return table.status();
    out.push_back(std::move(table.value()));
  }
  return out;
}

Status LockTables(pg::Connection& conn, const std::vector<capture::ResolvedTable>& tables) {
  for (const auto& table : tables) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("LOCK TABLE " +
                                      sql::Qualified(table.schema_name, table.table_name) +
                                      " IN SHARE ROW EXCLUSIVE MODE"));
  }
  return Status::OK();
}

Status CaptureInputs(pg::Connection& conn, const std::string& schema, const plan::DefinePlan& plan,
                     const std::vector<capture::ResolvedTable>& tables, catalog::Transform& t) {
  // The columns the plan reads from capture rows join each source's routing
  // layout (the union of every reader's).
  auto routed = plan.RoutedColumns(conn);
  if (!routed.ok()) return routed.status();
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    // Logical capture may set the table's replica identity below, which
    // must not wait under the catalog locks held by now (publication.h).
    const std::vector<std::string> adds =
        i < routed->size() ? (*routed)[i] : std::vector<std::string>{};
    TRELLIS_RETURN_IF_ERROR(capture::ClaimIdentityChange(conn, schema, tables[i].oid, adds));
    auto source = capture::EnsureSource(conn, schema, tables[i]);
    if (!source.ok()) return source.status();
    t.inputs[i].source.id = source->id;
    if (i < routed->size() && !(*routed)[i].empty()) {
      auto positions = capture::EnsureRoutingColumns(conn, schema, source.value(), (*routed)[i]);
      if (!positions.ok()) return positions.status();
      t.inputs[i].routed_columns = (*routed)[i];
    }
    t.inputs[i].routes_values = plan.RoutesValues();
  }
  return Status::OK();
}

}  // namespace trellis::statements
