#include "capture/functions.h"

#include "capture/function_settings.h"
#include "capture/names.h"
#include "sql/quote.h"

namespace trellis::capture {
namespace {

// ARRAY[r."a"::pg_catalog.text, ...]: one row version's routing values.
std::string RoutingArray(const catalog::Source& source) {
  std::vector<std::string> parts;
  for (const auto& column : source.routing_columns) {
    parts.push_back("r." + sql::Ident(column) + "::pg_catalog.text");
  }
  return "ARRAY[" + sql::Join(parts, ", ") + "]";
}

// The body of one event's capture function. One capture row per statement,
// holding every changed row's routing values as a 2-D array: the compact form
// the design measured at ~1.2x the cost of an uncaptured bulk insert. A plain
// VALUES row with an ARRAY(...) subquery, not INSERT ... SELECT array_agg:
// no aggregate, and no sequence or index on the capture table, is the
// cheapest statement that does it (spec/engine.md "Capture" has the figures).
// A statement that changed no row still writes a row with an empty array;
// skipping it would cost every statement a test. Every name is qualified or
// a transition table and no function or operator is named, so the body
// means the same under any search_path (capture/function_settings.h).
std::string FunctionBody(const std::string& schema, const catalog::Source& source,
                         std::string_view event) {
  const std::string capture = sql::Qualified(schema, "capture");
  const std::string id = std::to_string(source.id);
  const std::string routing = RoutingArray(source);
  std::string statement;
  // TG_RELID: the relation the statement named (the source's table, or a
  // partition or child whose own triggers fired), which staging checks is
  // still under the source before it takes the rows as deltas.
  if (event == "truncate") {
    statement =
        "INSERT INTO " + capture + " (source_id, op, relid) VALUES (" + id + ", 'T', TG_RELID);";
  } else {
    std::string rows;
    std::string op;
    if (event == "insert") {
      op = "I";
      rows = "SELECT " + routing + " FROM trellis_new r";
    } else if (event == "delete") {
      op = "D";
      rows = "SELECT " + routing + " FROM trellis_old r";
    } else {
      op = "U";
      rows = "SELECT " + routing + " FROM trellis_old r UNION ALL SELECT " + routing +
             " FROM trellis_new r";
    }
    statement = "INSERT INTO " + capture + " (source_id, op, relid, routing) VALUES (" + id +
                ", '" + op + "', TG_RELID, ARRAY(" + rows + "));";
  }
  return "BEGIN " + statement + " RETURN NULL; END";
}

}  // namespace

std::string DollarQuoted(std::string_view body) {
  // A tag ends the quote wherever "$tag$" first appears after the opening
  // one, including across the body's end ("...$tag" + "$tag$"), so the check
  // is on the body followed by the closing tag.
  std::string tag = "$trellis$";
  for (int n = 1;; ++n) {
    const std::string quoted = std::string(body) + tag;
    if (quoted.find(tag) == body.size()) return tag + quoted;
    tag = "$trellis" + std::to_string(n) + "$";
  }
}

std::string CreateFunctionSql(const std::string& schema, const catalog::Source& source,
                              std::string_view event, bool pinned) {
  return "CREATE OR REPLACE FUNCTION " + QualifiedFunctionName(schema, source.id, event) +
         "() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER" + SetClauses(pinned) + " AS " +
         DollarQuoted(FunctionBody(schema, source, event));
}

Status InstallFunctions(pg::Connection& conn, const std::string& schema,
                        const catalog::Source& source) {
  auto pinned = NeedsPinnedSettings(conn, schema, source.id);
  if (!pinned.ok()) return pinned.status();
  for (const std::string_view event : kEvents) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec(CreateFunctionSql(schema, source, event, pinned.value())));
    TRELLIS_RETURN_IF_ERROR(conn.Exec("REVOKE ALL ON FUNCTION " +
                                      QualifiedFunctionName(schema, source.id, event) +
                                      "() FROM PUBLIC"));
  }
  return Status::OK();
}

Result<int> RepinChangedSources(pg::Connection& conn, const std::string& schema) {
  auto stale = SourcesWithStalePins(conn, schema);
  if (!stale.ok()) return stale.status();
  for (const catalog::Source& source : stale.value()) {
    TRELLIS_RETURN_IF_ERROR(InstallFunctions(conn, schema, source));
  }
  return static_cast<int>(stale->size());
}

Status RemoveFunctions(pg::Connection& conn, const std::string& schema, int source_id) {
  for (const std::string_view event : kEvents) {
    TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP FUNCTION IF EXISTS " +
                                      QualifiedFunctionName(schema, source_id, event) + "()"));
  }
  return Status::OK();
}

}  // namespace trellis::capture
