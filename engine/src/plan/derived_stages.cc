#include "plan/derived_stages.h"

#include "grammar/derived.h"
#include "grammar/render.h"

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
  return stmt.with.size() + stmt.derived.size();
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
  ReadHidden(stmt, out.owner, w, hidden);
  return out;
}

}  // namespace trellis::plan
