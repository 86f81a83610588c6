#include "capture/triggers.h"

#include <cctype>
#include <optional>

#include "capture/names.h"
#include "sql/quote.h"

namespace trellis::capture {
namespace {

std::string Referencing(std::string_view event) {
  if (event == "insert") return " REFERENCING NEW TABLE AS trellis_new";
  if (event == "delete") return " REFERENCING OLD TABLE AS trellis_old";
  if (event == "update") return " REFERENCING OLD TABLE AS trellis_old NEW TABLE AS trellis_new";
  return "";
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The table's current qualified, quoted name; nullopt when it is gone.
Result<std::optional<std::string>> CurrentName(pg::Connection& conn, const std::string& relid) {
  auto rows = conn.Query(R"sql(
SELECT format('%I.%I', n.nspname, c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = $1::oid)sql",
                         {relid});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows->text(0, 0));
}

// Drops every trigger of the catalog in `schema` on `table` (quoted): the
// four under the names made now, and any other calling one of the
// catalog's capture functions, such as a trigger made under a name
// PostgreSQL cut short (before capture/names.h), which would otherwise
// outlive its source and keep its function from being dropped.
Status DropOurs(pg::Connection& conn, const std::string& schema, const std::string& relid,
                const std::string& table) {
  auto stale = conn.Query(R"sql(
SELECT t.tgname FROM pg_trigger t
JOIN pg_proc p ON p.oid = t.tgfoid
WHERE t.tgrelid = $1::oid AND p.pronamespace = to_regnamespace($2)
  AND p.proname ~ '^capture_[0-9]+_(insert|update|delete|truncate)$')sql",
                          {relid, sql::Ident(schema)});
  if (!stale.ok()) return stale.status();
  std::vector<std::string> names;
  for (const char* event : kEvents) names.push_back(TriggerName(schema, event));
  for (size_t r = 0; r < stale->size(); ++r) names.push_back(stale->text(r, 0));
  for (const auto& name : names) {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("DROP TRIGGER IF EXISTS " + sql::Ident(name) + " ON " + table));
  }
  return Status::OK();
}

}  // namespace

Status InstallTriggers(pg::Connection& conn, const std::string& schema, int source_id,
                       const std::string& relid) {
  auto table = CurrentName(conn, relid);
  if (!table.ok()) return table.status();
  if (!table.value()) return Status::NotFound("the table to capture no longer exists");
  TRELLIS_RETURN_IF_ERROR(DropOurs(conn, schema, relid, **table));
  for (const std::string_view event : kEvents) {
    const std::string trigger = sql::Ident(TriggerName(schema, event));
    const std::string on = " ON " + **table;
    TRELLIS_RETURN_IF_ERROR(conn.Exec("CREATE TRIGGER " + trigger + " AFTER " + Upper(event) + on +
                                      Referencing(event) + " FOR EACH STATEMENT EXECUTE FUNCTION " +
                                      QualifiedFunctionName(schema, source_id, event) + "()"));
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("ALTER TABLE " + **table + " ENABLE ALWAYS TRIGGER " + trigger));
  }
  return Status::OK();
}

Status RemoveTriggers(pg::Connection& conn, const std::string& schema, const std::string& relid) {
  auto table = CurrentName(conn, relid);
  if (!table.ok()) return table.status();
  if (!table.value()) return Status::OK();
  return DropOurs(conn, schema, relid, **table);
}

}  // namespace trellis::capture
