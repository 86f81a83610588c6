#include "grammar/subquery.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "grammar/aggregate.h"
#include "grammar/lexer.h"
#include "grammar/parser.h"

namespace trellis::grammar {
namespace {

bool IsComparison(const Token& t) {
  static constexpr std::string_view kOperators[] = {"=", "<>", "!=", "<", "<=", ">", ">="};
  if (t.kind != TokenKind::kOperator) return false;
  return std::find(std::begin(kOperators), std::end(kOperators), t.value) != std::end(kOperators);
}

// `a op b` read as `b op' a`.
std::string Reversed(const std::string& op) {
  if (op == "<") return ">";
  if (op == "<=") return ">=";
  if (op == ">") return "<";
  if (op == ">=") return "<=";
  return op;
}

bool ContainsSelect(std::string_view text) {
  constexpr std::string_view kWord = "select";
  if (text.size() < kWord.size()) return false;
  for (std::size_t i = 0; i + kWord.size() <= text.size(); ++i) {
    std::size_t j = 0;
    while (j < kWord.size() && std::tolower(static_cast<unsigned char>(text[i + j])) == kWord[j]) {
      ++j;
    }
    if (j == kWord.size()) return true;
  }
  return false;
}

// Token indexes [first, last).
struct Range {
  std::size_t first = 0;
  std::size_t last = 0;
};

// The forms a subquery may take, for the messages.
constexpr std::string_view kForms =
    "EXISTS (SELECT ...), NOT EXISTS (SELECT ...), q.column IN (SELECT ...), or an expression "
    "compared (=, <>, <, <=, >, >=) to (SELECT <aggregate> ...)";

// Clauses of a SELECT a subquery may not have, each refused by name.
constexpr std::pair<std::string_view, std::string_view> kRefusedClauses[] = {
    {"group", "GROUP BY"}, {"having", "HAVING"}, {"order", "ORDER BY"}, {"limit", "LIMIT"},
    {"offset", "OFFSET"},  {"fetch", "FETCH"},   {"union", "UNION"},    {"intersect", "INTERSECT"},
    {"except", "EXCEPT"},  {"window", "WINDOW"}, {"for", "FOR"},
};

constexpr std::string_view kJoinWords[] = {"join", "inner", "left",    "right",
                                           "full", "cross", "natural", "lateral"};

class WhereReader {
 public:
  WhereReader(const TokenCursor& cursor, const ExprSpan& where,
              const std::vector<std::string>& tables, bool having = false)
      : cursor_(cursor),
        where_(where),
        tables_(tables.begin(), tables.end()),
        ordered_(tables),
        having_(having) {}

  std::variant<std::vector<WhereSubquery>, ParseError> Run() {
    if (!ContainsSelect(where_.text)) return Plain();
    tokens_ = Tokenize(where_.text);
    end_ = tokens_.size() - 1;  // the kEnd token
    std::vector<Range> subqueries;
    for (std::size_t i = 0; i + 1 < end_; ++i) {
      if (!IsMark(tokens_[i], "(") || !IsWord(tokens_[i + 1], "select")) continue;
      // A subquery inside it is its body's (Body), read when that is parsed.
      const std::size_t close = Close(i);
      subqueries.push_back(Range{i, close + 1});
      i = close;
    }
    if (subqueries.empty()) return Plain();

    std::vector<WhereSubquery> out;
    const std::vector<Range> conditions = Conditions(Range{0, end_});
    for (const Range& condition : conditions) {
      std::optional<Range> found;
      for (const Range& sq : subqueries) {
        if (sq.first < condition.first || sq.last > condition.last) continue;
        if (found) {
          return Refuse(sq.first,
                        "two subqueries in one condition are not supported: write each as a "
                        "condition of its own, AND-ed with the others in WHERE");
        }
        found = sq;
      }
      if (!found) continue;
      auto read = Condition(condition, *found);
      if (auto* error = std::get_if<ParseError>(&read)) return *error;
      if (having_) {
        if (auto error = RefuseInHaving(std::get<WhereSubquery>(read), *found)) return *error;
      }
      out.push_back(std::get<WhereSubquery>(std::move(read)));
    }
    // In HAVING, aggregates outside the subqueries are the statement's.
    if (having_) return out;
    // Outside the subqueries, WHERE is a WHERE: no aggregates.
    std::size_t from = 0;
    for (const Range& sq : subqueries) {
      if (auto error = RefuseAggregatesIn(Range{from, sq.first})) return *error;
      from = sq.last;
    }
    if (auto error = RefuseAggregatesIn(Range{from, end_})) return *error;
    return out;
  }

