#include "plan/subquery_stages.h"

#include <map>

#include "grammar/aggregate.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

using grammar::SubqueryUse;

// The correlations a subquery's grouping is keyed by: its equalities, then
// for IN the value selected.
std::vector<grammar::Correlation> KeyOf(const grammar::WhereSubquery& sq) {
  std::vector<grammar::Correlation> out = sq.correlations;
  if (sq.tested) out.push_back(*sq.tested);
  return out;
}

std::string CallText(const grammar::AggregateCall& call) {
  return std::string(grammar::AggregateName(call.function)) + "(" + call.argument.value_or("*") +
         ")";
}

grammar::SelectItem AggregateItem(const grammar::AggregateCall& call, std::string alias,
                                  std::size_t position) {
  const std::string expr = CallText(call);
  return grammar::SelectItem{
      expr, std::move(alias), position, call, {grammar::AggregateUse{call, 0, expr.size()}}};
}

// The hidden grouping of subquery `sq`, and (for a comparison) the column
// of each distinct aggregate call, keyed by the call's text.
grammar::TransformStmt Stage(const grammar::TransformStmt& stmt, const grammar::WhereSubquery& sq,
                             const grammar::QualifiedName& hidden,
                             std::map<std::string, std::string>& calls) {
  grammar::TransformStmt stage;
  stage.target = hidden;
  stage.source = sq.from;
  stage.without_source_index = stmt.without_source_index;
  stage.without_row_security = stmt.without_row_security;
  std::string where = sq.where.value_or("");
  const std::vector<grammar::Correlation> key = KeyOf(sq);
  for (std::size_t i = 0; i < key.size(); ++i) {
    stage.select.push_back(
        grammar::SelectItem{key[i].inner, CorrelationColumnName(i + 1), sq.position, {}, {}});
    stage.group_by.push_back(key[i].inner);
    // `=` never matches NULL: a row whose correlation is NULL meets no row.
    where += (where.empty() ? "(" : " AND (") + key[i].inner + ") IS NOT NULL";
  }
  if (!where.empty()) stage.where = where;
  if (sq.use != SubqueryUse::kCompare) {
    stage.select.push_back(
        AggregateItem(grammar::AggregateCall{grammar::AggregateFunction::kCount, std::nullopt},
                      std::string(kSubqueryCountColumn), sq.position));
    return stage;
  }
  for (const auto& use : sq.item_uses) {
    const std::string text = CallText(use.call);
    if (calls.count(text)) continue;
    const std::string column = SubqueryAggregateName(calls.size() + 1);
    calls.emplace(text, column);
    stage.select.push_back(AggregateItem(use.call, column, sq.position));
  }
  return stage;
}

// The condition that replaces subquery `sq` (joined as `alias`) in WHERE.
std::string Predicate(const grammar::WhereSubquery& sq, const std::string& alias,
                      const std::map<std::string, std::string>& calls) {
  const std::string joined = sql::Ident(alias) + ".";
  switch (sq.use) {
    case SubqueryUse::kExists:
    case SubqueryUse::kIn:
      return "true";  // the INNER join keeps the rows with a match
    case SubqueryUse::kNotExists:
    case SubqueryUse::kNotIn:
      return "(" + joined + sql::Ident(kSubqueryCountColumn) + " IS NULL)";
    case SubqueryUse::kCompare:
      break;
  }
  std::string value;
  std::size_t at = 0;
  for (const auto& use : sq.item_uses) {
    value.append(sq.item, at, use.begin - at);
    const std::string column = joined + sql::Ident(calls.at(CallText(use.call)));
    // No rows count 0; the other aggregates of no rows are NULL, as the
    // missing joined row reads.
    value += use.call.function == grammar::AggregateFunction::kCount ? "coalesce(" + column + ", 0)"
                                                                     : column;
    at = use.end;
  }
  value.append(sq.item, at);
  return "((" + sq.compared + ") " + sq.op + " (" + value + "))";
}

}  // namespace

std::string SubqueryAlias(std::size_t k) { return "__trellis_s" + std::to_string(k); }

std::string CorrelationColumnName(std::size_t i) { return "k" + std::to_string(i); }

std::string SubqueryAggregateName(std::size_t k) { return "a" + std::to_string(k); }

Result<SubqueryStages> CompileSubqueryStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden) {
  if (hidden.size() != stmt.subqueries.size() || !stmt.where) {
    return Status::Internal("a hidden grouping is needed per subquery");
  }
  SubqueryStages out;
  grammar::TransformStmt& owner = out.owner;
  owner = stmt;
  owner.subqueries.clear();
  std::string where;
  std::size_t copied = 0;
  for (std::size_t k = 0; k < stmt.subqueries.size(); ++k) {
    const grammar::WhereSubquery& sq = stmt.subqueries[k];
    std::map<std::string, std::string> calls;
    out.stages.push_back(Stage(stmt, sq, hidden[k], calls));
    const std::string alias = SubqueryAlias(k + 1);
    grammar::JoinClause join;
    join.kind = sq.use == SubqueryUse::kExists || sq.use == SubqueryUse::kIn
                    ? grammar::JoinKind::kInner
                    : grammar::JoinKind::kLeft;
    join.table = grammar::TableRef{hidden[k], alias};
    join.to = sq.outer;
    const std::vector<grammar::Correlation> key = KeyOf(sq);
    for (std::size_t i = 0; i < key.size(); ++i) {
      join.on.emplace_back(key[i].outer_column, CorrelationColumnName(i + 1));
    }
    owner.joins.push_back(std::move(join));
    where.append(*stmt.where, copied, sq.begin - copied);
    where += Predicate(sq, alias, calls);
    copied = sq.end;
  }
  where.append(*stmt.where, copied);
  owner.where = std::move(where);
  return out;
}

}  // namespace trellis::plan
