#include "grammar/aggregate.h"

#include <cstddef>
#include <string>
#include <vector>

namespace trellis::grammar {
namespace {

struct NamedAggregate {
  std::string_view name;
  AggregateFunction function;
};

constexpr NamedAggregate kAggregates[] = {
    {"count", AggregateFunction::kCount},   {"sum", AggregateFunction::kSum},
    {"avg", AggregateFunction::kAvg},       {"min", AggregateFunction::kMin},
    {"max", AggregateFunction::kMax},       {"bool_and", AggregateFunction::kBoolAnd},
    {"every", AggregateFunction::kBoolAnd}, {"bool_or", AggregateFunction::kBoolOr},
};

bool IsPunctuation(const Token& token, std::string_view mark) {
  return token.kind == TokenKind::kPunctuation && token.value == mark;
}

bool IsWord(const Token& token, std::string_view word) {
  return token.kind == TokenKind::kIdentifier && token.value == word;
}

bool IsName(const Token& token) {
  return token.kind == TokenKind::kIdentifier || token.kind == TokenKind::kQuotedIdentifier;
}

std::optional<AggregateFunction> AggregateNamed(std::string_view name) {
  for (const auto& aggregate : kAggregates) {
    if (aggregate.name == name) return aggregate.function;
  }
  return std::nullopt;
}

// One function call among an expression's tokens: `name(...)` or
// `qualifier.name(...)`. Token indexes: `start` is the first token of the
// call (the qualifier, if any), `open` and `close` its parentheses.
struct Call {
  std::size_t start = 0;
  std::size_t name = 0;
  std::size_t open = 0;
  std::size_t close = 0;
  std::optional<AggregateFunction> aggregate;  // nullopt: some other function
};

// The calls in `tokens`, in the order they start. ScanExpression has
// checked that the brackets balance.
std::vector<Call> FindCalls(const std::vector<Token>& tokens) {
  std::vector<std::size_t> closer(tokens.size(), 0);
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (IsPunctuation(tokens[i], "(") || IsPunctuation(tokens[i], "[")) open.push_back(i);
    if ((IsPunctuation(tokens[i], ")") || IsPunctuation(tokens[i], "]")) && !open.empty()) {
      closer[open.back()] = i;
      open.pop_back();
    }
  }
  std::vector<Call> calls;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (!IsName(tokens[i]) || !IsPunctuation(tokens[i + 1], "(")) continue;
    Call call{i, i, i + 1, closer[i + 1], std::nullopt};
    const bool qualified = i >= 2 && IsPunctuation(tokens[i - 1], ".");
    if (qualified) call.start = i - 2;
    // Only the built-in aggregates are maintained: unqualified, or
    // qualified by pg_catalog (and not itself part of a longer name).
    const bool builtin = !qualified || (IsWord(tokens[i - 2], "pg_catalog") &&
                                        (i < 3 || !IsPunctuation(tokens[i - 3], ".")));
    if (builtin) call.aggregate = AggregateNamed(tokens[i].value);
    calls.push_back(call);
  }
  return calls;
}

// Refuses OVER and FILTER after any call: `f(x) OVER (...)`,
// `f(x) FILTER (WHERE ...)`.
std::optional<ParseError> RefuseWindowAndFilter(const TokenCursor& cursor,
                                                const std::vector<Token>& tokens,
                                                const std::vector<Call>& calls) {
  for (const Call& call : calls) {
    const std::size_t after = call.close + 1;
    if (after >= tokens.size()) continue;
    if (IsWord(tokens[after], "over")) {
      return cursor.UnsupportedAt(
          tokens[after].begin,
          "window functions (OVER) are not supported: a transform computes each row from its "
          "own source row or group alone; compute window functions when you read the target");
    }
    if (IsWord(tokens[after], "filter") && after + 1 < tokens.size() &&
        IsPunctuation(tokens[after + 1], "(")) {
      return cursor.UnsupportedAt(
          tokens[after].begin,
          "FILTER on an aggregate is not supported: move the condition into the argument, as "
          "in sum(CASE WHEN <condition> THEN amount END) or count(CASE WHEN <condition> THEN 1 "
          "END), or into the transform's WHERE");
    }
  }
  return std::nullopt;
}