 private:
  std::variant<std::vector<WhereSubquery>, ParseError> Plain() const {
    if (auto error = RefuseAggregates(cursor_, where_, "WHERE")) return *error;
    return std::vector<WhereSubquery>{};
  }

  // The statement offset of token `i`.
  std::size_t At(std::size_t i) const { return where_.position + tokens_[i].begin; }

  ParseError Refuse(std::size_t i, std::string_view what) const {
    return cursor_.UnsupportedAt(At(i), what);
  }

  // The refusal of a clause a subquery may not have (kRefusedClauses) when
  // token `k`, before `last`, begins one; none otherwise.
  std::optional<ParseError> RefusedClause(std::size_t k, std::size_t last) const {
    for (const auto& [word, clause] : kRefusedClauses) {
      if (!IsWord(tokens_[k], word)) continue;
      if ((word == "group" || word == "order") && !(k + 1 < last && IsWord(tokens_[k + 1], "by")))
        continue;
      return Refuse(k, std::string(clause) +
                           " in a subquery is not supported: a subquery in WHERE is one table "
                           "filtered by its WHERE; define a transform for the query and use its "
                           "target in the subquery");
    }
    return std::nullopt;
  }

  std::string Text(Range r) const {
    if (r.first >= r.last) return "";
    return where_.text.substr(tokens_[r.first].begin,
                              tokens_[r.last - 1].end - tokens_[r.first].begin);
  }

  ExprSpan Span(Range r) const { return ExprSpan{Text(r), At(r.first), r.last - r.first, {}}; }

  std::optional<ParseError> RefuseAggregatesIn(Range r) const {
    if (r.first >= r.last) return std::nullopt;
    return RefuseAggregates(cursor_, Span(r), "WHERE");
  }

  // The index of the bracket closing the one at `open` (ScanExpression has
  // checked that they balance).
  std::size_t Close(std::size_t open) const {
    std::size_t depth = 0;
    for (std::size_t i = open; i < end_; ++i) {
      if (IsMark(tokens_[i], "(") || IsMark(tokens_[i], "[")) ++depth;
      if (IsMark(tokens_[i], ")") || IsMark(tokens_[i], "]")) {
        if (--depth == 0) return i;
      }
    }
    return end_;
  }

  // Calls `visit(i)` for each token of `r` outside brackets; stops early
  // when it returns false.
  template <typename Visit>
  void AtDepthZero(Range r, Visit visit) const {
    std::size_t depth = 0;
    for (std::size_t i = r.first; i < r.last; ++i) {
      const Token& t = tokens_[i];
      if (IsMark(t, "(") || IsMark(t, "[")) {
        ++depth;
      } else if (IsMark(t, ")") || IsMark(t, "]")) {
        --depth;
      } else if (depth == 0 && !visit(i)) {
        return;
      }
    }
  }

  // The conditions of `r`'s top-level AND, in order (`BETWEEN a AND b` is
  // one); `r` whole when an OR outside brackets joins them.
  std::vector<Range> Conditions(Range r) const {
    bool or_found = false;
    AtDepthZero(r, [&](std::size_t i) {
      or_found = or_found || IsWord(tokens_[i], "or");
      return !or_found;
    });
    if (or_found) return {r};
    std::vector<Range> out;
    std::size_t first = r.first;
    bool between = false;
    AtDepthZero(r, [&](std::size_t i) {
      if (IsWord(tokens_[i], "between")) between = true;
      if (IsWord(tokens_[i], "and")) {
        if (between) {
          between = false;
        } else {
          out.push_back(Range{first, i});
          first = i + 1;
        }
      }
      return true;
    });
    out.push_back(Range{first, r.last});
    return out;
  }

