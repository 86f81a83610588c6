#include "grammar/aggregate.h"

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "grammar/lexer.h"
#include "grammar/recomputed_aggregate.h"

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

std::optional<AggregateFunction> AggregateNamed(std::string_view name) {
  for (const auto& aggregate : kAggregates) {
    if (aggregate.name == name) return aggregate.function;
  }
  if (IsRecomputedAggregate(name)) return AggregateFunction::kRecomputed;
  return std::nullopt;
}

// An expression's tokens read again from the statement, one at a time, with
// a short window kept behind and ahead: a long expression costs memory for
// the calls open at once, not for its tokens. Token indexes count from the
// expression's first token; past its end, At() is the kEnd token.
class ExpressionTokens {
 public:
  // `begin` and `end` bound the part to read, e.g. an ExprSpan or the inside
  // of a call's parentheses.
  ExpressionTokens(std::string_view statement, std::size_t begin, std::size_t end)
      : lexer_(statement.substr(0, end), begin) {}

  // REQUIRES: i is at most kBehind less than the highest index asked for.
  const Token& At(std::size_t i) {
    while (first_ + window_.size() <= i) {
      if (!window_.empty() && window_.back().kind == TokenKind::kEnd) return window_.back();
      window_.push_back(lexer_.Next());
      if (window_.size() > kBehind + kAhead) {
        window_.pop_front();
        ++first_;
      }
    }
    return window_[i - first_];
  }

 private:
  static constexpr std::size_t kBehind = 4;
  static constexpr std::size_t kAhead = 3;
  Lexer lexer_;
  std::deque<Token> window_;
  std::size_t first_ = 0;  // the index of window_.front()
};

// A call, `name(...)` or `qualifier.name(...)`: token indexes of its first
// token (the qualifier, if any) and of its parentheses, the byte offsets of
// its name and parentheses, and the aggregate it names (nullopt: another
// function).
struct Call {
  std::size_t start = 0;
  std::size_t close = 0;
  std::size_t begin = 0;  // the byte offset of its first token
  std::size_t end = 0;    // one past its closing parenthesis
  std::size_t name_begin = 0;
  std::size_t open_end = 0;
  std::size_t close_begin = 0;
  std::optional<AggregateFunction> aggregate;
  std::string name;  // the function's name, as the lexer reads it
};

// The facts the checks below need about the calls of one expression, found
// in one pass. "First" is in the order calls start (a call before the calls
// in its arguments), the order the checks report in.
struct CallFacts {
  std::size_t token_count = 0;
  // The first call followed by OVER, or by FILTER (: its error.
  std::optional<ParseError> window_or_filter;
  std::size_t window_or_filter_start = 0;
  // The first call that is an aggregate or followed by OVER, and which.
  std::optional<Call> aggregate_or_window;
  bool aggregate_or_window_is_window = false;
  // Aggregates: how many, and the first inside another.
  std::size_t aggregates = 0;
  std::optional<std::size_t> nested_aggregate_begin;
  // Every aggregate call not inside another, in the order written.
  std::vector<Call> outer_aggregates;
};

CallFacts FindCalls(const TokenCursor& cursor, std::size_t begin, std::size_t end) {
  ExpressionTokens tokens(cursor.Statement(), begin, end);
  CallFacts facts;
  // Calls not yet closed, innermost last, each with the bracket depth
  // inside its parentheses: a closing bracket at that depth closes it. Other
  // brackets are only counted (ScanExpression has checked that they match).
  struct OpenCall {
    Call call;
    std::size_t depth;
  };
  std::vector<OpenCall> open;
  std::size_t depth = 0;
  std::size_t open_aggregates = 0;
  for (std::size_t i = 0;; ++i) {
    const Token& token = tokens.At(i);
    if (token.kind == TokenKind::kEnd || token.kind == TokenKind::kError) {
      facts.token_count = i;
      break;
    }
    if (IsMark(token, "(") || IsMark(token, "[")) {
      ++depth;
      if (i == 0 || !IsMark(token, "(") || !IsName(tokens.At(i - 1))) continue;
      const std::size_t name = i - 1;
      Call call;
      call.start = name;
      call.open_end = token.end;
      call.name_begin = tokens.At(name).begin;
      const bool qualified = name >= 2 && IsMark(tokens.At(name - 1), ".");
      if (qualified) call.start = name - 2;
      call.begin = tokens.At(call.start).begin;
      // Only the built-in aggregates are maintained: unqualified, or
      // qualified by pg_catalog (and not itself part of a longer name).
      const bool builtin = !qualified || (IsWord(tokens.At(name - 2), "pg_catalog") &&
                                          (name < 3 || !IsMark(tokens.At(name - 3), ".")));
      if (builtin) call.aggregate = AggregateNamed(tokens.At(name).value);
      call.name = tokens.At(name).value;
      if (call.aggregate) {
        ++facts.aggregates;
        // The first aggregate to start inside another: every outer one
        // that started earlier has closed with no aggregate inside.
        if (open_aggregates > 0 && !facts.nested_aggregate_begin) {
          facts.nested_aggregate_begin = call.name_begin;
        }
        ++open_aggregates;
      }
      open.push_back(OpenCall{call, depth});
      continue;
    }
    if (!IsMark(token, ")") && !IsMark(token, "]")) continue;
    if (!open.empty() && open.back().depth == depth) {
      Call call = open.back().call;
      open.pop_back();
      call.close = i;
      call.close_begin = token.begin;
      call.end = token.end;
      if (call.aggregate) --open_aggregates;
      if (call.aggregate && open_aggregates == 0) facts.outer_aggregates.push_back(call);
      const Token& after = tokens.At(i + 1);
      const bool over = IsWord(after, "over");
      const bool filter = IsWord(after, "filter") && IsMark(tokens.At(i + 2), "(");
      if ((over || filter) &&
          (!facts.window_or_filter || call.start < facts.window_or_filter_start)) {
        facts.window_or_filter_start = call.start;
        facts.window_or_filter =
            over ? cursor.UnsupportedAt(
                       after.begin,
                       "window functions (OVER) are not supported: a transform computes each "
                       "row from its own source row or group alone; compute window functions "
                       "when you read the target")
                 : cursor.UnsupportedAt(
                       after.begin,
                       "FILTER on an aggregate is not supported: move the condition into the "
                       "argument, as in sum(CASE WHEN <condition> THEN amount END) or "
                       "count(CASE WHEN <condition> THEN 1 END), or into the transform's WHERE");
      }
      if ((call.aggregate || over) &&
          (!facts.aggregate_or_window || call.start < facts.aggregate_or_window->start)) {
        facts.aggregate_or_window = call;
        facts.aggregate_or_window_is_window = over;
      }
    }
    --depth;
  }
  return facts;
}

