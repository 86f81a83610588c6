#include "statements/expression_check.h"

#include <regex>
#include <set>

#include "sql/quote.h"

namespace trellis::statements {
namespace {

constexpr const char* kCheckView = "trellis_definition_check";

// Collects the numbers that follow `field` in a node tree's text form.
std::set<std::string> NodeFieldValues(const std::string& tree, const std::string& field) {
  std::set<std::string> out;
  std::regex re(":" + field + " (\\d+)");
  for (auto it = std::sregex_iterator(tree.begin(), tree.end(), re); it != std::sregex_iterator();
       ++it) {
    if ((*it)[1] != "0") out.insert((*it)[1]);
  }
  return out;
}

std::string OidArray(const std::set<std::string>& oids) {
  return sql::ArrayLiteral(std::vector<std::string>(oids.begin(), oids.end()));
}

}  // namespace

Status DefinitionError(const std::string& transform_name, const Status& db_error) {
  if (db_error.code() != Code::kDatabase) return db_error;
  Status out = Status::Validation("transform " + sql::Ident(transform_name) +
                                  " is not valid: " + db_error.message());
  out.sqlstate = db_error.sqlstate;
  out.detail = db_error.detail;
  out.hint = db_error.hint;
  return out;
}

Result<std::vector<std::string>> CheckExpressions(pg::Connection& conn,
                                                  const std::string& transform_name,
                                                  const std::string& source_from,
                                                  const std::vector<std::string>& select_exprs,
                                                  const std::optional<std::string>& where) {
  std::vector<std::string> items;
  for (size_t i = 0; i < select_exprs.size(); ++i) {
    items.push_back("(" + select_exprs[i] + ") AS c" + std::to_string(i));
  }
  if (where) items.push_back("((" + *where + ")::boolean) AS w");
  if (items.empty()) items.push_back("1");
  // Savepoint: a refused expression must not abort the caller's transaction
  // before it can report the error.
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_check"));
  Status created = conn.Exec("CREATE TEMPORARY VIEW " + std::string(kCheckView) + " AS SELECT " +
                             sql::Join(items, ", ") + " FROM " + source_from);
  if (!created.ok()) {
    (void)conn.Exec("ROLLBACK TO SAVEPOINT trellis_check");
    return DefinitionError(transform_name, created);
  }
  auto tree = conn.Query("SELECT ev_action::text FROM pg_rewrite WHERE ev_class = $1::regclass",
                         {std::string("pg_temp.") + kCheckView});
  if (!tree.ok()) return tree.status();
  const std::string text = tree->text(0, 0);
  auto types = conn.Query(
      "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass "
      "AND attnum > 0 AND attname LIKE 'c%' ORDER BY attnum",
      {std::string("pg_temp.") + kCheckView});
  if (!types.ok()) return types.status();
  std::vector<std::string> column_types;
  for (size_t r = 0; r < types->size(); ++r) column_types.push_back(types->text(r, 0));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP VIEW pg_temp." + std::string(kCheckView)));
  TRELLIS_RETURN_IF_ERROR(conn.Exec("RELEASE SAVEPOINT trellis_check"));

  const std::string prefix = "transform " + sql::Ident(transform_name) + " is not valid: ";
  if (text.find("{SUBLINK") != std::string::npos) {
    return Status::Validation(prefix +
                              "subqueries are not allowed in a transform's expressions; "
                              "use JOIN for another table's columns");
  }
  if (!NodeFieldValues(text, "aggfnoid").empty()) {
    return Status::Validation(prefix +
                              "aggregate functions need GROUP BY; a projection computes one "
                              "target row per source row");
  }
  if (!NodeFieldValues(text, "winfnoid").empty()) {
    return Status::Validation(prefix + "window functions are not allowed in a transform");
  }
  std::set<std::string> functions = NodeFieldValues(text, "funcid");
  for (const auto& f : NodeFieldValues(text, "opfuncid")) functions.insert(f);
  std::set<std::string> operators = NodeFieldValues(text, "opno");
  auto volatile_names = conn.Query(
      "SELECT DISTINCT p.oid::regprocedure::text FROM pg_proc p "
      "WHERE p.provolatile = 'v' AND (p.oid = ANY($1::oid[]) OR p.oid IN "
      "(SELECT o.oprcode FROM pg_operator o WHERE o.oid = ANY($2::oid[]))) ORDER BY 1",
      {OidArray(functions), OidArray(operators)});
  if (!volatile_names.ok()) return volatile_names.status();
  if (!volatile_names->empty()) {
    std::vector<std::string> names;
    for (size_t r = 0; r < volatile_names->size(); ++r) names.push_back(volatile_names->text(r, 0));
    return Status::Validation(prefix + "it calls the volatile function " + sql::Join(names, ", ") +
                              ", whose result changes from one call to the next; a target must "
                              "be a function of its source rows");
  }
  return column_types;
}

}  // namespace trellis::statements