// Checks the argument list of aggregate `call` and returns its argument.
std::variant<std::optional<std::string>, ParseError> ReadArgument(const TokenCursor& cursor,
                                                                  const std::vector<Token>& tokens,
                                                                  const Call& call) {
  const std::string_view name = AggregateName(*call.aggregate);
  const Token& open = tokens[call.open];
  std::size_t first = call.open + 1;
  if (first < call.close && IsWord(tokens[first], "distinct")) {
    return cursor.UnsupportedAt(
        tokens[first].begin,
        std::string(name) +
            "(DISTINCT ...) is not supported: an aggregate over distinct values cannot be kept "
            "from row changes; define a SELECT DISTINCT transform and aggregate its target in "
            "a second transform");
  }
  if (first < call.close && IsWord(tokens[first], "all")) ++first;  // ALL is the default
  if (first == call.close) {
    return cursor.ErrorAt(open.begin, call.aggregate == AggregateFunction::kCount
                                          ? "count needs an argument: count(*) or count(expression)"
                                          : std::string(name) + " needs one argument: " +
                                                std::string(name) + "(expression)");
  }
  int depth = 0;
  for (std::size_t i = first; i < call.close; ++i) {
    const Token& token = tokens[i];
    if (IsPunctuation(token, "(") || IsPunctuation(token, "[")) ++depth;
    if (IsPunctuation(token, ")") || IsPunctuation(token, "]")) --depth;
    if (depth > 0) continue;
    if (IsPunctuation(token, ",")) {
      return cursor.ErrorAt(token.begin, std::string(name) + " takes one argument, found a second");
    }
    if (IsWord(token, "order") && i + 1 < call.close && IsWord(tokens[i + 1], "by")) {
      return cursor.UnsupportedAt(token.begin,
                                  "ORDER BY inside " + std::string(name) +
                                      "(...) is not supported: its result does not depend on "
                                      "the order of the rows; remove the ORDER BY");
    }
  }
  if (first + 1 == call.close && tokens[first].kind == TokenKind::kOperator &&
      tokens[first].value == "*") {
    if (call.aggregate == AggregateFunction::kCount) return std::optional<std::string>();
    return cursor.ErrorAt(tokens[first].begin,
                          "only count takes *: write " + std::string(name) + "(expression)");
  }
  const std::string_view statement = cursor.Statement();
  const std::size_t begin = tokens[first].begin;
  return std::optional<std::string>(
      std::string(statement.substr(begin, tokens[call.close - 1].end - begin)));
}

// Refuses an aggregate call inside another's argument.
std::optional<ParseError> RefuseNested(const TokenCursor& cursor, const std::vector<Token>& tokens,
                                       const std::vector<const Call*>& aggregates) {
  for (const Call* outer : aggregates) {
    for (const Call* inner : aggregates) {
      if (inner->start > outer->open && inner->close < outer->close) {
        return cursor.UnsupportedAt(
            tokens[inner->name].begin,
            "an aggregate of an aggregate is not supported: define a transform with the inner "
            "aggregate and aggregate its target in a second transform");
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view AggregateName(AggregateFunction function) {
  switch (function) {
    case AggregateFunction::kCount:
      return "count";
    case AggregateFunction::kSum:
      return "sum";
    case AggregateFunction::kAvg:
      return "avg";
    case AggregateFunction::kMin:
      return "min";
    case AggregateFunction::kMax:
      return "max";
    case AggregateFunction::kBoolAnd:
      return "bool_and";
    case AggregateFunction::kBoolOr:
      return "bool_or";
  }
  return "count";
}

std::variant<std::optional<AggregateCall>, ParseError> ReadAggregate(const TokenCursor& cursor,
                                                                     const ExprSpan& expr) {
  const std::vector<Token>& tokens = expr.tokens;
  const std::vector<Call> calls = FindCalls(tokens);
  if (auto error = RefuseWindowAndFilter(cursor, tokens, calls)) return *error;
  std::vector<const Call*> aggregates;
  for (const Call& call : calls) {
    if (call.aggregate) aggregates.push_back(&call);
  }
  if (aggregates.empty()) return std::optional<AggregateCall>();
  if (auto error = RefuseNested(cursor, tokens, aggregates)) return *error;
  const Call& call = *aggregates.front();
  auto argument = ReadArgument(cursor, tokens, call);
  if (auto* error = std::get_if<ParseError>(&argument)) return *error;
  if (aggregates.size() > 1 || call.start != 0 || call.close + 1 != tokens.size()) {
    return cursor.UnsupportedAt(
        tokens[call.name].begin,
        "an aggregate must be a column of its own, as in sum(amount) AS total; compute "
        "expressions over aggregates (sum(a) / count(*), coalesce(sum(a), 0)) in a projection "
        "over this transform's target");
  }
  return std::optional<AggregateCall>(
      AggregateCall{*call.aggregate, std::get<std::optional<std::string>>(std::move(argument))});
}

std::optional<ParseError> RefuseAggregates(const TokenCursor& cursor, const ExprSpan& expr,
                                           std::string_view clause) {
  const std::vector<Token>& tokens = expr.tokens;
  for (const Call& call : FindCalls(tokens)) {
    const bool window = call.close + 1 < tokens.size() && IsWord(tokens[call.close + 1], "over");
    if (!call.aggregate && !window) continue;
    return cursor.ErrorAt(
        tokens[call.name].begin,
        std::string(window ? "window functions" : "aggregate functions") + " are not allowed in " +
            std::string(clause) +
            (clause == "WHERE" ? ": WHERE picks source rows before they are grouped; to keep "
                                 "only some groups, filter this transform's target in a "
                                 "projection over it"
                               : ": group by columns or expressions of one source row"));
  }
  return std::nullopt;
}

}  // namespace trellis::grammar
