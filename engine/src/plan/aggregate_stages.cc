#include "plan/aggregate_stages.h"

#include <algorithm>
#include <map>

#include "grammar/aggregate.h"
#include "plan/grouped_rewrite.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// The number of `call`'s hidden column, numbering a new call next.
std::size_t IdOf(std::map<std::string, std::size_t>& ids, const grammar::AggregateCall& call) {
  return ids.emplace(CallText(call), ids.size() + 1).first->second;
}

}  // namespace

std::string AggregateColumnName(std::size_t k) { return "__trellis_a" + std::to_string(k); }

bool IsAggregateColumnName(std::string_view name) {
  constexpr std::string_view prefix = "__trellis_a";
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  return std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

Result<AggregateStages> CompileAggregateStages(const grammar::TransformStmt& stmt,
                                               const grammar::QualifiedName& hidden) {
  AggregateStages out;
  std::map<std::string, std::size_t> ids;  // a call's text -> its column number
  const CallSql hidden_column = [&](const grammar::AggregateCall& call) {
    return sql::Ident(kHiddenGroupAlias) + "." + sql::Ident(AggregateColumnName(IdOf(ids, call)));
  };
  auto rewrite = [&](const std::string& expr, const std::vector<grammar::AggregateUse>& uses,
                     const std::string& what) {
    return RewriteOverGroups(stmt, kHiddenGroupAlias, expr, uses, what, hidden_column);
  };

  grammar::TransformStmt& owner = out.owner;
  owner.target = stmt.target;
  owner.source = grammar::TableRef{hidden, std::string(kHiddenGroupAlias)};
  owner.readers = stmt.readers;
  for (const auto& item : stmt.select) {
    grammar::SelectItem column{"", item.alias, item.position, {}, {}};
    if (item.aggregate_uses.empty()) {
      // A GROUP BY item: the hidden column of its own name, which the
      // projection takes as its key.
      column.expr = sql::Ident(kHiddenGroupAlias) + "." + sql::Ident(item.alias);
    } else {
      auto expr = rewrite(item.expr, item.aggregate_uses, "the column " + sql::Ident(item.alias));
      if (!expr.ok()) return expr.status();
      column.expr = std::move(expr.value());
    }
    owner.select.push_back(std::move(column));
  }
  if (stmt.having) {
    auto where = rewrite(*stmt.having, stmt.having_uses, "HAVING");
    if (!where.ok()) return where.status();
    owner.where = std::move(where.value());
  }

  grammar::TransformStmt& group = out.group;
  group.target = hidden;
  group.source = stmt.source;
  group.joins = stmt.joins;
  group.where = stmt.where;
  group.group_by = stmt.group_by;
  group.without_source_index = stmt.without_source_index;
  group.without_row_security = stmt.without_row_security;
  for (const auto& item : stmt.select) {
    if (item.aggregate_uses.empty()) group.select.push_back(item);
  }
  // Each distinct call once, in the order first written.
  std::vector<std::pair<std::size_t, const grammar::AggregateUse*>> calls;
  auto add = [&](const std::vector<grammar::AggregateUse>& uses, std::size_t position) {
    for (const auto& use : uses) {
      const std::size_t k = IdOf(ids, use.call);
      if (k > calls.size()) calls.emplace_back(position, &use);
    }
  };
  for (const auto& item : stmt.select) add(item.aggregate_uses, item.position);
  add(stmt.having_uses, 0);
  for (std::size_t k = 1; k <= calls.size(); ++k) {
    const grammar::AggregateCall& call = calls[k - 1].second->call;
    const std::string expr = grammar::CallName(call) + "(" + call.argument.value_or("*") + ")";
    group.select.push_back(grammar::SelectItem{expr,
                                               AggregateColumnName(k),
                                               calls[k - 1].first,
                                               call,
                                               {grammar::AggregateUse{call, 0, expr.size()}}});
  }
  return out;
}

}  // namespace trellis::plan