  bool Contains(Range r, std::string_view word) const {
    for (std::size_t i = r.first; i < r.last; ++i) {
      if (IsWord(tokens_[i], word)) return true;
    }
    return false;
  }

  // `q.column` or, with one table in the statement, `column`: the table's
  // qualifier and the column; nullopt for anything else.
  std::optional<std::pair<std::string, std::string>> OuterColumn(Range r) const {
    const std::size_t n = r.last - r.first;
    if (n == 1 && IsName(tokens_[r.first]) && ordered_.size() == 1 &&
        (tokens_[r.first].kind == TokenKind::kQuotedIdentifier ||
         (!IsWord(tokens_[r.first], "null") && !IsWord(tokens_[r.first], "true") &&
          !IsWord(tokens_[r.first], "false")))) {
      return std::make_pair(ordered_.front(), tokens_[r.first].value);
    }
    if (n == 3 && IsName(tokens_[r.first]) && IsMark(tokens_[r.first + 1], ".") &&
        IsName(tokens_[r.first + 2]) && tables_.count(tokens_[r.first].value)) {
      return std::make_pair(tokens_[r.first].value, tokens_[r.first + 2].value);
    }
    return std::nullopt;
  }

  std::variant<WhereSubquery, ParseError> Condition(Range condition, Range sq) {
    if (Contains(Range{condition.first, sq.first}, "or") ||
        Contains(Range{sq.last, condition.last}, "or")) {
      return Refuse(sq.first,
                    "a subquery under OR is not supported: Trellis compiles a subquery that is "
                    "a condition of its own, AND-ed with the others in WHERE; write each side "
                    "of the OR as a transform of its own, or write the subquery as one of " +
                        std::string(kForms) + " AND-ed with the rest");
    }
    WhereSubquery out;
    out.begin = tokens_[condition.first].begin;
    out.end = tokens_[condition.last - 1].end;
    out.position = At(sq.first);
    const Range before{condition.first, sq.first};
    const Range after{sq.last, condition.last};
    const std::size_t b = before.last - before.first;
    auto word_before = [&](std::size_t back, std::string_view w) {
      return b >= back && IsWord(tokens_[before.last - back], w);
    };
    std::optional<Range> tested;
    if (after.first == after.last && b == 1 && word_before(1, "exists")) {
      out.use = SubqueryUse::kExists;
    } else if (after.first == after.last && b == 2 && word_before(1, "exists") &&
               word_before(2, "not")) {
      out.use = SubqueryUse::kNotExists;
    } else if (after.first == after.last && word_before(1, "in")) {
      const bool negated = word_before(2, "not");
      out.use = negated ? SubqueryUse::kNotIn : SubqueryUse::kIn;
      tested = Range{before.first, before.last - (negated ? 2 : 1)};
    } else if (after.first == after.last && b >= 2 &&
               (word_before(1, "any") || word_before(1, "some") || word_before(1, "all"))) {
      return Refuse(before.last - 1,
                    "a comparison to ANY, SOME or ALL (SELECT ...) is not supported: write "
                    "x IN (SELECT ...) for = ANY, or compare to an aggregate (x > (SELECT "
                    "max(...) ...) for > ALL)");
    } else if (after.first == after.last && b >= 2 && IsComparison(tokens_[before.last - 1])) {
      out.use = SubqueryUse::kCompare;
      out.compared = Text(Range{before.first, before.last - 1});
      out.op = tokens_[before.last - 1].value;
    } else if (b == 0 && after.last - after.first >= 2 && IsComparison(tokens_[after.first])) {
      out.use = SubqueryUse::kCompare;
      out.compared = Text(Range{after.first + 1, after.last});
      out.op = Reversed(tokens_[after.first].value);
    } else if (Contains(before, "not")) {
      return Refuse(sq.first,
                    "NOT around a subquery is not supported (other than NOT EXISTS and NOT IN): "
                    "write NOT EXISTS (SELECT ...) or x NOT IN (SELECT ...), or turn the "
                    "comparison round");
    } else {
      return Refuse(sq.first,
                    "this use of a subquery is not supported: in WHERE, a subquery "
                    "must be a condition of its own, AND-ed with the others: " +
                        std::string(kForms) +
                        "; or define a transform for the subquery and join its target");
    }
    if (out.op == "!=") out.op = "<>";
    if (auto error = Body(Range{sq.first + 1, sq.last - 1}, out)) return *error;
    if (tested) {
      auto column = OuterColumn(*tested);
      if (!column) {
        return Refuse(tested->first < tested->last ? tested->first : sq.first,
                      "the value tested by IN (SELECT ...) must be a column of one of the "
                      "statement's tables, written q.column: compute the expression in a "
                      "transform first, or write EXISTS (SELECT 1 FROM t WHERE t.a = <expr>)");
      }
      if (!out.outer.empty() && out.outer != column->first) {
        return Refuse(tested->first,
                      "the value tested by IN is a column of " + Quoted(column->first) +
                          ", but the subquery is correlated with " + Quoted(out.outer) +
                          ": correlate a subquery with one table of the statement");
      }
      out.outer = column->first;
      out.tested = Correlation{column->second, out.item};
    }
    return out;
  }

