#include "grammar/recomputed_aggregate.h"

#include "grammar/lexer.h"

namespace trellis::grammar {
namespace {

struct RecomputedAggregate {
  std::string_view name;
  bool order_sensitive;
};

// PostgreSQL's built-in aggregates (15 and later) with no algebraic rule in
// Trellis. Ordered-set aggregates (WITHIN GROUP) and any_value are not here:
// the first are another syntax, the second has no one result to keep.
constexpr RecomputedAggregate kRecomputedAggregates[] = {
    {"string_agg", true},   {"array_agg", true},       {"json_agg", true},
    {"jsonb_agg", true},    {"json_object_agg", true}, {"jsonb_object_agg", true},
    {"xmlagg", true},       {"bit_and", false},        {"bit_or", false},
    {"bit_xor", false},     {"stddev", false},         {"stddev_pop", false},
    {"stddev_samp", false}, {"variance", false},       {"var_pop", false},
    {"var_samp", false},    {"corr", false},           {"covar_pop", false},
    {"covar_samp", false},  {"regr_avgx", false},      {"regr_avgy", false},
    {"regr_count", false},  {"regr_intercept", false}, {"regr_r2", false},
    {"regr_slope", false},  {"regr_sxx", false},       {"regr_sxy", false},
    {"regr_syy", false},    {"range_agg", false},      {"range_intersect_agg", false},
};

const RecomputedAggregate* FindRecomputed(std::string_view name) {
  for (const auto& aggregate : kRecomputedAggregates) {
    if (aggregate.name == name) return &aggregate;
  }
  return nullptr;
}

bool IsInsideMark(const Token& token, std::string_view mark) {
  return token.kind == TokenKind::kPunctuation && token.value == mark;
}

bool IsInsideWord(const Token& token, std::string_view word) {
  return token.kind == TokenKind::kIdentifier && token.value == word;
}

// The inside of a call cut at its top-level commas and its ORDER BY: each
// argument, then each ORDER BY key, as byte ranges of the inside text.
struct CallInsidePieces {
  struct Range {
    std::size_t begin = 0;
    std::size_t end = 0;
  };
  std::vector<Range> arguments;
  std::vector<Range> order_keys;
  bool ordered = false;
};

CallInsidePieces CutCall(std::string_view inside) {
  const std::vector<Token> tokens = Tokenize(inside);
  CallInsidePieces out;
  std::vector<CallInsidePieces::Range>* list = &out.arguments;
  std::optional<CallInsidePieces::Range> open;
  // Where the current ORDER BY key's own text ends: before ASC, DESC,
  // NULLS or USING.
  bool key_done = false;
  int depth = 0;
  auto close = [&] {
    if (open) list->push_back(*open);
    open.reset();
    key_done = false;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    if (token.kind == TokenKind::kEnd || token.kind == TokenKind::kError) break;
    if (depth == 0) {
      // DISTINCT or ALL before the first argument is no part of it.
      if (i == 0 && (IsInsideWord(token, "distinct") || IsInsideWord(token, "all"))) continue;
      if (IsInsideMark(token, ",")) {
        close();
        continue;
      }
      if (IsInsideWord(token, "order") && i + 1 < tokens.size() &&
          IsInsideWord(tokens[i + 1], "by")) {
        close();
        out.ordered = true;
        list = &out.order_keys;
        ++i;
        continue;
      }
      if (list == &out.order_keys &&
          (IsInsideWord(token, "asc") || IsInsideWord(token, "desc") ||
           IsInsideWord(token, "nulls") || IsInsideWord(token, "using"))) {
        key_done = true;
      }
    }
    if (IsInsideMark(token, "(") || IsInsideMark(token, "[")) ++depth;
    if (IsInsideMark(token, ")") || IsInsideMark(token, "]")) --depth;
    if (key_done) continue;
    if (!open) open = CallInsidePieces::Range{token.begin, token.end};
    open->end = token.end;
  }
  close();
  return out;
}

}  // namespace

bool IsRecomputedAggregate(std::string_view name) { return FindRecomputed(name) != nullptr; }

bool IsOrderSensitiveAggregate(std::string_view name) {
  const RecomputedAggregate* aggregate = FindRecomputed(name);
  return aggregate && aggregate->order_sensitive;
}

std::vector<std::string_view> RecomputedAggregateNames() {
  std::vector<std::string_view> out;
  for (const auto& aggregate : kRecomputedAggregates) out.push_back(aggregate.name);
  return out;
}

std::optional<std::string> RecomputedCallRefusal(std::string_view name, std::string_view inside) {
  if (!IsOrderSensitiveAggregate(name) || CutCall(inside).ordered) return std::nullopt;
  const std::string call(name);
  return call +
         "(...) without ORDER BY inside the call is not supported: its result depends on "
         "the order PostgreSQL happens to read the group's rows in, which a recompute of "
         "the group does not repeat; say the order inside the call, as in " +
         call + "(" + std::string(inside) + " ORDER BY <columns that tell the rows apart>)";
}

std::vector<std::string> RowExpressions(const AggregateCall& call) {
  if (!call.argument) return {};
  if (call.function != AggregateFunction::kRecomputed) return {*call.argument};
  const std::string_view inside = *call.argument;
  const CallInsidePieces pieces = CutCall(inside);
  std::vector<std::string> out;
  for (const auto* list : {&pieces.arguments, &pieces.order_keys}) {
    for (const auto& range : *list) {
      out.emplace_back(inside.substr(range.begin, range.end - range.begin));
    }
  }
  return out;
}

}  // namespace trellis::grammar