// The refusal of DISTINCT inside `name`(...), read in `context`, or nullopt
// where it is read.
std::optional<std::string> DistinctRefusal(std::string_view name, AggregateFunction function,
                                           AggregateContext context) {
  const std::string call = std::string(name) + "(DISTINCT ...)";
  switch (function) {
    case AggregateFunction::kMin:
    case AggregateFunction::kMax:
    case AggregateFunction::kBoolAnd:
    case AggregateFunction::kBoolOr:
      return call + " is not supported: DISTINCT does not change " + std::string(name) +
             "'s result; remove DISTINCT";
    case AggregateFunction::kCount:
    case AggregateFunction::kSum:
    case AggregateFunction::kAvg:
    case AggregateFunction::kRecomputed:  // read as written (ReadRecomputed)
      break;
  }
  switch (context) {
    case AggregateContext::kStatement:
      return std::nullopt;
    case AggregateContext::kSubquery:
      return call +
             " is not supported in a subquery: define a transform that computes it, grouped by "
             "the subquery's correlation columns, and compare to its target";
    case AggregateContext::kAlter:
      return "ALTER TRANSFORM cannot add or change a column with " + call +
             ", which is compiled into stages of its own: DROP TRANSFORM and define it again "
             "with the column";
  }
  return call + " is not supported here";
}

// Reads a call kept by recompute of its group: its inside as written.
std::variant<AggregateCall, ParseError> ReadRecomputed(const TokenCursor& cursor, const Call& call,
                                                       AggregateContext context) {
  const std::string& name = call.name;
  switch (context) {
    case AggregateContext::kStatement:
      break;
    case AggregateContext::kSubquery:
      return cursor.UnsupportedAt(
          call.name_begin,
          name +
              " is not supported in a subquery: define a transform that computes it, "
              "grouped by the subquery's correlation columns, and join its target");
    case AggregateContext::kAlter:
      return cursor.UnsupportedAt(call.name_begin,
                                  "ALTER TRANSFORM cannot add or change a column with " + name +
                                      ": DROP TRANSFORM and define it again with the column");
  }
  ExpressionTokens tokens(cursor.Statement(), call.open_end, call.close_begin);
  if (tokens.At(0).kind == TokenKind::kEnd) {
    return cursor.ErrorAt(call.open_end - 1, name + " needs an argument: " + name + "(expression)");
  }
  const std::size_t begin = tokens.At(0).begin;
  std::size_t end = begin;
  for (std::size_t i = 0; tokens.At(i).kind != TokenKind::kEnd; ++i) end = tokens.At(i).end;
  const std::string inside(cursor.Statement().substr(begin, end - begin));
  if (auto refusal = RecomputedCallRefusal(name, inside)) {
    return cursor.UnsupportedAt(call.name_begin, *refusal);
  }
  AggregateCall out;
  out.function = AggregateFunction::kRecomputed;
  out.argument = inside;
  out.name = name;
  return out;
}