  static std::string Quoted(const std::string& name) { return "\"" + name + "\""; }

  // What a subquery in HAVING may be: uncorrelated, compared or tested by
  // EXISTS or NOT EXISTS (its answer is one row for the whole table).
  std::optional<ParseError> RefuseInHaving(const WhereSubquery& sq, Range r) const {
    if (sq.use == SubqueryUse::kIn || sq.use == SubqueryUse::kNotIn) {
      return Refuse(r.first,
                    "IN and NOT IN (SELECT ...) in HAVING are not supported: compare an "
                    "aggregate to an uncorrelated (SELECT <aggregate> ...), or test EXISTS");
    }
    if (!sq.outer.empty()) {
      return Refuse(r.first,
                    "a subquery in HAVING correlated with the statement is not supported: in "
                    "HAVING, a subquery may read only its own tables (as TPC-H Q11's total); "
                    "define this transform without the HAVING, then a transform FROM its target "
                    "whose WHERE holds the correlated subquery");
    }
    return std::nullopt;
  }

  // Outer column references in `r`: `q.c` with q a table of the statement
  // and not one of the subquery's own qualifiers `inner`.
  std::vector<std::size_t> OuterReferences(Range r, const std::set<std::string>& inner) const {
    std::vector<std::size_t> out;
    for (std::size_t i = r.first; i + 2 < r.last; ++i) {
      if (!IsName(tokens_[i]) || !IsMark(tokens_[i + 1], ".") || !IsName(tokens_[i + 2])) continue;
      if (i > 0 && IsMark(tokens_[i - 1], ".")) continue;
      if (IsMark(tokens_[i + 3], "(") || IsMark(tokens_[i + 3], ".")) continue;
      if (!tables_.count(tokens_[i].value) || inner.count(tokens_[i].value)) continue;
      out.push_back(i);
    }
    return out;
  }

