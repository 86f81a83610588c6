#include "capture/triggers.h"

#include "sql/quote.h"

namespace trellis::capture {
namespace {

std::string FunctionName(const std::string& schema, int source_id, const std::string& event) {
  return sql::Qualified(schema, "capture_" + std::to_string(source_id) + "_" + event);
}

// ARRAY[r."a"::text, r."b"::text]: one row version's routing values.
std::string RoutingArray(const catalog::Source& source) {
  std::vector<std::string> parts;
  for (const auto& column : source.routing_columns) {
    parts.push_back("r." + sql::Ident(column) + "::text");
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
// skipping it would cost every statement a test.
std::string FunctionBody(const std::string& schema, const catalog::Source& source,
                         const std::string& event) {
  const std::string capture = sql::Ident(schema) + ".capture";
  const std::string id = std::to_string(source.id);
  const std::string routing = RoutingArray(source);
  if (event == "truncate") {
    return "INSERT INTO " + capture + " (source_id, op) VALUES (" + id + ", 'T');";
  }
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
  return "INSERT INTO " + capture + " (source_id, op, routing) VALUES (" + id + ", '" + op +
         "', ARRAY(" + rows + "));";
}

std::string Referencing(const std::string& event) {
  if (event == "insert") return " REFERENCING NEW TABLE AS trellis_new";
  if (event == "delete") return " REFERENCING OLD TABLE AS trellis_old";
  if (event == "update") return " REFERENCING OLD TABLE AS trellis_old NEW TABLE AS trellis_new";
  return "";
}

}  // namespace

std::string TriggerName(const std::string& schema, const std::string& event) {
  return "trellis_" + schema + "_capture_" + event;
}

Status Install(pg::Connection& conn, const std::string& schema, const catalog::Source& source) {
  const std::string table = sql::Qualified(source.schema_name, source.table_name);
  for (const std::string event : kEvents) {
    const std::string function = FunctionName(schema, source.id, event);
    TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE OR REPLACE FUNCTION " + function +
                                      "() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN " +
                                      FunctionBody(schema, source, event) +
                                      " RETURN NULL; END $trellis$"));
    const std::string trigger = sql::Ident(TriggerName(schema, event));
    TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP TRIGGER IF EXISTS " + trigger + " ON " + table));
    std::string upper = event;
    for (auto& c : upper) c = static_cast<char>(std::toupper(c));
    TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE TRIGGER " + trigger + " AFTER " + upper + " ON " +
                                      table + Referencing(event) +
                                      " FOR EACH STATEMENT EXECUTE FUNCTION " + function + "()"));
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("ALTER TABLE " + table + " ENABLE ALWAYS TRIGGER " + trigger));
  }
  return Status::OK();
}

Status Remove(pg::Connection& conn, const std::string& schema, const catalog::Source& source) {
  const std::string table = sql::Qualified(source.schema_name, source.table_name);
  for (const std::string event : kEvents) {
    // The table may be gone already; the functions are ours and always exist.
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        "DO $trellis$ BEGIN IF to_regclass(" + sql::Literal(table) + ") IS NOT NULL THEN EXECUTE " +
        sql::Literal("DROP TRIGGER IF EXISTS " + sql::Ident(TriggerName(schema, event)) + " ON " +
                     table) +
        "; END IF; END $trellis$"));
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("DROP FUNCTION IF EXISTS " + FunctionName(schema, source.id, event) + "()"));
  }
  return Status::OK();
}

}  // namespace trellis::capture
