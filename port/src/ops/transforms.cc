// The statement and catalog-read ops: apply, define, status, definitions,
// dump_definitions_sql, request_backfill.
#include "args.h"
#include "op_registry.h"
#include "ops/engine_values.h"

namespace trellis::port {
namespace {

// A statement is a transform definition, written by hand or by a migration:
// a few kilobytes at most. The limit is for the database more than for the
// port, which takes a small multiple of a statement's size (bench/README.md,
// "Memory of a large statement"): PostgreSQL keeps a definition's
// expressions as a query tree that for a long list of constants is ~37
// times their text, built and read back at every define.
constexpr std::size_t kMaxStatementBytes = std::size_t{1} << 20;  // 1 MiB
constexpr std::string_view kShorterStatement =
    "write a shorter definition: long lists of values belong in a table, not in the statement";

Result<protocol::Value> RunStatement(Session& session, const protocol::Map& args,
                                     bool define_only) {
  auto statement = RequireStringView(args, "statement", kMaxStatementBytes, kShorterStatement);
  if (!statement.ok()) return statement.status();
  auto result = session.Apply(statement.value(), define_only);
  if (!result.ok()) return result.status();
  return ToValue(result.value());
}

Result<protocol::Value> ApplyOp(Session& session, const protocol::Map& args) {
  return RunStatement(session, args, /*define_only=*/false);
}

Result<protocol::Value> DefineOp(Session& session, const protocol::Map& args) {
  return RunStatement(session, args, /*define_only=*/true);
}

Result<protocol::Value> StatusOp(Session& session, const protocol::Map& args) {
  auto target = RequireString(args, "target");
  if (!target.ok()) return target.status();
  auto status = session.ReadStatus(target.value());
  if (!status.ok()) return status.status();
  return ToValue(status.value());
}

Result<protocol::Value> DefinitionsOp(Session& session, const protocol::Map&) {
  auto definitions = session.Definitions();
  if (!definitions.ok()) return definitions.status();
  protocol::Array out;
  for (const auto& d : definitions.value()) out.push_back(ToValue(d));
  return protocol::Value(std::move(out));
}

Result<protocol::Value> DumpDefinitionsSqlOp(Session& session, const protocol::Map&) {
  auto dumped = session.DumpDefinitionsSql();
  if (!dumped.ok()) return dumped.status();
  return protocol::Value(dumped.value());
}

Result<protocol::Value> RequestBackfillOp(Session& session, const protocol::Map& args) {
  auto target = RequireString(args, "target");
  if (!target.ok()) return target.status();
  Status st = session.RequestBackfill(target.value());
  if (!st.ok()) return st;
  return protocol::Value();
}

const OpRegistrar kApply(DatabaseOp("apply", ApplyOp));
const OpRegistrar kDefine(DatabaseOp("define", DefineOp));
const OpRegistrar kStatus(DatabaseOp("status", StatusOp));
const OpRegistrar kDefinitions(DatabaseOp("definitions", DefinitionsOp));
const OpRegistrar kDumpDefinitionsSql(DatabaseOp("dump_definitions_sql", DumpDefinitionsSqlOp));
const OpRegistrar kRequestBackfill(DatabaseOp("request_backfill", RequestBackfillOp));

}  // namespace
}  // namespace trellis::port