  // The subquery's body `r` (inside its brackets): SELECT items FROM table
  // [alias] [WHERE ...].
  std::optional<ParseError> Body(Range r, WhereSubquery& out) {
    std::size_t i = r.first + 1;  // past SELECT
    if (IsWord(tokens_[i], "distinct") || IsWord(tokens_[i], "all")) ++i;
    std::optional<std::size_t> from;
    AtDepthZero(Range{i, r.last}, [&](std::size_t k) {
      if (IsWord(tokens_[k], "from")) from = k;
      return !from;
    });
    if (!from) {
      return Refuse(r.first, "a subquery without FROM is not supported: write the value itself");
    }
    std::vector<Range> items;
    std::size_t first = i;
    AtDepthZero(Range{i, *from}, [&](std::size_t k) {
      if (IsMark(tokens_[k], ",")) {
        items.push_back(Range{first, k});
        first = k + 1;
      }
      return true;
    });
    items.push_back(Range{first, *from});
    for (Range& item : items) {  // drop `AS name`
      AtDepthZero(item, [&](std::size_t k) {
        if (!IsWord(tokens_[k], "as")) return true;
        item.last = k;
        return false;
      });
      if (item.first >= item.last) return Refuse(r.first, "empty SELECT item in a subquery");
    }

    for (const Range& item : items) {
      if (HasSubquery(item)) {
        return Refuse(item.first,
                      "a subquery inside a subquery's SELECT item is not supported: define a "
                      "transform for the inner query and JOIN its target in the subquery");
      }
    }

    std::size_t at = *from + 1;
    if (at < r.last && (IsWord(tokens_[at], "lateral") || IsMark(tokens_[at], "("))) {
      return Refuse(at,
                    "a subquery or LATERAL in a subquery's FROM is not supported: define a "
                    "transform for it and use its target");
    }
    if (at >= r.last || !IsName(tokens_[at])) {
      return Refuse(at < r.last ? at : r.first, "expected a table name after FROM in the subquery");
    }
    // Its FROM runs to a WHERE outside brackets, or to its end.
    std::size_t where_word = r.last;
    AtDepthZero(Range{at, r.last}, [&](std::size_t k) {
      if (IsWord(tokens_[k], "where")) where_word = k;
      return where_word == r.last;
    });
    std::optional<Range> where;
    if (where_word < r.last) where = Range{where_word + 1, r.last};
    std::optional<ParseError> error;
    bool joined = false;
    AtDepthZero(Range{at, r.last}, [&](std::size_t k) {
      if (k < where_word && IsMark(tokens_[k], ",")) {
        error = Refuse(k,
                       "a comma-separated FROM in a subquery is not supported: write its tables "
                       "with JOIN ... ON");
      } else if (k < where_word && IsJoin(tokens_[k])) {
        joined = true;
      } else {
        error = RefusedClause(k, r.last);
      }
      return !error;
    });
    if (error) return error;
    if (where && where->first >= where->last) return Refuse(r.first, "empty WHERE in a subquery");
    if (joined || (where && HasSubquery(*where))) {
      return BodyQuery(r, items, Range{at, where_word}, where, out);
    }

    out.from.table.name = tokens_[at++].value;
    if (at + 1 < r.last && IsMark(tokens_[at], ".") && IsName(tokens_[at + 1])) {
      out.from.table.schema = out.from.table.name;
      out.from.table.name = tokens_[at + 1].value;
      at += 2;
    }
    if (at < r.last && IsWord(tokens_[at], "as")) ++at;
    if (at < r.last && IsName(tokens_[at]) && !IsWord(tokens_[at], "where") &&
        !IsClauseOrJoin(tokens_[at])) {
      out.from.alias = tokens_[at++].value;
    }
    if (at < where_word) {
      return Refuse(at, "expected WHERE or the end of the subquery after its table");
    }
    if (where) {
      if (auto e = RefuseAggregates(cursor_, Span(*where), "WHERE")) return e;
    }
    const std::set<std::string> inner{out.from.Qualifier()};
    if (auto e = Correlations(where, inner, true, out)) return e;
    return Items(items, inner, out);
  }

  bool HasSubquery(Range r) const {
    for (std::size_t k = r.first; k + 1 < r.last; ++k) {
      if (IsMark(tokens_[k], "(") && IsWord(tokens_[k + 1], "select")) return true;
    }
    return false;
  }

  // The names a table is read by in `r`: after FROM or JOIN, `table [AS]
  // [alias]`, at any depth (a subquery inside a subquery names its own).
  std::set<std::string> Qualifiers(Range r) const {
    std::set<std::string> out;
    for (std::size_t k = r.first; k + 1 < r.last; ++k) {
      if (!IsWord(tokens_[k], "from") && !IsWord(tokens_[k], "join")) continue;
      std::size_t t = k + 1;
      if (!IsName(tokens_[t])) continue;
      std::string name = tokens_[t++].value;
      if (t + 1 < r.last && IsMark(tokens_[t], ".") && IsName(tokens_[t + 1])) {
        name = tokens_[t + 1].value;
        t += 2;
      }
      if (t < r.last && IsWord(tokens_[t], "as")) ++t;
      if (t < r.last && IsName(tokens_[t]) && !IsWord(tokens_[t], "where") &&
          !IsWord(tokens_[t], "on") && !IsWord(tokens_[t], "using") &&
          !IsClauseOrJoin(tokens_[t])) {
        name = tokens_[t].value;
      }
      out.insert(name);
    }
    return out;
  }

