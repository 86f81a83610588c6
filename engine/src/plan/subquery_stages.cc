#include "plan/subquery_stages.h"

#include <map>

#include "grammar/aggregate.h"
#include "plan/aggregates/group_sql.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

using grammar::SubqueryUse;

// What one hidden grouping of a subquery holds.
enum class Holds {
  kCount,       // count(*) AS n: EXISTS, NOT EXISTS, IN, NOT IN's matches
  kAggregates,  // each distinct aggregate call: a comparison
  kTotals,      // count(*) AS n, count(value) AS v: NOT IN's totals
};

struct Part {
  Holds holds;
  std::vector<grammar::Correlation> key;  // empty: one row for the whole table
  // A column counted only where it is not NULL without being a key: the
  // `<>` correlation's inner side, in the count by the equalities.
  std::optional<std::string> not_null;
};

// The groupings subquery `sq` needs, in order: keyed by its equalities and,
// for IN and NOT IN's matches, the value selected.
std::vector<Part> PartsOf(const grammar::WhereSubquery& sq) {
  std::vector<grammar::Correlation> matched = sq.correlations;
  if (sq.tested) matched.push_back(*sq.tested);
  if (sq.differs) {
    // EXISTS and NOT EXISTS by equalities and one `<>`: the rows matching
    // the equalities (their `<>` column not NULL, which `<>` never
    // matches), and of those the rows also equal on it. The subquery has
    // rows iff the first count exceeds the second.
    std::vector<grammar::Correlation> same = sq.correlations;
    same.push_back(*sq.differs);
    return {Part{Holds::kCount, sq.correlations, sq.differs->inner},
            Part{Holds::kCount, same, std::nullopt}};
  }
  switch (sq.use) {
    case SubqueryUse::kCompare:
      return {Part{Holds::kAggregates, sq.correlations, std::nullopt}};
    case SubqueryUse::kNotIn:
      return {Part{Holds::kCount, matched, std::nullopt},
              Part{Holds::kTotals, sq.correlations, std::nullopt}};
    default:
      return {Part{Holds::kCount, matched, std::nullopt}};
  }
}

std::string CallText(const grammar::AggregateCall& call) {
  return grammar::CallName(call) + "(" + call.argument.value_or("*") + ")";
}

grammar::SelectItem AggregateItem(const grammar::AggregateCall& call, std::string alias,
                                  std::size_t position) {
  const std::string expr = CallText(call);
  return grammar::SelectItem{
      expr, std::move(alias), position, call, {grammar::AggregateUse{call, 0, expr.size()}}};
}

grammar::SelectItem CountItem(std::optional<std::string> argument, std::string_view alias,
                              std::size_t position) {
  return AggregateItem(
      grammar::AggregateCall{grammar::AggregateFunction::kCount, argument, false, {}},
      std::string(alias), position);
}

// The hidden grouping `part` of subquery `sq`, and (for a comparison) the
// column of each distinct aggregate call, keyed by the call's text.
grammar::TransformStmt Stage(const grammar::TransformStmt& stmt, const grammar::WhereSubquery& sq,
                             const Part& part, const grammar::QualifiedName& hidden,
                             std::map<std::string, std::string>& calls) {
  grammar::TransformStmt stage;
  stage.target = hidden;
  stage.source = sq.from;
  stage.without_source_index = stmt.without_source_index;
  stage.without_row_security = stmt.without_row_security;
  std::string where = sq.where.value_or("");
  for (std::size_t i = 0; i < part.key.size(); ++i) {
    const std::string& inner = part.key[i].inner;
    stage.select.push_back(
        grammar::SelectItem{inner, CorrelationColumnName(i + 1), sq.position, {}, {}});
    stage.group_by.push_back(inner);
    // `=` never matches NULL: a row whose correlation is NULL meets no row.
    where += (where.empty() ? "(" : " AND (") + inner + ") IS NOT NULL";
  }
  if (part.not_null) where += (where.empty() ? "(" : " AND (") + *part.not_null + ") IS NOT NULL";
  if (!where.empty()) stage.where = where;
  switch (part.holds) {
    case Holds::kCount:
      stage.select.push_back(CountItem(std::nullopt, kSubqueryCountColumn, sq.position));
      break;
    case Holds::kTotals:
      stage.select.push_back(CountItem(std::nullopt, kSubqueryCountColumn, sq.position));
      stage.select.push_back(CountItem(sq.item, kSubqueryValuesColumn, sq.position));
      break;
    case Holds::kAggregates:
      for (const auto& use : sq.item_uses) {
        const std::string text = CallText(use.call);
        if (calls.count(text)) continue;
        const std::string column = SubqueryAggregateName(calls.size() + 1);
        calls.emplace(text, column);
        stage.select.push_back(AggregateItem(use.call, column, sq.position));
      }
      break;
  }
  return stage;
}

