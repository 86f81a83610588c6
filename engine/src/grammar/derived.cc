#include "grammar/derived.h"

#include "grammar/render.h"

namespace trellis::grammar {

std::optional<std::size_t> WithQueryNamed(const TransformStmt& stmt, const QualifiedName& table,
                                          std::size_t visible) {
  if (table.schema) return std::nullopt;
  for (std::size_t k = 0; k < visible && k < stmt.with.size(); ++k) {
    if (stmt.with[k].target.name == table.name) return k;
  }
  return std::nullopt;
}

void ForEachTableRead(TransformStmt& query, std::size_t visible,
                      const std::function<void(TableRef&, std::size_t)>& visit) {
  if (query.derived.empty()) visit(query.source, visible);
  for (auto& join : query.joins) visit(join.table, visible);
  for (auto& sq : query.subqueries) {
    // A subquery with a query of its own reads that query's tables.
    if (sq.body.empty()) {
      visit(sq.from, visible);
    } else {
      ForEachTableRead(sq.body.front(), visible, visit);
    }
  }
  for (auto& branch : query.union_all) ForEachTableRead(branch, visible, visit);
}

std::vector<std::size_t> WithReadCounts(const TransformStmt& stmt) {
  std::vector<std::size_t> reads(stmt.with.size(), 0);
  auto count = [&](TableRef& ref, std::size_t visible) {
    if (auto k = WithQueryNamed(stmt, ref.table, visible)) ++reads[*k];
  };
  // Copies: the visit takes references it may rewrite.
  TransformStmt outer = stmt;
  for (std::size_t k = 0; k < outer.with.size(); ++k) ForEachTableRead(outer.with[k], k, count);
  for (auto& d : outer.derived) ForEachTableRead(d, outer.with.size(), count);
  ForEachTableRead(outer, outer.with.size(), count);
  return reads;
}

std::string RenderWithName(const TransformStmt& query) { return RenderName(query.target.name); }

}  // namespace trellis::grammar