  // A subquery that joins tables, or holds subqueries of its own, reads a
  // query of its own (WhereSubquery::body): its FROM as written, its WHERE
  // without the correlations, and SELECT what the subquery uses of them.
  // The body is parsed as a TRANSFORM is, so it may be anything one may
  // be (a join of any shape, subqueries in WHERE); the subquery is then
  // rewritten over the body's columns and read as over one table.
  std::optional<ParseError> BodyQuery(Range r, const std::vector<Range>& items, Range from,
                                      std::optional<Range> where, WhereSubquery& out) {
    const std::set<std::string> inner = Qualifiers(Range{from.first - 1, r.last});
    if (auto e = Correlations(where, inner, false, out)) return e;
    if (auto e = Items(items, inner, out)) return e;

    const std::string alias = kSubqueryBodyAlias;
    std::string select;
    auto column = [&](const std::string& expr, const std::string& name) {
      select += (select.empty() ? "" : ", ") + expr + " AS " + name;
      return alias + "." + name;
    };
    for (std::size_t k = 0; k < out.correlations.size(); ++k) {
      out.correlations[k].inner = column(out.correlations[k].inner, "c" + std::to_string(k + 1));
    }
    if (out.differs) {
      out.differs->inner =
          column(out.differs->inner, "c" + std::to_string(out.correlations.size() + 1));
    }
    if (out.use == SubqueryUse::kIn || out.use == SubqueryUse::kNotIn) {
      out.item = column(out.item, "v");
    }
    if (out.use == SubqueryUse::kCompare) {
      // Each aggregate's argument is a column of the body; the item keeps
      // its arithmetic around the calls.
      std::string item;
      std::size_t copied = 0;
      for (std::size_t k = 0; k < out.item_uses.size(); ++k) {
        AggregateUse& use = out.item_uses[k];
        if (use.call.function == AggregateFunction::kRecomputed) {
          return Refuse(items.front().first,
                        CallName(use.call) +
                            " in a subquery that joins tables is not supported: compare to "
                            "count, sum, avg, min, max, bool_and or bool_or, or define a "
                            "transform for the subquery's query");
        }
        item += out.item.substr(copied, use.begin - copied);
        if (use.call.argument) {
          use.call.argument = column(*use.call.argument, "a" + std::to_string(k + 1));
        }
        const std::string call = CallName(use.call) + "(" + (use.call.distinct ? "DISTINCT " : "") +
                                 use.call.argument.value_or("*") + ")";
        copied = use.end;
        use.begin = item.size();
        item += call;
        use.end = item.size();
      }
      out.item = item + out.item.substr(copied);
    }
    if (select.empty()) select = "true AS one";
    std::string text = "TRANSFORM " + alias + " FROM " + Text(from) + " SELECT " + select;
    if (out.where) text += " WHERE " + *out.where;
    auto parsed = Parse(text);
    if (auto* e = std::get_if<ParseError>(&parsed)) {
      // Its position is in the text above: the message names the subquery.
      const std::size_t colon = e->message.find(": ");
      const std::string what =
          colon == std::string::npos ? e->message : e->message.substr(colon + 2);
      ParseError refused = Refuse(r.first - 1, "in this subquery: " + what);
      refused.kind = e->kind;
      return refused;
    }
    auto* body = std::get_if<TransformStmt>(&std::get<Statement>(parsed));
    if (!body) return Refuse(r.first, "expected a query in the subquery");
    out.body.push_back(std::move(*body));
    out.where.reset();
    out.from = TableRef{QualifiedName{std::nullopt, alias}, alias};
    return std::nullopt;
  }

  static bool IsJoin(const Token& t) {
    return std::any_of(std::begin(kJoinWords), std::end(kJoinWords),
                       [&](std::string_view w) { return IsWord(t, w); });
  }

