#include "plan/aggregates/group_check.h"

#include <map>
#include <regex>
#include <set>

#include "grammar/recomputed_aggregate.h"
#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

constexpr const char* kView = "trellis_group_check";

// Numbers after ":field " in a node tree's text, in order.
std::vector<std::string> Fields(const std::string& tree, const std::string& field) {
  std::vector<std::string> out;
  const std::regex re(":" + field + " (\\d+)");
  for (auto it = std::sregex_iterator(tree.begin(), tree.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// Creates the temporary view `query` under a savepoint; a query PostgreSQL
// refuses is a refusal of the transform, and leaves the transaction usable.
Status CreateView(pg::Connection& conn, const std::string& transform, const std::string& query) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("SAVEPOINT trellis_group_check"));
  Status created = conn.Exec("CREATE TEMPORARY VIEW " + std::string(kView) + " AS " + query);
  if (created.ok()) return Status::OK();
  (void)conn.Exec("ROLLBACK TO SAVEPOINT trellis_group_check");
  if (created.code() != Code::kDatabase) return created;
  Status refused = Refusal(transform, created.message());
  refused.sqlstate = created.sqlstate;
  refused.detail = created.detail;
  refused.hint = created.hint;
  return refused;
}

Status DropView(pg::Connection& conn) {
  TRELLIS_RETURN_IF_ERROR(conn.Exec("DROP VIEW pg_temp." + std::string(kView)));
  return conn.Exec("RELEASE SAVEPOINT trellis_group_check");
}

}  // namespace

Status Refusal(const std::string& transform, const std::string& what) {
  return Status::Validation("transform " + sql::Ident(transform) + " is not valid: " + what);
}

Status CheckGroupedQuery(pg::Connection& conn, const grammar::TransformStmt& stmt,
                         const std::string& from) {
  const std::string& name = stmt.target.name;
  std::vector<std::string> items;
  for (size_t i = 0; i < stmt.select.size(); ++i) {
    items.push_back("(" + stmt.select[i].expr + ") AS c" + std::to_string(i));
  }
  std::string query = "SELECT " + sql::Join(items, ", ") + " FROM " + from;
  if (stmt.where) query += " WHERE (" + *stmt.where + ")";
  if (!stmt.group_by.empty()) {
    std::vector<std::string> groups;
    for (const auto& g : stmt.group_by) groups.push_back("(" + g + ")");
    query += " GROUP BY " + sql::Join(groups, ", ");
  }
  if (stmt.having) query += " HAVING (" + *stmt.having + ")";
  TRELLIS_RETURN_IF_ERROR(CreateView(conn, name, query));
  auto described =
      conn.Query("SELECT ev_action::text FROM pg_rewrite WHERE ev_class = $1::regclass",
                 {std::string("pg_temp.") + kView});
  if (!described.ok()) return described.status();
  const std::string tree = described->text(0, 0);
  TRELLIS_RETURN_IF_ERROR(DropView(conn));

  // Every aggregate must be PostgreSQL's own: a function of another schema
  // with the same name (found for an argument type pg_catalog has no such
  // aggregate for) has rules Trellis does not know.
  auto foreign = conn.Query(
      "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.oid = ANY($1::oid[]) "
      "AND p.pronamespace <> 'pg_catalog'::regnamespace ORDER BY 1",
      {sql::ArrayLiteral(Fields(tree, "aggfnoid"))});
  if (!foreign.ok()) return foreign.status();
  if (!foreign->empty()) {
    return Refusal(name, "the aggregate " + foreign->text(0, 0) +
                             " is not one of PostgreSQL's built-in aggregates, which are the ones "
                             "Trellis maintains; cast its argument to a type pg_catalog's "
                             "count/sum/avg/min/max/bool_and/bool_or accept");
  }

  // The target list: one entry per item, then a hidden (resjunk) entry per
  // GROUP BY expression that is not an item; each carries its GROUP BY
  // reference (0 for none).
  const std::regex entry(
      ":resno (\\d+) :resname \\S+ :ressortgroupref (\\d+) :resorigtbl \\d+ :resorigcol \\d+ "
      ":resjunk (true|false)");
  std::map<std::string, size_t> item_of_ref;
  std::set<size_t> grouped_items;
  for (auto it = std::sregex_iterator(tree.begin(), tree.end(), entry);
       it != std::sregex_iterator(); ++it) {
    const std::string ref = (*it)[2];
    if (ref == "0" || (*it)[3] == "true") continue;
    item_of_ref[ref] = std::stoul((*it)[1]) - 1;
    grouped_items.insert(std::stoul((*it)[1]) - 1);
  }
  const std::vector<std::string> group_refs = Fields(tree, "tleSortGroupRef");
  for (size_t g = 0; g < group_refs.size() && g < stmt.group_by.size(); ++g) {
    if (!item_of_ref.count(group_refs[g])) {
      return Refusal(name, "the GROUP BY expression " + stmt.group_by[g] +
                               " is not a column of the target; add it to the SELECT list (" +
                               stmt.group_by[g] + " AS <name>), so that each row names its group");
    }
  }
  for (size_t i = 0; i < stmt.select.size() && !stmt.distinct; ++i) {
    const auto& item = stmt.select[i];
    if (item.aggregate_uses.empty() && !grouped_items.count(i)) {
      return Refusal(name, "the column " + sql::Ident(item.alias) +
                               " is neither an aggregate Trellis maintains (count, sum, avg, min, "
                               "max, bool_and, bool_or, or one kept by recompute such as "
                               "string_agg) nor a GROUP BY expression; group by it, "
                               "or compute it over this transform's target in another one");
    }
  }
  // Every aggregate PostgreSQL found is one Trellis maintains: an
  // expression over aggregates may hold another (string_agg) beside them,
  // which the grammar does not read as an aggregate.
  std::vector<std::string> recomputed;
  for (std::string_view n : grammar::RecomputedAggregateNames()) recomputed.emplace_back(n);
  std::vector<std::string> maintained = {"count", "sum",      "avg",     "min",
                                         "max",   "bool_and", "bool_or", "every"};
  maintained.insert(maintained.end(), recomputed.begin(), recomputed.end());
  auto unknown = conn.Query(
      "SELECT p.proname::text FROM pg_proc p WHERE p.oid = ANY($1::oid[]) AND p.proname <> ALL "
      "($2::text[]) ORDER BY 1 LIMIT 1",
      {sql::ArrayLiteral(Fields(tree, "aggfnoid")), sql::ArrayLiteral(maintained)});
  if (!unknown.ok()) return unknown.status();
  if (!unknown->empty()) {
    return Refusal(name, "the aggregate " + unknown->text(0, 0) +
                             " is not one Trellis maintains (count, sum, avg, min, max, "
                             "bool_and or every, bool_or, and those kept by recompute: " +
                             sql::Join(recomputed, ", ") +
                             "); compute it when you read the target");
  }
  return Status::OK();
}

