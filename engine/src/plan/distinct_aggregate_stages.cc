#include "plan/distinct_aggregate_stages.h"

#include <optional>
#include <variant>

#include "grammar/aggregate.h"
#include "grammar/lexer.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/grouped_rewrite.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

using grammar::AggregateCall;
using grammar::AggregateFunction;
using grammar::AggregateUse;

// Every aggregate use of the statement, SELECT items first, in the order
// written.
std::vector<const AggregateUse*> AllUses(const grammar::TransformStmt& stmt) {
  std::vector<const AggregateUse*> out;
  for (const auto& item : stmt.select) {
    for (const auto& use : item.aggregate_uses) out.push_back(&use);
  }
  for (const auto& use : stmt.having_uses) out.push_back(&use);
  return out;
}

// An argument's tokens, so that `o.x` and `o . x` are one argument.
std::vector<std::string> ArgumentTokens(const std::string& argument) {
  std::vector<std::string> out;
  for (const auto& token : grammar::Tokenize(argument)) {
    if (token.kind == grammar::TokenKind::kEnd || token.kind == grammar::TokenKind::kError) break;
    out.push_back(token.value);
  }
  return out;
}

// The columns of the hidden grouping holding the partials of the plain
// calls: numbered in the order the calls are first written.
class Partials {
 public:
  Partials(const CallTypes& types, std::string prefix)
      : types_(types), prefix_(std::move(prefix)) {}

  // Adds `call`'s partials to the grouping's SELECT list (once per call),
  // and returns what the user's statement reads the call as over them.
  std::string Combined(const AggregateCall& call, std::vector<grammar::SelectItem>& items) {
    const std::string key = CallText(call);
    auto found = combined_.find(key);
    if (found != combined_.end()) return found->second;
    const std::string arg = call.argument.value_or("*");
    std::string out;
    switch (call.function) {
      case AggregateFunction::kCount:
        // The sum of the counts, a count again; 0 for a whole table with no rows.
        out = "(coalesce(sum(" + Add("count(" + arg + ")", items) + "), 0))::bigint";
        break;
      case AggregateFunction::kSum:
        // sum(int) is bigint, but the sum of bigint partials is numeric.
        out = "(sum(" + Add("sum(" + arg + ")", items) + "))::" + TypeOf(key);
        break;
      case AggregateFunction::kAvg: {
        // PostgreSQL's avg is its sum, accumulated in the result type,
        // divided by the count; interval divides by a double precision.
        const std::string type = TypeOf(key);
        const std::string sum = "sum(" + Add("sum((" + arg + ")::" + type + ")", items) + ")";
        const std::string count = "nullif(sum(" + Add("count(" + arg + ")", items) + "), 0)";
        out = type == "numeric" || type == "double precision"
                  ? "(" + sum + " / (" + count + ")::" + type + ")"
                  : "(" + sum + " / (" + count + ")::double precision)::" + type;
        break;
      }
      case AggregateFunction::kMin:
      case AggregateFunction::kMax:
      case AggregateFunction::kBoolAnd:
      case AggregateFunction::kBoolOr: {
        const std::string name(grammar::AggregateName(call.function));
        out = name + "(" + Add(name + "(" + arg + ")", items) + ")";
        break;
      }
      case AggregateFunction::kRecomputed:
        // Refused beside DISTINCT calls (CompileDistinctAggregateStages):
        // its result over a group is no function of partials by value.
        break;
    }
    combined_.emplace(key, out);
    return out;
  }

 private:
  std::string Add(const std::string& partial, std::vector<grammar::SelectItem>& items) {
    const std::string column = prefix_ + "p" + std::to_string(++count_);
    items.push_back(grammar::SelectItem{partial, column, 0, {}, {}});
    return sql::Ident(kHiddenDistinctAlias) + "." + sql::Ident(column);
  }

  std::string TypeOf(const std::string& key) const {
    auto found = types_.find(key);
    return found == types_.end() ? "numeric" : found->second;
  }

  const CallTypes& types_;
  const std::string prefix_;
  std::map<std::string, std::string> combined_;
  std::size_t count_ = 0;
};

// What a DISTINCT call reads as: the same function over the distinct values
// in `value_column`.
std::string OverDistinctValues(const AggregateCall& call, const std::string& value_column) {
  return std::string(grammar::AggregateName(call.function)) + "(" +
         sql::Ident(kHiddenDistinctAlias) + "." + sql::Ident(value_column) + ")";
}

// `stmt` as the grammar reads its rendered text.
Result<grammar::TransformStmt> Reparsed(const grammar::TransformStmt& stmt) {
  const std::string text = grammar::Render(stmt);
  auto parsed = grammar::Parse(text);
  const auto* statement = std::get_if<grammar::Statement>(&parsed);
  const auto* transform = statement ? std::get_if<grammar::TransformStmt>(statement) : nullptr;
  if (!transform)
    return Status::Internal("a statement compiled for DISTINCT does not parse: " + text);
  return *transform;
}

}  // namespace