  static bool IsClauseOrJoin(const Token& t) {
    if (IsJoin(t)) return true;
    return std::any_of(std::begin(kRefusedClauses), std::end(kRefusedClauses),
                       [&](const auto& c) { return IsWord(t, c.first); });
  }

  // Splits the subquery's WHERE into its correlations and the rest.
  // The rest is AND-ed in `out.where`, each condition bracketed for the
  // grouping's WHERE; unbracketed for a query of its own, whose parser
  // must find a subquery in it as a condition of its own.
  std::optional<ParseError> Correlations(std::optional<Range> where,
                                         const std::set<std::string>& inner, bool bracketed,
                                         WhereSubquery& out) {
    if (!where) return std::nullopt;
    std::vector<std::string> local;
    for (const Range& c : Conditions(*where)) {
      const std::vector<std::size_t> refs = OuterReferences(c, inner);
      if (refs.empty()) {
        local.push_back(Text(c));
        continue;
      }
      // inner = q.c or q.c = inner, inner being `c` or `inner.c`; or the
      // same with `<>` (`!=`), in EXISTS and NOT EXISTS.
      std::optional<std::size_t> eq;
      AtDepthZero(c, [&](std::size_t k) {
        const Token& t = tokens_[k];
        if (t.kind == TokenKind::kOperator &&
            (t.value == "=" || t.value == "<>" || t.value == "!="))
          eq = k;
        return !eq;
      });
      const bool differs = eq && tokens_[*eq].value != "=";
      std::optional<Correlation> found;
      std::string outer;
      if (eq && refs.size() == 1) {
        const Range left{c.first, *eq};
        const Range right{*eq + 1, c.last};
        const bool outer_left = refs.front() == c.first && left.last - left.first == 3;
        const bool outer_right = refs.front() == right.first && right.last - right.first == 3;
        const Range inner_side = outer_left ? right : left;
        if ((outer_left || outer_right) && InnerColumn(inner_side, inner)) {
          const std::size_t q = refs.front();
          outer = tokens_[q].value;
          found = Correlation{tokens_[q + 2].value, Text(inner_side)};
        }
      }
      if (!found) {
        return Refuse(refs.front(),
                      "a subquery correlated by anything but equalities (and, in EXISTS or NOT "
                      "EXISTS, one <>) is not supported: in its WHERE, compare a column of the "
                      "statement's tables only as inner_column = q.column (or, once, "
                      "inner_column <> q.column), AND-ed with its other conditions");
      }
      if (differs && out.use != SubqueryUse::kExists && out.use != SubqueryUse::kNotExists) {
        return Refuse(*eq,
                      "a correlation by <> is supported in EXISTS and NOT EXISTS only: write "
                      "EXISTS (SELECT 1 FROM ... WHERE inner_column <> q.column ...), or "
                      "correlate by equalities");
      }
      if (differs && out.differs) {
        return Refuse(*eq,
                      "a subquery correlated by two <> is not supported: correlate it by "
                      "equalities and at most one <>, or define a transform for the pairs "
                      "of rows and test its target");
      }
      if (!out.outer.empty() && out.outer != outer) {
        return Refuse(refs.front(), "a subquery correlated with two tables of the statement (" +
                                        Quoted(out.outer) + " and " + Quoted(outer) +
                                        ") is not supported: correlate it with one table");
      }
      out.outer = outer;
      if (differs) {
        out.differs = std::move(*found);
      } else {
        out.correlations.push_back(std::move(*found));
      }
    }
    if (!local.empty()) {
      std::string text;
      for (const auto& l : local) {
        if (!text.empty()) text += " AND ";
        text += bracketed ? "(" + l + ")" : l;
      }
      out.where = std::move(text);
    }
    return std::nullopt;
  }

  // `c` or `t.c`, t one of `inner`.
  bool InnerColumn(Range r, const std::set<std::string>& inner) const {
    const std::size_t n = r.last - r.first;
    if (n == 1) return IsName(tokens_[r.first]);
    return n == 3 && IsName(tokens_[r.first]) && inner.count(tokens_[r.first].value) &&
           IsMark(tokens_[r.first + 1], ".") && IsName(tokens_[r.first + 2]);
  }

