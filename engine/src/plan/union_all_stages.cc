#include "plan/union_all_stages.h"

#include "grammar/quote.h"

namespace trellis::plan {
namespace {

// Branch `b`'s hidden projection or join: the branch as written, and its
// rows' name across the branches.
grammar::TransformStmt BranchStage(const grammar::TransformStmt& stmt, std::size_t b,
                                   const grammar::QualifiedName& hidden,
                                   const std::vector<std::string>& key, const std::string& row) {
  grammar::TransformStmt stage = UnionBranch(stmt, b);
  stage.union_all.clear();
  stage.target = hidden;
  stage.without_source_index = stmt.without_source_index;
  stage.without_row_security = stmt.without_row_security;
  stage.readers.clear();
  std::string columns;
  for (const auto& k : key) columns += (columns.empty() ? "" : ", ") + k;
  const std::size_t position = stage.select.empty() ? 0 : stage.select.front().position;
  stage.select.push_back(grammar::SelectItem{
      "'" + std::to_string(b + 1) + ":' || (ROW(" + columns + "))::text", row, position, {}, {}});
  return stage;
}

// The stack of `left` and `right` into `target`: a FULL JOIN on the row
// column, which never matches, each column read from the side holding the
// row; `keep_row` carries the row column on for the next stack.
grammar::TransformStmt Stack(const grammar::TransformStmt& stmt, const grammar::QualifiedName& left,
                             const grammar::QualifiedName& right,
                             const grammar::QualifiedName& target, const std::string& row,
                             bool keep_row) {
  grammar::TransformStmt stack;
  stack.target = target;
  const std::string l(kUnionLeftAlias);
  const std::string r(kUnionRightAlias);
  stack.source = grammar::TableRef{left, l};
  stack.joins.push_back(
      grammar::JoinClause{grammar::JoinKind::kFull, grammar::TableRef{right, r}, l, {{row, row}}});
  const std::string lrow = l + "." + grammar::QuoteIdent(row);
  const std::string rrow = r + "." + grammar::QuoteIdent(row);
  for (const auto& item : stmt.select) {
    const std::string column = grammar::QuoteIdent(item.alias);
    stack.select.push_back(grammar::SelectItem{"CASE WHEN " + lrow + " IS NOT NULL THEN " + l +
                                                   "." + column + " ELSE " + r + "." + column +
                                                   " END",
                                               item.alias,
                                               item.position,
                                               {},
                                               {}});
  }
  if (keep_row) {
    stack.select.push_back(
        grammar::SelectItem{"coalesce(" + lrow + ", " + rrow + ")", row, 0, {}, {}});
  }
  stack.without_source_index = stmt.without_source_index;
  stack.without_row_security = stmt.without_row_security;
  return stack;
}

}  // namespace

std::string UnionRowColumn(const grammar::TransformStmt& stmt) {
  std::string name = "trellis_u";
  while (true) {
    bool taken = false;
    for (std::size_t b = 0; b < UnionBranchCount(stmt) && !taken; ++b) {
      for (const auto& item : UnionBranch(stmt, b).select) {
        if (item.alias.rfind(name, 0) == 0) taken = true;
      }
    }
    if (!taken) return name;
    name += "_";
  }
}

std::size_t UnionBranchCount(const grammar::TransformStmt& stmt) {
  return 1 + stmt.union_all.size();
}

const grammar::TransformStmt& UnionBranch(const grammar::TransformStmt& stmt, std::size_t b) {
  return b == 0 ? stmt : stmt.union_all[b - 1];
}

std::size_t UnionPartsNeeded(const grammar::TransformStmt& stmt) {
  const std::size_t n = UnionBranchCount(stmt);
  return n + (n - 2);
}

Result<UnionAllStages> CompileUnionAllStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden,
                                             const std::vector<std::vector<std::string>>& keys) {
  const std::size_t n = UnionBranchCount(stmt);
  if (n < 2 || hidden.size() != UnionPartsNeeded(stmt) || keys.size() != n) {
    return Status::Internal("CompileUnionAllStages: " + std::to_string(n) + " branches, " +
                            std::to_string(hidden.size()) + " hidden names, " +
                            std::to_string(keys.size()) + " keys");
  }
  const std::string row = UnionRowColumn(stmt);
  UnionAllStages out;
  for (std::size_t b = 0; b < n; ++b) {
    if (keys[b].empty()) {
      return Status::Internal("CompileUnionAllStages: branch " + std::to_string(b + 1) +
                              " has no key");
    }
    out.branches.push_back(BranchStage(stmt, b, hidden[b], keys[b], row));
  }
  // Stack k (from 1) joins stack k-1 (branch 0 for k = 1) with branch k.
  for (std::size_t k = 1; k < n; ++k) {
    const grammar::QualifiedName& left = k == 1 ? hidden[0] : hidden[n + k - 2];
    const bool last = k == n - 1;
    grammar::TransformStmt stack =
        Stack(stmt, left, hidden[k], last ? stmt.target : hidden[n + k - 1], row, !last);
    if (last) {
      stack.readers = stmt.readers;
      out.owner = std::move(stack);
    } else {
      out.stacks.push_back(std::move(stack));
    }
  }
  return out;
}

}  // namespace trellis::plan