Result<std::string> AggregateType(pg::Connection& conn, const std::string& transform,
                                  const std::string& from, const std::string& expr) {
  TRELLIS_RETURN_IF_ERROR(CreateView(conn, transform, "SELECT (" + expr + ") AS c FROM " + from));
  auto type = conn.Query(
      "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass "
      "AND attname = 'c'",
      {std::string("pg_temp.") + kView});
  if (!type.ok()) return type.status();
  TRELLIS_RETURN_IF_ERROR(DropView(conn));
  return type->text(0, 0);
}

Result<std::vector<std::string>> ColumnsRead(pg::Connection& conn, const std::string& table,
                                             const std::string& from,
                                             const std::vector<std::string>& exprs) {
  std::vector<std::string> items;
  for (size_t i = 0; i < exprs.size(); ++i) {
    items.push_back("(" + exprs[i] + ") AS c" + std::to_string(i));
  }
  TRELLIS_RETURN_IF_ERROR(
      CreateView(conn, "", "SELECT " + sql::Join(items, ", ") + " FROM " + from));
  auto columns = conn.Query(R"sql(
SELECT a.attname FROM pg_depend d
JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
WHERE r.ev_class = $1::regclass AND d.refobjid = $2::regclass AND d.refobjsubid > 0
GROUP BY a.attnum, a.attname ORDER BY a.attnum)sql",
                            {std::string("pg_temp.") + kView, table});
  if (!columns.ok()) return columns.status();
  TRELLIS_RETURN_IF_ERROR(DropView(conn));
  std::vector<std::string> out;
  for (size_t r = 0; r < columns->size(); ++r) out.push_back(columns->text(r, 0));
  return out;
}

}  // namespace trellis::plan::aggregates