// The condition that replaces subquery `sq` in WHERE, its groupings joined
// as `aliases` (one per part, in order).
std::string Predicate(const grammar::WhereSubquery& sq, const std::vector<Part>& parts,
                      const std::vector<std::string>& aliases,
                      const std::map<std::string, std::string>& calls) {
  auto column = [&](std::size_t part, std::string_view name) {
    return sql::Ident(aliases[part]) + "." + sql::Ident(name);
  };
  const bool whole = parts.front().key.empty();
  const std::string rows = "coalesce(" + column(0, kSubqueryCountColumn) + ", 0)";
  if (sq.differs) {
    // The rows matching the equalities with a `<>` column not NULL, less
    // those equal on it; an outer NULL matches nothing.
    const std::string x = sql::Ident(sq.outer) + "." + sql::Ident(sq.differs->outer_column);
    const std::string same = "coalesce(" + column(1, kSubqueryCountColumn) + ", 0)";
    return sq.use == SubqueryUse::kExists
               ? "(" + x + " IS NOT NULL AND " + rows + " > " + same + ")"
               : "(" + x + " IS NULL OR " + rows + " = " + same + ")";
  }
  switch (sq.use) {
    case SubqueryUse::kExists:
    case SubqueryUse::kIn:
      // Keyed, the INNER join keeps the rows with a match; over the whole
      // table, the one row counts them.
      return whole ? "(" + rows + " > 0)" : "true";
    case SubqueryUse::kNotExists:
      return "(" + rows + " = 0)";
    case SubqueryUse::kNotIn: {
      // SQL: no rows, or x is not NULL, matches nothing and no value
      // selected is NULL.
      const std::string x = sql::Ident(sq.outer) + "." + sql::Ident(sq.tested->outer_column);
      return "(coalesce(" + column(1, kSubqueryCountColumn) + ", 0) = 0 OR (" + x +
             " IS NOT NULL AND " + column(0, kSubqueryCountColumn) + " IS NULL AND " +
             column(1, kSubqueryCountColumn) + " = " + column(1, kSubqueryValuesColumn) + "))";
    }
    case SubqueryUse::kCompare:
      break;
  }
  std::string value;
  std::size_t at = 0;
  for (const auto& use : sq.item_uses) {
    value.append(sq.item, at, use.begin - at);
    const std::string read = column(0, calls.at(CallText(use.call)));
    // No rows count 0; the other aggregates of no rows are NULL, as the
    // missing joined row reads.
    value += use.call.function == grammar::AggregateFunction::kCount ? "coalesce(" + read + ", 0)"
                                                                     : read;
    at = use.end;
  }
  value.append(sq.item, at);
  return "((" + sq.compared + ") " + sq.op + " (" + value + "))";
}

}  // namespace

std::string SubqueryAlias(std::size_t k) { return "__trellis_s" + std::to_string(k); }

std::string CorrelationColumnName(std::size_t i) { return "k" + std::to_string(i); }

std::string SubqueryAggregateName(std::size_t k) { return "a" + std::to_string(k); }

