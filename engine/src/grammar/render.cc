#include "grammar/render.h"

#include "grammar/keywords.h"
#include "grammar/quote.h"

namespace trellis::grammar {
namespace {

bool IsPlainLowerIdentifier(std::string_view name) {
  if (name.empty()) return false;
  const char first = name.front();
  if (!((first >= 'a' && first <= 'z') || first == '_')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '$')) return false;
  }
  return true;
}

std::string RenderTableRef(const TableRef& ref) {
  std::string text = RenderQualified(ref.table);
  if (ref.alias) text += " AS " + RenderName(*ref.alias);
  return text;
}

std::string RenderJoin(const JoinClause& join) {
  std::string text = JoinKeyword(join.kind) + RenderTableRef(join.table) + " ON ";
  const std::string from_qualifier = RenderName(join.to);
  const std::string join_qualifier = RenderName(join.table.Qualifier());
  for (std::size_t i = 0; i < join.on.size(); ++i) {
    if (i > 0) text += " AND ";
    text += from_qualifier + "." + RenderName(join.on[i].first) + " = " + join_qualifier + "." +
            RenderName(join.on[i].second);
  }
  return text;
}

}  // namespace

std::string RenderName(std::string_view name) {
  if (IsPlainLowerIdentifier(name) && !IsKeyword(name)) return std::string(name);
  return QuoteIdent(name);
}

std::string RenderQualified(const QualifiedName& name) {
  if (!name.schema) return RenderName(name.name);
  return RenderName(*name.schema) + "." + RenderName(name.name);
}

std::string Render(const TransformStmt& statement) {
  std::string text = "TRANSFORM " + RenderQualified(statement.target);
  for (std::size_t k = 0; k < statement.with.size(); ++k) {
    text += k == 0 ? " WITH " : ", ";
    text += RenderName(statement.with[k].target.name) + " AS (";
    RenderInnerQuery(statement.with[k], text);
    text += ")";
  }
  RenderQuery(statement, text);
  for (const auto& branch : statement.union_all) {
    text += " UNION ALL";
    RenderQuery(branch, text);
  }
  if (statement.without_source_index) text += " WITHOUT SOURCE INDEX";
  if (statement.without_row_security) text += " WITHOUT ROW SECURITY";
  for (std::size_t i = 0; i < statement.readers.size(); ++i) {
    text += i == 0 ? " GRANT SELECT TO " : ", ";
    text += RenderName(statement.readers[i]);
  }
  return text;
}

void RenderInnerQuery(const TransformStmt& query, std::string& text) {
  const std::size_t at = text.size();
  RenderQuery(query, text);
  text.erase(at, 1);  // the space before FROM
}

void RenderQuery(const TransformStmt& statement, std::string& text) {
  if (!statement.derived.empty()) {
    text += " FROM (";
    RenderInnerQuery(statement.derived.front(), text);
    text += ") AS " + RenderName(statement.source.Qualifier());
  } else {
    text += " FROM " + RenderTableRef(statement.source);
  }
  for (const auto& join : statement.joins) text += RenderJoin(join);
  // Appended piece by piece, never as `" WHERE " + where`: an expression
  // may be a megabyte, and a temporary copy of it counts in the port's peak
  // memory at define (bench/README.md, "Memory of a large statement").
  std::size_t expressions = statement.where ? statement.where->size() : 0;
  for (const auto& item : statement.select) expressions += item.expr.size();
  for (const auto& g : statement.group_by) expressions += g.size();
  if (statement.having) expressions += statement.having->size();
  text.reserve(text.size() + expressions + 64 * (statement.select.size() + 4));
  text += statement.distinct ? " SELECT DISTINCT " : " SELECT ";
  if (!statement.distinct_on.empty()) {
    text += "DISTINCT ON (";
    for (std::size_t i = 0; i < statement.distinct_on.size(); ++i) {
      if (i > 0) text += ", ";
      text += statement.distinct_on[i];
    }
    text += ") ";
  }
  for (std::size_t i = 0; i < statement.select.size(); ++i) {
    if (i > 0) text += ", ";
    text += statement.select[i].expr;
    text += " AS " + RenderName(statement.select[i].alias);
  }
  if (statement.where) {
    text += " WHERE ";
    text += *statement.where;
  }
  if (!statement.group_by.empty()) {
    text += " GROUP BY ";
    for (std::size_t i = 0; i < statement.group_by.size(); ++i) {
      if (i > 0) text += ", ";
      text += statement.group_by[i];
    }
  }
  if (statement.having) {
    text += " HAVING ";
    text += *statement.having;
  }
  for (std::size_t i = 0; i < statement.order_by.size(); ++i) {
    text += i == 0 ? " ORDER BY " : ", ";
    text += statement.order_by[i];
  }
}

}  // namespace trellis::grammar
