#include "plan/group_over_join.h"

#include <algorithm>
#include <set>

#include "capture/names.h"
#include "grammar/lexer.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The qualifiers columns of `stmt`'s tables are written with.
std::set<std::string> Qualifiers(const grammar::TransformStmt& stmt) {
  std::set<std::string> out{stmt.source.Qualifier()};
  for (const auto& join : stmt.joins) out.insert(join.table.Qualifier());
  return out;
}

// A column reference found in an expression: the bytes it covers and what
// it names.
struct Found {
  size_t begin = 0;
  size_t end = 0;
  JoinColumnRef ref;
};

// Every `q.c` in `expr` with q one of `qualifiers`. Not one that follows a
// dot (a longer name, `(row).q.c`) or is followed by `(` or another dot (a
// function in schema q, `q.c.d`): those are not columns of the statement's
// tables. Strings, quoted names and comments are the lexer's to tell apart.
std::vector<Found> FindRefs(std::string_view expr, const std::set<std::string>& qualifiers) {
  const std::vector<grammar::Token> tokens = grammar::Tokenize(expr);
  std::vector<Found> out;
  for (size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (!grammar::IsName(tokens[i]) || !qualifiers.count(tokens[i].value)) continue;
    if (!grammar::IsMark(tokens[i + 1], ".") || !grammar::IsName(tokens[i + 2])) continue;
    if (i > 0 && grammar::IsMark(tokens[i - 1], ".")) continue;
    if (i + 3 < tokens.size() &&
        (grammar::IsMark(tokens[i + 3], "(") || grammar::IsMark(tokens[i + 3], "."))) {
      continue;
    }
    out.push_back(Found{tokens[i].begin, tokens[i + 2].end,
                        JoinColumnRef{tokens[i].value, tokens[i + 2].value}});
    i += 2;
  }
  return out;
}

// `expr` with every reference replaced by `alias`."hidden column".
std::string Rewrite(const std::string& expr, const std::set<std::string>& qualifiers,
                    const std::string& alias) {
  std::string out;
  size_t at = 0;
  for (const auto& f : FindRefs(expr, qualifiers)) {
    out.append(expr, at, f.begin - at);
    out += sql::Ident(alias) + "." + sql::Ident(HiddenColumnName(f.ref));
    at = f.end;
  }
  out.append(expr, at, std::string::npos);
  return out;
}

}  // namespace

std::string HiddenColumnName(const JoinColumnRef& ref) {
  std::string name = ref.qualifier + "." + ref.column;
  if (name.size() <= capture::kMaxIdentifierBytes) return name;
  // The NUL keeps ("a.b", "c") and ("a", "b.c") apart in the hash.
  const std::string hash = capture::StableHash(ref.qualifier + std::string(1, '\0') + ref.column);
  const size_t room = capture::kMaxIdentifierBytes - 1 - hash.size();
  return std::string(capture::Utf8Prefix(name, room)) + "~" + hash;
}

std::vector<JoinColumnRef> GroupingColumnRefs(const grammar::TransformStmt& stmt) {
  const std::set<std::string> qualifiers = Qualifiers(stmt);
  std::vector<JoinColumnRef> out;
  auto add = [&](const std::string& expr) {
    for (const auto& f : FindRefs(expr, qualifiers)) {
      if (std::find(out.begin(), out.end(), f.ref) == out.end()) out.push_back(f.ref);
    }
  };
  for (const auto& item : stmt.select) add(item.expr);
  for (const auto& g : stmt.group_by) add(g);
  return out;
}

grammar::SelectItem HiddenJoinItem(const JoinColumnRef& ref) {
  return grammar::SelectItem{
      sql::Ident(ref.qualifier) + "." + sql::Ident(ref.column), HiddenColumnName(ref), 0, {}, {}};
}

grammar::TransformStmt HiddenJoinStatement(const grammar::TransformStmt& stmt,
                                           const grammar::QualifiedName& hidden) {
  grammar::TransformStmt join;
  join.target = hidden;
  join.source = stmt.source;
  join.joins = stmt.joins;
  join.where = stmt.where;
  join.without_source_index = stmt.without_source_index;
  for (const auto& ref : GroupingColumnRefs(stmt)) join.select.push_back(HiddenJoinItem(ref));
  // count(*) alone reads no column: the target still has a row per FROM
  // row, keyed by the FROM key, which a SELECT needs one item to say.
  if (join.select.empty()) {
    join.select.push_back(grammar::SelectItem{"true", "__trellis_row", 0, {}, {}});
  }
  return join;
}

grammar::TransformStmt GroupOverHidden(const grammar::TransformStmt& stmt,
                                       const grammar::QualifiedName& hidden) {
  // A statement with subqueries groups a hidden join too: the one its
  // subqueries' targets are joined in (plan/subquery_stages.h).
  if (stmt.joins.empty() && !stmt.HasSubqueries()) return stmt;
  const std::set<std::string> qualifiers = Qualifiers(stmt);
  const std::string alias = stmt.source.Qualifier();
  grammar::TransformStmt group = stmt;
  group.source = grammar::TableRef{hidden, alias};
  group.joins.clear();
  group.where.reset();
  group.subqueries.clear();
  for (auto& item : group.select) {
    item.expr = Rewrite(item.expr, qualifiers, alias);
    if (item.aggregate && item.aggregate->argument) {
      item.aggregate->argument = Rewrite(*item.aggregate->argument, qualifiers, alias);
    }
  }
  for (auto& g : group.group_by) g = Rewrite(g, qualifiers, alias);
  return group;
}

std::string DefinitionOverJoinSql(const grammar::TransformStmt& stmt,
                                  const std::vector<std::string>& columns,
                                  std::string_view whole_table_key) {
  auto table = [](const grammar::TableRef& ref) {
    std::string out = ref.table.schema ? sql::Ident(*ref.table.schema) + "." : "";
    return out + sql::Ident(ref.table.name) + " AS " + sql::Ident(ref.Qualifier());
  };
  std::string from = table(stmt.source);
  for (const auto& join : stmt.joins) {
    std::vector<std::string> on;
    for (const auto& [to_column, column] : join.on) {
      on.push_back(sql::Ident(join.to) + "." + sql::Ident(to_column) + " = " +
                   sql::Ident(join.table.Qualifier()) + "." + sql::Ident(column));
    }
    from += grammar::JoinKeyword(join.kind) + table(join.table) + " ON " + sql::Join(on, " AND ");
  }
  std::vector<std::string> select;
  std::vector<std::string> keys;  // for a SELECT DISTINCT: every item
  for (const auto& name : columns) {
    std::string expr = name == whole_table_key ? "true" : "NULL";
    for (const auto& item : stmt.select) {
      if (item.alias == name) expr = "(" + item.expr + ")";
    }
    select.push_back(expr + " AS " + sql::Ident(name));
  }
  for (const auto& item : stmt.select) keys.push_back("(" + item.expr + ")");
  std::vector<std::string> grouping;
  for (const auto& g : stmt.group_by) grouping.push_back("(" + g + ")");
  if (stmt.distinct) grouping = keys;
  return "SELECT " + sql::Join(select, ", ") + " FROM " + from +
         (stmt.where ? " WHERE (" + *stmt.where + ")" : std::string()) +
         (grouping.empty() ? std::string() : " GROUP BY " + sql::Join(grouping, ", "));
}

}  // namespace trellis::plan
