#include "plan/derived_stages.h"

#include "grammar/derived.h"
#include "grammar/render.h"
#include "grammar/subquery.h"

namespace trellis::plan {
namespace {

// Every table of `query` naming one of the first `visible` WITH queries of
// `stmt` reads its hidden target instead, under the name it is read by.
void ReadHidden(const grammar::TransformStmt& stmt, grammar::TransformStmt& query,
                std::size_t visible, const std::vector<grammar::QualifiedName>& hidden) {
  grammar::ForEachTableRead(query, visible, [&](grammar::TableRef& ref, std::size_t seen) {
    auto k = grammar::WithQueryNamed(stmt, ref.table, seen);
    if (!k) return;
    ref.alias = ref.Qualifier();
    ref.table = hidden[*k];
  });
}

}  // namespace

std::size_t DerivedPartsNeeded(const grammar::TransformStmt& stmt) {
  std::size_t bodies = 0;
  for (const auto& sq : stmt.subqueries) bodies += sq.body.size();
  return stmt.with.size() + stmt.derived.size() + bodies;
}

DerivedStages CompileDerivedStages(const grammar::TransformStmt& stmt,
                                   const std::vector<grammar::QualifiedName>& hidden) {
  DerivedStages out;
  const std::size_t w = stmt.with.size();
  auto add = [&](const grammar::TransformStmt& query, std::size_t visible, std::string words) {
    grammar::TransformStmt q = query;
    ReadHidden(stmt, q, visible, hidden);
    q.target = hidden[out.queries.size()];
    q.without_source_index = stmt.without_source_index;
    q.without_row_security = stmt.without_row_security;
    out.queries.push_back(std::move(q));
    out.words.push_back(std::move(words));
  };
  for (std::size_t k = 0; k < w; ++k) {
    add(stmt.with[k], k, "the WITH query " + grammar::RenderWithName(stmt.with[k]));
  }
  for (const auto& d : stmt.derived) {
    add(d, w, "the query in FROM (AS " + grammar::RenderName(d.target.name) + ")");
  }
  out.owner = stmt;
  out.owner.with.clear();
  out.owner.derived.clear();
  if (!stmt.derived.empty()) {
    out.owner.source = grammar::TableRef{hidden[w], stmt.source.Qualifier()};
  }
  // A subquery's own query after them (it sees every WITH query); the
  // subquery then reads its hidden target, under the alias its rewritten
  // text names (grammar::kSubqueryBodyAlias).
  for (auto& sq : out.owner.subqueries) {
    if (sq.body.empty()) continue;
    const std::size_t k = out.queries.size();
    add(sq.body.front(), w, grammar::SubqueryWords(sq));
    sq.from.table = hidden[k];
    sq.body.clear();
  }
  ReadHidden(stmt, out.owner, w, hidden);
  return out;
}

}  // namespace trellis::plan