std::string DistinctColumnPrefix(const grammar::TransformStmt& stmt) {
  std::string prefix = "trellis_d";
  auto taken = [&] {
    for (const auto& item : stmt.select) {
      if (item.alias.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  while (taken()) prefix += "_";
  return prefix;
}

std::vector<AggregateCall> CallsNeedingTypes(const grammar::TransformStmt& stmt) {
  std::vector<AggregateCall> out;
  for (const AggregateUse* use : AllUses(stmt)) {
    const AggregateCall& call = use->call;
    if (call.distinct) continue;
    if (call.function != AggregateFunction::kSum && call.function != AggregateFunction::kAvg) {
      continue;
    }
    bool seen = false;
    for (const auto& c : out) seen = seen || CallText(c) == CallText(call);
    if (!seen) out.push_back(call);
  }
  return out;
}

Result<DistinctAggregateStages> CompileDistinctAggregateStages(const grammar::TransformStmt& stmt,
                                                               const grammar::QualifiedName& hidden,
                                                               const CallTypes& types) {
  const std::string& name = stmt.target.name;
  // The one argument every DISTINCT call takes.
  std::optional<AggregateCall> first;
  for (const AggregateUse* use : AllUses(stmt)) {
    if (!use->call.distinct) continue;
    if (!first) {
      first = use->call;
      continue;
    }
    if (ArgumentTokens(*use->call.argument) != ArgumentTokens(*first->argument)) {
      return Status::Unsupported(
          "transform " + grammar::RenderName(name) + " calls " + CallText(*first) + " and " +
          CallText(use->call) +
          ": a transform keeps aggregates over the distinct values of one argument only; "
          "define a transform for each argument, grouped alike, and join their targets");
    }
  }
  if (!first) return Status::Internal("no DISTINCT aggregate to compile");
  for (const AggregateUse* use : AllUses(stmt)) {
    if (use->call.function != AggregateFunction::kRecomputed) continue;
    return Status::Unsupported(
        "transform " + grammar::RenderName(name) + " calls " + CallText(use->call) + " beside " +
        CallText(*first) +
        ": an aggregate kept by recompute cannot be combined from the grouping by DISTINCT "
        "values; define a transform for each, grouped alike, and join their targets");
  }
  const std::string& argument = *first->argument;

  grammar::TransformStmt values;
  values.target = hidden;
  values.source = stmt.source;
  values.joins = stmt.joins;
  values.where = stmt.where;
  values.group_by = stmt.group_by;
  values.group_by.push_back(argument);
  values.without_source_index = stmt.without_source_index;
  values.without_row_security = stmt.without_row_security;
  for (const auto& item : stmt.select) {
    if (item.aggregate_uses.empty()) values.select.push_back(item);
  }
  const std::string prefix = DistinctColumnPrefix(stmt);
  const std::string value_column = prefix + "v";
  values.select.push_back(grammar::SelectItem{argument, value_column, 0, {}, {}});

  Partials partials(types, prefix);
  const CallSql call_sql = [&](const AggregateCall& call) {
    return call.distinct ? OverDistinctValues(call, value_column)
                         : partials.Combined(call, values.select);
  };
  grammar::TransformStmt owner;
  owner.target = stmt.target;
  owner.source = grammar::TableRef{hidden, std::string(kHiddenDistinctAlias)};
  owner.readers = stmt.readers;
  for (const auto& item : stmt.select) {
    grammar::SelectItem column{"", item.alias, item.position, {}, {}};
    if (item.aggregate_uses.empty()) {
      // A GROUP BY item: the hidden column of its own name, grouped again.
      column.expr = sql::Ident(kHiddenDistinctAlias) + "." + sql::Ident(item.alias);
      owner.group_by.push_back(column.expr);
    } else {
      auto expr = RewriteOverGroups(stmt, kHiddenDistinctAlias, item.expr, item.aggregate_uses,
                                    "the column " + sql::Ident(item.alias), call_sql);
      if (!expr.ok()) return expr.status();
      column.expr = std::move(expr.value());
    }
    owner.select.push_back(std::move(column));
  }
  if (stmt.having) {
    auto having = RewriteOverGroups(stmt, kHiddenDistinctAlias, *stmt.having, stmt.having_uses,
                                    "HAVING", call_sql);
    if (!having.ok()) return having.status();
    owner.having = std::move(having.value());
  }
  // Both parsed again from their text, so that their aggregate calls (and
  // their spans) are the grammar's own, as for a statement the user wrote.
  auto reparsed_values = Reparsed(values);
  if (!reparsed_values.ok()) return reparsed_values.status();
  auto reparsed_owner = Reparsed(owner);
  if (!reparsed_owner.ok()) return reparsed_owner.status();
  return DistinctAggregateStages{std::move(reparsed_values.value()),
                                 std::move(reparsed_owner.value())};
}

}  // namespace trellis::plan