bool NeedsFromCopy(const grammar::TransformStmt& stmt) {
  for (const auto& sq : stmt.subqueries) {
    for (const auto& part : PartsOf(sq)) {
      if (part.key.empty()) return true;
    }
  }
  return false;
}

std::size_t HiddenPartsNeeded(const grammar::TransformStmt& stmt) {
  std::size_t n = NeedsFromCopy(stmt) ? 1 : 0;
  for (const auto& sq : stmt.subqueries) n += PartsOf(sq).size();
  return n;
}

Result<SubqueryStages> CompileSubqueryStages(const grammar::TransformStmt& stmt,
                                             const std::vector<grammar::QualifiedName>& hidden,
                                             const std::vector<std::string>& from_columns) {
  if (hidden.size() != HiddenPartsNeeded(stmt) || !stmt.where) {
    return Status::Internal("a hidden part is needed per subquery grouping and for the FROM copy");
  }
  SubqueryStages out;
  grammar::TransformStmt& owner = out.owner;
  owner = stmt;
  owner.subqueries.clear();
  const std::string from = stmt.source.Qualifier();
  if (NeedsFromCopy(stmt)) {
    grammar::TransformStmt copy;
    copy.target = hidden.back();
    copy.source = stmt.source;
    copy.without_source_index = stmt.without_source_index;
    copy.without_row_security = stmt.without_row_security;
    for (const auto& c : from_columns) {
      if (c == kConstantKeyColumn) {
        return Status::Unsupported(
            "transform " + sql::Ident(stmt.target.name) + " cannot compile its subquery that " +
            "reads no column of the statement: its FROM table has a column named " +
            std::string(kConstantKeyColumn) +
            ", the name Trellis gives the constant it joins such a subquery on; rename the "
            "column, or correlate the subquery");
      }
      copy.select.push_back(
          grammar::SelectItem{sql::Ident(from) + "." + sql::Ident(c), c, 0, {}, {}});
    }
    copy.select.push_back(grammar::SelectItem{"true", std::string(kConstantKeyColumn), 0, {}, {}});
    owner.source = grammar::TableRef{hidden.back(), from};
    out.from_copy = std::move(copy);
  }
  std::string where;
  std::size_t copied = 0;
  std::size_t next = 0;  // the next hidden grouping
  for (std::size_t k = 0; k < stmt.subqueries.size(); ++k) {
    const grammar::WhereSubquery& sq = stmt.subqueries[k];
    const std::vector<Part> parts = PartsOf(sq);
    std::map<std::string, std::string> calls;
    std::vector<std::string> aliases;
    for (const Part& part : parts) {
      out.stages.push_back(Stage(stmt, sq, part, hidden[next], calls));
      out.stage_subquery.push_back(k);
      const std::string alias = SubqueryAlias(next + 1);
      grammar::JoinClause join;
      // EXISTS and IN keep only the rows with a match: an INNER join on a
      // keyed count. With a `<>`, only its first count (by the equalities).
      const bool keyed_match = (sq.use == SubqueryUse::kExists || sq.use == SubqueryUse::kIn) &&
                               !part.key.empty() && !(sq.differs && &part != &parts.front());
      join.kind = keyed_match ? grammar::JoinKind::kInner : grammar::JoinKind::kLeft;
      join.table = grammar::TableRef{hidden[next], alias};
      if (part.key.empty()) {
        join.to = from;
        join.on.emplace_back(std::string(kConstantKeyColumn),
                             std::string(aggregates::kWholeTableKey));
      } else {
        join.to = sq.outer;
        for (std::size_t i = 0; i < part.key.size(); ++i) {
          join.on.emplace_back(part.key[i].outer_column, CorrelationColumnName(i + 1));
        }
      }
      owner.joins.push_back(std::move(join));
      aliases.push_back(alias);
      ++next;
    }
    where.append(*stmt.where, copied, sq.begin - copied);
    where += Predicate(sq, parts, aliases, calls);
    copied = sq.end;
  }
  where.append(*stmt.where, copied);
  owner.where = std::move(where);
  return out;
}

}  // namespace trellis::plan