  std::optional<ParseError> Items(const std::vector<Range>& items,
                                  const std::set<std::string>& inner, WhereSubquery& out) {
    for (const Range& item : items) {
      auto aggregates = ReadAggregates(cursor_, Span(item), AggregateContext::kSubquery);
      if (auto* error = std::get_if<ParseError>(&aggregates)) return *error;
      const bool has_aggregate = !std::get<AggregatesRead>(aggregates).uses.empty();
      if (out.use == SubqueryUse::kExists || out.use == SubqueryUse::kNotExists) {
        if (has_aggregate) {
          return Refuse(item.first,
                        "EXISTS (SELECT <aggregate> ...) is always true, since an aggregate "
                        "without GROUP BY gives one row: compare the aggregate instead, as "
                        "(SELECT count(*) FROM ...) > 0");
        }
        continue;
      }
      if (items.size() != 1) {
        return Refuse(items[1].first,
                      "a subquery tested with IN or compared must select one column");
      }
      const std::vector<std::size_t> refs = OuterReferences(item, inner);
      if (!refs.empty()) {
        return Refuse(refs.front(),
                      "the subquery's SELECT item uses a column of the statement around it: "
                      "correlate the subquery in its WHERE only (inner_column = q.column)");
      }
      out.item = Text(item);
      if (out.use == SubqueryUse::kIn && has_aggregate) {
        return Refuse(item.first,
                      "IN (SELECT <aggregate> ...) is not supported: compare to it with = "
                      "(SELECT ...)");
      }
      if (out.use == SubqueryUse::kCompare) {
        if (!has_aggregate) {
          return Refuse(item.first,
                        "a subquery compared to a value must compute an aggregate (count, sum, "
                        "avg, min, max, bool_and, bool_or), which gives one value: for a column "
                        "of another table, JOIN it");
        }
        out.item_uses = std::get<AggregatesRead>(std::move(aggregates)).uses;
      }
    }
    return std::nullopt;
  }

  const TokenCursor& cursor_;
  const ExprSpan& where_;
  std::set<std::string> tables_;
  std::vector<std::string> ordered_;
  std::vector<Token> tokens_;
  std::size_t end_ = 0;
  bool having_ = false;
};

}  // namespace

std::optional<std::size_t> FirstSubquery(const ExprSpan& expr) {
  if (!ContainsSelect(expr.text)) return std::nullopt;
  const std::vector<Token> tokens = Tokenize(expr.text);
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (IsMark(tokens[i], "(") && IsWord(tokens[i + 1], "select")) return tokens[i].begin;
  }
  return std::nullopt;
}

std::variant<std::vector<WhereSubquery>, ParseError> ReadWhereSubqueries(
    const TokenCursor& cursor, const ExprSpan& where, const std::vector<std::string>& tables) {
  return WhereReader(cursor, where, tables).Run();
}

std::variant<std::vector<WhereSubquery>, ParseError> ReadHavingSubqueries(
    const TokenCursor& cursor, const ExprSpan& having, const std::vector<std::string>& tables) {
  return WhereReader(cursor, having, tables, true).Run();
}

std::vector<std::pair<std::size_t, std::size_t>> SubqueryBrackets(const ExprSpan& expr) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (!ContainsSelect(expr.text)) return out;
  const std::vector<Token> tokens = Tokenize(expr.text);
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (!IsMark(tokens[i], "(") || !IsWord(tokens[i + 1], "select")) continue;
    std::size_t depth = 0;
    std::size_t k = i;
    for (; k + 1 < tokens.size(); ++k) {
      if (IsMark(tokens[k], "(") || IsMark(tokens[k], "[")) ++depth;
      if ((IsMark(tokens[k], ")") || IsMark(tokens[k], "]")) && --depth == 0) break;
    }
    out.emplace_back(tokens[i].begin, tokens[k].end);
    i = k;
  }
  return out;
}

std::string SubqueryWords(const WhereSubquery& sq) {
  if (!sq.named.empty()) return sq.named;
  return "the subquery at position " + std::to_string(sq.position);
}

}  // namespace trellis::grammar