// Checks the argument list of aggregate `call` and returns it.
std::variant<AggregateCall, ParseError> ReadArgument(const TokenCursor& cursor, const Call& call,
                                                     AggregateContext context) {
  if (call.aggregate == AggregateFunction::kRecomputed) {
    return ReadRecomputed(cursor, call, context);
  }
  const std::string_view name = AggregateName(*call.aggregate);
  ExpressionTokens tokens(cursor.Statement(), call.open_end, call.close_begin);
  AggregateCall out;
  out.function = *call.aggregate;
  std::size_t first = 0;
  if (IsWord(tokens.At(first), "distinct")) {
    if (auto refusal = DistinctRefusal(name, *call.aggregate, context)) {
      return cursor.UnsupportedAt(tokens.At(first).begin, *refusal);
    }
    out.distinct = true;
    ++first;
  }
  if (!out.distinct && IsWord(tokens.At(first), "all")) ++first;  // ALL is the default
  if (tokens.At(first).kind == TokenKind::kEnd) {
    return cursor.ErrorAt(
        call.open_end - 1,
        call.aggregate == AggregateFunction::kCount
            ? "count needs an argument: count(*) or count(expression)"
            : std::string(name) + " needs one argument: " + std::string(name) + "(expression)");
  }
  const std::size_t argument_begin = tokens.At(first).begin;
  const bool star = tokens.At(first).kind == TokenKind::kOperator &&
                    tokens.At(first).value == "*" && tokens.At(first + 1).kind == TokenKind::kEnd;
  const std::size_t star_begin = tokens.At(first).begin;
  std::size_t argument_end = argument_begin;
  int depth = 0;
  for (std::size_t i = first; tokens.At(i).kind != TokenKind::kEnd; ++i) {
    const Token& token = tokens.At(i);
    argument_end = token.end;
    if (IsMark(token, "(") || IsMark(token, "[")) ++depth;
    if (IsMark(token, ")") || IsMark(token, "]")) --depth;
    if (depth > 0) continue;
    if (IsMark(token, ",")) {
      return cursor.ErrorAt(token.begin, std::string(name) + " takes one argument, found a second");
    }
    if (IsWord(token, "order") && IsWord(tokens.At(i + 1), "by")) {
      return cursor.UnsupportedAt(token.begin,
                                  "ORDER BY inside " + std::string(name) +
                                      "(...) is not supported: its result does not depend on "
                                      "the order of the rows; remove the ORDER BY");
    }
  }
  if (star) {
    if (call.aggregate == AggregateFunction::kCount && !out.distinct) return out;
    return cursor.ErrorAt(star_begin,
                          out.distinct
                              ? std::string(name) + "(DISTINCT *) is not SQL: write " +
                                    std::string(name) + "(DISTINCT expression)"
                              : "only count takes *: write " + std::string(name) + "(expression)");
  }
  out.argument =
      std::string(cursor.Statement().substr(argument_begin, argument_end - argument_begin));
  return out;
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
    case AggregateFunction::kRecomputed:
      return "aggregate";
  }
  return "count";
}

std::string CallName(const AggregateCall& call) {
  if (call.function == AggregateFunction::kRecomputed) return call.name;
  return std::string(AggregateName(call.function));
}

std::variant<AggregatesRead, ParseError> ReadAggregates(const TokenCursor& cursor,
                                                        const ExprSpan& expr,
                                                        AggregateContext context) {
  const CallFacts facts = FindCalls(cursor, expr.position, expr.end());
  if (facts.window_or_filter) return *facts.window_or_filter;
  AggregatesRead out;
  if (facts.aggregates == 0) return out;
  if (facts.nested_aggregate_begin) {
    return cursor.UnsupportedAt(
        *facts.nested_aggregate_begin,
        "an aggregate of an aggregate is not supported: define a transform with the inner "
        "aggregate and aggregate its target in a second transform");
  }
  for (const Call& call : facts.outer_aggregates) {
    auto read = ReadArgument(cursor, call, context);
    if (auto* error = std::get_if<ParseError>(&read)) return *error;
    out.uses.push_back(AggregateUse{std::get<AggregateCall>(std::move(read)),
                                    call.begin - expr.position, call.end - expr.position});
  }
  const Call& first = facts.outer_aggregates.front();
  if (out.uses.size() == 1 && first.start == 0 && first.close + 1 == facts.token_count) {
    out.whole = out.uses.front().call;
  }
  return out;
}

std::optional<ParseError> RefuseAggregates(const TokenCursor& cursor, const ExprSpan& expr,
                                           std::string_view clause) {
  const CallFacts facts = FindCalls(cursor, expr.position, expr.end());
  if (!facts.aggregate_or_window) return std::nullopt;
  const bool window = facts.aggregate_or_window_is_window;
  return cursor.ErrorAt(
      facts.aggregate_or_window->name_begin,
      std::string(window ? "window functions" : "aggregate functions") + " are not allowed in " +
          std::string(clause) +
          (clause == "WHERE" ? ": WHERE picks source rows before they are grouped; to keep "
                               "only some groups, write the condition in HAVING"
                             : ": group by columns or expressions of one source row"));
}

}  // namespace trellis::grammar
