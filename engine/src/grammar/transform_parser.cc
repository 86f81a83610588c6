#include "grammar/transform_parser.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/aggregate.h"
#include "grammar/derived.h"
#include "grammar/distinct_on.h"
#include "grammar/expression.h"
#include "grammar/join.h"
#include "grammar/names.h"
#include "grammar/parser.h"
#include "grammar/render.h"
#include "grammar/select_item.h"
#include "grammar/subquery.h"

namespace trellis::grammar {
namespace {

class TransformParser {
 public:
  explicit TransformParser(TokenCursor& cursor, bool query = false)
      : cursor_(cursor), query_(query) {}

  // A query in parentheses (the cursor after its "("): FROM, joins, the
  // SELECT list, WHERE, GROUP BY, HAVING (and DISTINCT ON's ORDER BY), up
  // to the ")" that closes it, which is left for the caller.
  std::variant<TransformStmt, ParseError> RunQuery() {
    if (cursor_.AtKeyword("select")) {
      return cursor_.ErrorAt(cursor_.Peek().begin, std::string(kSelectFirst));
    }
    if (!cursor_.AtKeyword("from")) return cursor_.Expected("FROM and a query after \"(\"");
    cursor_.Advance();
    if (auto error = ParseSourceAndJoins()) return *error;
    if (auto error = ParseSelectList()) return *error;
    if (auto error = RefuseInQuery()) return *error;
    if (cursor_.AtKeyword("where")) {
      if (auto error = ParseWhere()) return *error;
      after_ = Clause::kWhere;
    }
    if (auto error = RefuseInQuery()) return *error;
    if (auto error = ParseGroupingAndOrder(&TransformParser::RefuseInQuery)) return *error;
    if (cursor_.Peek().kind == TokenKind::kEnd || cursor_.AtPunctuation(";")) {
      return cursor_.ErrorAt(open_,
                             "unbalanced parentheses: the \"(\" of the query is never "
                             "closed");
    }
    if (!cursor_.AtPunctuation(")")) {
      return cursor_.Expected("WHERE, GROUP BY, HAVING or \")\" to close the query");
    }
    if (auto error = RefuseRedundantDistinct()) return *error;
    if (auto error = CheckDistinctOn()) return *error;
    if (auto error = CompileHavingSubqueries()) return *error;
    return statement_;
  }

  // One branch after UNION ALL (the cursor at its FROM): FROM, joins, the
  // SELECT list and WHERE; GROUP BY, HAVING and the SELECT clauses Trellis
  // refuses are refused by name, anything else ends the branch.
  std::variant<TransformStmt, ParseError> RunBranch() {
    if (!cursor_.AtKeyword("from")) return cursor_.Expected("FROM after UNION ALL");
    cursor_.Advance();
    if (auto error = ParseSourceAndJoins()) return *error;
    if (auto error = ParseSelectList()) return *error;
    if (auto error = RefuseUnsupportedClause()) return *error;
    if (cursor_.AtKeyword("where")) {
      if (auto error = ParseWhere()) return *error;
      after_ = Clause::kWhere;
    }
    if (cursor_.AtKeyword("group") || cursor_.AtKeyword("having")) {
      return cursor_.UnsupportedAt(cursor_.Peek().begin, kGroupedBranch);
    }
    if (auto error = RefuseUnsupportedClause()) return *error;
    return statement_;
  }

  std::variant<TransformStmt, ParseError> Run() {
    if (auto error = ParseTables()) return *error;
    if (auto error = ParseSelectList()) return *error;
    if (auto error = RefuseUnsupportedClause()) return *error;
    if (cursor_.AtKeyword("where")) {
      if (auto error = ParseWhere()) return *error;
      after_ = Clause::kWhere;
    }
    if (auto error = RefuseUnsupportedClause()) return *error;
    if (AtUnionAll()) {
      if (auto error = ParseUnionAll()) return *error;
      after_ = Clause::kUnionAll;
    }
    if (auto error = ParseGroupingAndOrder(&TransformParser::RefuseUnsupportedClause)) {
      return *error;
    }
    if (cursor_.AtKeyword("without") && !cursor_.AtKeyword("row", 1)) {
      if (auto error = ParseWithoutSourceIndex()) return *error;
      after_ = Clause::kWithoutSourceIndex;
    }
    if (cursor_.AtKeyword("without") && cursor_.AtKeyword("row", 1)) {
      if (auto error = ParseWithoutRowSecurity()) return *error;
      after_ = Clause::kWithoutRowSecurity;
    }
    if (cursor_.AtKeyword("grant")) {
      if (auto error = ParseGrantSelect()) return *error;
      after_ = Clause::kGrantSelect;
    }
    if (auto error = cursor_.ExpectEnd(ExpectedAfter())) return *error;
    if (auto error = RefuseRedundantDistinct()) return *error;
    if (auto error = CheckDistinctOn()) return *error;
    if (auto error = CheckUnionAll()) return *error;
    if (auto error = CheckWithReads()) return *error;
    if (auto error = CompileHavingSubqueries()) return *error;
    return statement_;
  }

 private:
  static constexpr std::string_view kSelectFirst =
      "a query in parentheses is written FROM first, as a TRANSFORM is: (FROM t [JOIN ...] "
      "SELECT ... [WHERE ...] [GROUP BY ...]); found SELECT";

  // GROUP BY, HAVING, then DISTINCT ON's ORDER BY, as a statement and a
  // query in parentheses both read them; `refuse` (RefuseInQuery or
  // RefuseUnsupportedClause) names a clause that neither keeps, after
  // HAVING and after ORDER BY.
  std::optional<ParseError> ParseGroupingAndOrder(
      std::optional<ParseError> (TransformParser::*refuse)() const) {
    if (cursor_.AtKeyword("group")) {
      if (auto error = ParseGroupBy()) return *error;
      after_ = Clause::kGroupBy;
    }
    if (cursor_.AtKeyword("having")) {
      if (auto error = ParseHaving()) return *error;
      after_ = Clause::kHaving;
    }
    if (auto error = (this->*refuse)()) return *error;
    if (cursor_.AtKeyword("order") && cursor_.AtKeyword("by", 1)) {
      if (auto error = ParseOrderBy()) return *error;
      after_ = Clause::kOrderBy;
    }
    return (this->*refuse)();
  }

  // The clauses a query in parentheses does not keep, by name.
  std::optional<ParseError> RefuseInQuery() const {
    const std::size_t at = cursor_.Peek().begin;
    if (cursor_.AtKeyword("order") && cursor_.AtKeyword("by", 1) &&
        (statement_.distinct_on.empty() || after_ >= Clause::kOrderBy)) {
      return cursor_.UnsupportedAt(
          at,
          "ORDER BY inside a query in FROM or WITH is not supported: the rows it gives the "
          "statement have no order, in SQL as in a target; remove it, and order when you read "
          "the target");
    }
    if (cursor_.AtKeyword("limit") || cursor_.AtKeyword("offset") ||
        (cursor_.AtKeyword("fetch") && cursor_.AtKeyword("first", 1))) {
      return cursor_.UnsupportedAt(
          at,
          "LIMIT, OFFSET and FETCH inside a query in FROM or WITH are not supported: which rows "
          "they keep changes with every write to its tables; remove them, and limit when you "
          "read the target");
    }
    if (cursor_.AtKeyword("union") || cursor_.AtKeyword("intersect") ||
        cursor_.AtKeyword("except")) {
      return cursor_.UnsupportedAt(
          at,
          "UNION, INTERSECT and EXCEPT inside a query in FROM or WITH are not supported: define "
          "the UNION ALL as a transform of its own, then read its target in FROM");
    }
    return RefuseUnsupportedClause();
  }

  // WITH name AS (query) [, ...], after the target name.
  std::optional<ParseError> ParseWith() {
    cursor_.Advance();
    if (cursor_.AtKeyword("recursive")) {
      return cursor_.UnsupportedAt(
          cursor_.Peek().begin,
          "WITH RECURSIVE is not supported: a recursive query reads its own rows to any depth, "
          "which no fixed set of stages keeps; keep the recursion's result in a table your "
          "application writes (or run the query when you read), and define the transform over "
          "that");
    }
    std::map<std::string, std::size_t> seen;
    while (true) {
      const std::size_t at = cursor_.Peek().begin;
      auto name = ParseName(cursor_, statement_.with.empty() ? "a query name after WITH"
                                                             : "a query name after \",\"");
      if (auto* error = std::get_if<ParseError>(&name)) return *error;
      auto [first, inserted] = seen.emplace(std::get<std::string>(name), at);
      if (!inserted) {
        return cursor_.ErrorAt(at, "WITH query \"" + first->first +
                                       "\" is named twice (first at position " +
                                       std::to_string(first->second) + ")");
      }
      if (cursor_.AtPunctuation("(")) {
        return cursor_.UnsupportedAt(
            cursor_.Peek().begin,
            "a column list after a WITH query's name is not supported: name the columns in "
            "its SELECT list (expr AS name)");
      }
      if (!cursor_.AtKeyword("as")) return cursor_.Expected("AS after the WITH query's name");
      cursor_.Advance();
      if (cursor_.AtKeyword("materialized") ||
          (cursor_.AtKeyword("not") && cursor_.AtKeyword("materialized", 1))) {
        return cursor_.UnsupportedAt(
            cursor_.Peek().begin,
            "MATERIALIZED and NOT MATERIALIZED are not supported: a WITH query is always kept "
            "as a stage of its own; remove it");
      }
      if (!cursor_.AtPunctuation("(")) return cursor_.Expected("\"(\" and the query after AS");
      const std::size_t open = cursor_.Advance().begin;
      if (cursor_.AtKeyword("insert") || cursor_.AtKeyword("update") ||
          cursor_.AtKeyword("delete") || cursor_.AtKeyword("merge")) {
        return cursor_.UnsupportedAt(
            cursor_.Peek().begin,
            "a data-modifying WITH query (INSERT, UPDATE, DELETE, MERGE) is not supported: a "
            "transform only reads; write the data from your application, and read its table "
            "in the transform");
      }
      auto query = ParseQuery(open);
      if (auto* error = std::get_if<ParseError>(&query)) return *error;
      TransformStmt& q = std::get<TransformStmt>(query);
      q.target = QualifiedName{std::nullopt, std::get<std::string>(std::move(name))};
      with_positions_.push_back(at);
      statement_.with.push_back(std::move(q));
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  // A query in parentheses (the cursor after its "("), and the ")" closing it.
  std::variant<TransformStmt, ParseError> ParseQuery(std::size_t open) {
    cursor_.EnterQuery();
    TransformParser inner(cursor_, true);
    inner.open_ = open;
    auto parsed = inner.RunQuery();
    cursor_.LeaveQuery();
    if (std::holds_alternative<ParseError>(parsed)) return parsed;
    cursor_.Advance();  // the ")"
    return parsed;
  }

  // (query) [AS] alias in FROM.
  std::optional<ParseError> ParseDerivedTable() {
    const std::size_t at = cursor_.Advance().begin;
    if (cursor_.AtKeyword("insert") || cursor_.AtKeyword("update") || cursor_.AtKeyword("delete") ||
        cursor_.AtKeyword("merge") || cursor_.AtKeyword("with")) {
      return cursor_.UnsupportedAt(
          cursor_.Peek().begin,
          "a query in FROM is a FROM ... SELECT ... query, without WITH, INSERT, UPDATE, DELETE "
          "or MERGE; write a WITH query after the target name instead");
    }
    auto query = ParseQuery(at);
    if (auto* error = std::get_if<ParseError>(&query)) return *error;
    auto alias = ParseOptionalAlias(cursor_);
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    auto name = std::get<std::optional<std::string>>(std::move(alias));
    if (!name) {
      return cursor_.ErrorAt(at,
                             "a query in FROM needs a name: write (FROM ... SELECT ...) AS "
                             "<name>, and qualify its columns with that name");
    }
    if (cursor_.AtPunctuation("(")) {
      return cursor_.UnsupportedAt(cursor_.Peek().begin,
                                   "a column list after a query's name is not supported: name "
                                   "the columns in its SELECT list (expr AS name)");
    }
    TransformStmt& q = std::get<TransformStmt>(query);
    q.target = QualifiedName{std::nullopt, *name};
    statement_.derived.push_back(std::move(q));
    statement_.source = TableRef{QualifiedName{std::nullopt, *name}, *name};
    return std::nullopt;
  }

  // Every WITH query is read by the statement (grammar/derived.h).
  std::optional<ParseError> CheckWithReads() const {
    const std::vector<std::size_t> reads = WithReadCounts(statement_);
    for (std::size_t k = 0; k < reads.size(); ++k) {
      if (reads[k] > 0) continue;
      return cursor_.UnsupportedAt(
          with_positions_[k],
          "WITH query " + RenderWithName(statement_.with[k]) +
              " is never read: it would be kept as a stage for nothing; read it in FROM or JOIN "
              "(FROM " +
              RenderWithName(statement_.with[k]) + " ...), or remove it");
    }
    return std::nullopt;
  }
  static constexpr std::string_view kGroupedBranch =
      "a grouping (GROUP BY, HAVING, DISTINCT or aggregates) in UNION ALL is not supported: "
      "each branch is kept row by row; define the grouping as a transform, then UNION ALL "
      "FROM its target";

  bool AtUnionAll() const { return cursor_.AtKeyword("union") && cursor_.AtKeyword("all", 1); }

  // { UNION ALL branch }: each branch read by a parser of its own.
  std::optional<ParseError> ParseUnionAll() {
    while (AtUnionAll()) {
      const std::size_t at = cursor_.Advance().begin;
      cursor_.Advance();
      TransformParser branch(cursor_);
      branch.branch_ = true;
      auto parsed = branch.RunBranch();
      if (auto* error = std::get_if<ParseError>(&parsed)) return *error;
      union_positions_.push_back(at);
      statement_.union_all.push_back(std::get<TransformStmt>(std::move(parsed)));
    }
    return std::nullopt;
  }

  // What a UNION ALL must be (spec/grammar.md section 13): every branch a
  // projection or join without subqueries, and every branch naming the
  // same columns in the same order as the first.
  std::optional<ParseError> CheckUnionAll() const {
    if (statement_.union_all.empty()) return std::nullopt;
    for (std::size_t b = 0; b <= statement_.union_all.size(); ++b) {
      const TransformStmt& branch = b == 0 ? statement_ : statement_.union_all[b - 1];
      const std::size_t at = union_positions_[b == 0 ? 0 : b - 1];
      if (branch.Groups()) return cursor_.UnsupportedAt(at, kGroupedBranch);
      if (branch.HasSubqueries()) {
        return cursor_.UnsupportedAt(
            branch.subqueries.front().position,
            "a subquery in the WHERE of a UNION ALL branch is not supported: define that "
            "branch as a transform (with its subquery), then UNION ALL FROM its target");
      }
      if (b == 0) continue;
      const auto& first = statement_.select;
      if (branch.select.size() != first.size()) {
        return cursor_.UnsupportedAt(
            at, "the UNION ALL branch at position " + std::to_string(at) + " selects " +
                    std::to_string(branch.select.size()) + " columns and the first branch " +
                    std::to_string(first.size()) +
                    ": every branch must select the target's columns, in the same order");
      }
      for (std::size_t i = 0; i < first.size(); ++i) {
        if (branch.select[i].alias == first[i].alias) continue;
        return cursor_.UnsupportedAt(
            branch.select[i].position,
            "column " + std::to_string(i + 1) + " of the UNION ALL branch at position " +
                std::to_string(at) + " is named \"" + branch.select[i].alias +
                "\" where the first branch names it \"" + first[i].alias +
                "\": a target column has one name; write " + branch.select[i].expr + " AS \"" +
                first[i].alias + "\" (every branch names the columns alike, in the same order)");
      }
    }
    return std::nullopt;
  }

  // The clauses after the SELECT list, in the order they must come.
  enum class Clause {
    kSelectList,
    kWhere,
    kGroupBy,
    kHaving,
    kOrderBy,
    kUnionAll,
    kWithoutSourceIndex,
    kWithoutRowSecurity,
    kGrantSelect
  };

  // What may still follow the last clause read, for the error at a token
  // that is none of it.
  std::string ExpectedAfter() const {
    static constexpr std::pair<Clause, std::string_view> kLater[] = {
        {Clause::kWhere, "WHERE"},
        {Clause::kGroupBy, "GROUP BY"},
        {Clause::kHaving, "HAVING"},
        {Clause::kWithoutSourceIndex, "WITHOUT SOURCE INDEX"},
        {Clause::kWithoutRowSecurity, "WITHOUT ROW SECURITY"},
        {Clause::kGrantSelect, "GRANT SELECT TO"},
    };
    std::string text = after_ == Clause::kSelectList || after_ == Clause::kGroupBy ||
                               after_ == Clause::kOrderBy || after_ == Clause::kGrantSelect
                           ? "\",\", "
                           : "";
    for (const auto& [clause, words] : kLater) {
      if (clause > after_) text += std::string(words) + ", ";
    }
    if (!text.empty()) text.replace(text.size() - 2, 2, " or ");
    text += "end of statement after ";
    switch (after_) {
      case Clause::kSelectList:
        return text + "the column alias";
      case Clause::kWhere:
        return text + "the WHERE predicate";
      case Clause::kGroupBy:
        return text + "the GROUP BY expression";
      case Clause::kHaving:
        return text + "the HAVING condition";
      case Clause::kOrderBy:
        return text + "the ORDER BY item";
      case Clause::kUnionAll:
        return text + "the UNION ALL branch";
      case Clause::kWithoutSourceIndex:
        return text + "WITHOUT SOURCE INDEX";
      case Clause::kWithoutRowSecurity:
        return text + "WITHOUT ROW SECURITY";
      case Clause::kGrantSelect:
        return text + "the role name";
    }
    return text;
  }

  // target FROM source [[AS] alias] {[INNER | LEFT] JOIN ...}
  std::optional<ParseError> ParseTables() {
    auto target = ParseQualifiedName(cursor_, "the target table name after TRANSFORM");
    if (auto* error = std::get_if<ParseError>(&target)) return *error;
    statement_.target = std::get<QualifiedName>(std::move(target));
    if (cursor_.AtKeyword("with")) {
      if (auto error = ParseWith()) return *error;
      if (!cursor_.AtKeyword("from")) return cursor_.Expected("FROM after the WITH queries");
    }
    if (!cursor_.AtKeyword("from")) return cursor_.Expected("FROM after the target name");
    cursor_.Advance();
    return ParseSourceAndJoins();
  }

  // source [[AS] alias] {[INNER | LEFT] JOIN ...}, after FROM.
  std::optional<ParseError> ParseSourceAndJoins() {
    const std::size_t at = cursor_.Peek().begin;
    if (cursor_.AtKeyword("lateral")) {
      return cursor_.UnsupportedAt(
          at,
          "LATERAL is not supported: a lateral query reads a row of the tables before it, "
          "which no stage keeps; write the query as a WITH query grouped by the column it "
          "would correlate on, and JOIN it on that column");
    }
    if (cursor_.AtPunctuation("(")) {
      if (query_) {
        return cursor_.UnsupportedAt(
            at,
            "a query in FROM inside a query in parentheses is not supported: write the inner "
            "one as a WITH query before it (WITH a AS (FROM ...), b AS (FROM a ...)), then "
            "read it by name");
      }
      if (branch_) {
        return cursor_.UnsupportedAt(
            at,
            "a query in the FROM of a UNION ALL branch is not supported: write it as a WITH "
            "query after the target name, then UNION ALL FROM its name");
      }
      if (auto error = ParseDerivedTable()) return *error;
      auto joins = ParseJoins(cursor_, statement_.source);
      if (auto* error = std::get_if<ParseError>(&joins)) return *error;
      statement_.joins = std::get<std::vector<JoinClause>>(std::move(joins));
      return std::nullopt;
    }
    auto source = ParseQualifiedName(cursor_, "the source table name after FROM");
    if (auto* error = std::get_if<ParseError>(&source)) return *error;
    statement_.source.table = std::get<QualifiedName>(std::move(source));
    auto alias = ParseOptionalAlias(cursor_);
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    statement_.source.alias = std::get<std::optional<std::string>>(std::move(alias));
    auto joins = ParseJoins(cursor_, statement_.source);
    if (auto* error = std::get_if<ParseError>(&joins)) return *error;
    statement_.joins = std::get<std::vector<JoinClause>>(std::move(joins));
    return std::nullopt;
  }

  // SELECT [DISTINCT | ALL] item [, ...]
  std::optional<ParseError> ParseSelectList() {
    if (!cursor_.AtKeyword("select")) {
      return cursor_.Expected(!statement_.joins.empty()
                                  ? "AND, JOIN or SELECT after the JOIN condition"
                                  : "JOIN or SELECT after the source table");
    }
    cursor_.Advance();
    if (auto error = ParseDistinct()) return *error;
    if (AtSelectListEnd()) {
      const Token& found = cursor_.Peek();
      return cursor_.ErrorAt(found.begin,
                             "empty SELECT list: expected an expression AS column after SELECT, "
                             "found " +
                                 cursor_.Describe(found));
    }
    // Column name -> where it was first written, to point at both in the error.
    std::map<std::string, std::size_t> names;
    while (true) {
      auto parsed =
          ParseSelectItem(cursor_, statement_.select.empty() ? "an expression after SELECT"
                                                             : "an expression after \",\"");
      if (auto* error = std::get_if<ParseError>(&parsed)) return *error;
      auto& [item, name_position] = std::get<ParsedSelectItem>(parsed);
      auto [first, inserted] = names.emplace(item.alias, name_position);
      if (!inserted) {
        return cursor_.ErrorAt(name_position, "duplicate column alias \"" + item.alias +
                                                  "\" (first used at position " +
                                                  std::to_string(first->second) + ")");
      }
      statement_.select.push_back(std::move(item));
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  // The optional DISTINCT (or ALL, the default) after SELECT.
  std::optional<ParseError> ParseDistinct() {
    if (cursor_.AtKeyword("all")) {
      cursor_.Advance();
      return std::nullopt;
    }
    if (!cursor_.AtKeyword("distinct")) return std::nullopt;
    distinct_position_ = cursor_.Advance().begin;
    if (cursor_.AtKeyword("on")) return ParseDistinctOn();
    statement_.distinct = true;
    return std::nullopt;
  }

  // ON ( expr [, ...] ) after SELECT DISTINCT: each expression up to a ","
  // or the ")" that closes the list, at bracket depth 0.
  std::optional<ParseError> ParseDistinctOn() {
    cursor_.Advance();
    if (!cursor_.AtPunctuation("(")) return cursor_.Expected("\"(\" after SELECT DISTINCT ON");
    cursor_.Advance();
    while (true) {
      const std::size_t begin = cursor_.Peek().begin;
      std::size_t end = begin;
      int depth = 0;
      while (true) {
        const Token& token = cursor_.Peek();
        if (token.kind == TokenKind::kError) return cursor_.ErrorAt(token.begin, token.value);
        if (token.kind == TokenKind::kEnd || (depth == 0 && cursor_.AtPunctuation(";"))) {
          return cursor_.ErrorAt(distinct_position_,
                                 "unbalanced parentheses: the \"(\" of DISTINCT ON is never "
                                 "closed");
        }
        if (depth == 0 && (cursor_.AtPunctuation(",") || cursor_.AtPunctuation(")"))) break;
        if (cursor_.AtPunctuation("(") || cursor_.AtPunctuation("[")) ++depth;
        if (cursor_.AtPunctuation(")") || cursor_.AtPunctuation("]")) --depth;
        end = token.end;
        cursor_.Advance();
      }
      if (end == begin) {
        return cursor_.Expected(statement_.distinct_on.empty() ? "an expression after DISTINCT ON ("
                                                               : "an expression after \",\"");
      }
      statement_.distinct_on.emplace_back(cursor_.Statement().substr(begin, end - begin));
      const bool more = cursor_.AtPunctuation(",");
      cursor_.Advance();
      if (!more) return std::nullopt;
    }
  }

  // ORDER BY item [, ...]: only after SELECT DISTINCT ON (RefuseUnsupportedClause
  // refuses it otherwise).
  std::optional<ParseError> ParseOrderBy() {
    order_by_position_ = cursor_.Advance().begin;
    cursor_.Advance();
    while (true) {
      auto item =
          ScanExpression(cursor_, statement_.order_by.empty() ? "an expression after ORDER BY"
                                                              : "an expression after \",\"");
      if (auto* error = std::get_if<ParseError>(&item)) return *error;
      const ExprSpan& span = std::get<ExprSpan>(item);
      if (span.token_count == 1 && span.first_tokens.front().kind == TokenKind::kNumber) {
        return cursor_.UnsupportedAt(span.position,
                                     "ORDER BY " + span.text +
                                         " (a position in the SELECT list) is not supported: "
                                         "write the expression itself");
      }
      if (auto error = RefuseAggregates(cursor_, span, "ORDER BY")) return *error;
      statement_.order_by.push_back(std::get<ExprSpan>(std::move(item)).text);
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  // What a DISTINCT ON statement must be (spec/grammar.md section 12): over
  // one table, without grouping, its ORDER BY starting with the DISTINCT ON
  // expressions, each of them a SELECT item.
  std::optional<ParseError> CheckDistinctOn() const {
    if (statement_.distinct_on.empty()) return std::nullopt;
    const std::size_t at = distinct_position_;
    if (!statement_.joins.empty()) {
      return cursor_.UnsupportedAt(
          at,
          "SELECT DISTINCT ON over a JOIN is not supported: define a transform for the join "
          "(its columns as SELECT items), then the DISTINCT ON transform FROM its target");
    }
    if (statement_.HasSubqueries()) {
      return cursor_.UnsupportedAt(
          at,
          "SELECT DISTINCT ON with a subquery in WHERE is not supported: define a transform "
          "with the subquery, then the DISTINCT ON transform FROM its target");
    }
    if (!statement_.group_by.empty() || statement_.having) {
      return cursor_.UnsupportedAt(
          at,
          "SELECT DISTINCT ON with GROUP BY or HAVING is not supported: define the grouping "
          "as a transform, then the DISTINCT ON transform FROM its target");
    }
    for (const auto& item : statement_.select) {
      if (!item.aggregate_uses.empty()) {
        return cursor_.UnsupportedAt(
            item.position,
            "aggregates in a SELECT DISTINCT ON are not supported: define the aggregates with "
            "GROUP BY as a transform, then the DISTINCT ON transform FROM its target");
      }
    }
    if (statement_.order_by.empty()) {
      return cursor_.UnsupportedAt(
          at,
          "SELECT DISTINCT ON without ORDER BY is not supported: it keeps an arbitrary row "
          "per key, which a recompute of the key need not keep again; add ORDER BY <the "
          "DISTINCT ON expressions>, <the columns that pick the row>, <the source's primary "
          "key>");
    }
    const auto& on = statement_.distinct_on;
    for (const auto& d : on) {
      const bool selected =
          std::any_of(statement_.select.begin(), statement_.select.end(),
                      [&](const SelectItem& item) { return SameTokens(item.expr, d); });
      if (!selected) {
        return cursor_.UnsupportedAt(
            at, "the DISTINCT ON expression " + d +
                    " is not a SELECT item: the target is keyed by the DISTINCT ON expressions; "
                    "add it to the SELECT list (" +
                    d + " AS <name>), written as in DISTINCT ON");
      }
    }
    // The first on.size() ORDER BY keys are the DISTINCT ON expressions, in
    // any order (as PostgreSQL requires).
    std::vector<bool> used(on.size(), false);
    for (std::size_t i = 0; i < on.size(); ++i) {
      bool found = false;
      if (i < statement_.order_by.size()) {
        const std::string key = OrderKey(statement_.order_by[i]);
        for (std::size_t j = 0; j < on.size() && !found; ++j) {
          if (!used[j] && SameTokens(key, on[j])) used[j] = found = true;
        }
      }
      if (!found) {
        std::string list;
        for (const auto& d : on) list += (list.empty() ? "" : ", ") + d;
        return cursor_.ErrorAt(order_by_position_,
                               "SELECT DISTINCT ON expressions must match the initial ORDER BY "
                               "expressions: write ORDER BY " +
                                   list + ", then the columns that pick the row");
      }
    }
    // PostgreSQL reads a bare name in ORDER BY as a SELECT item's name
    // first; the row is picked over the source's columns, so a name that is
    // another item's alias would sort by something else.
    for (std::size_t i = on.size(); i < statement_.order_by.size(); ++i) {
      const std::string key = OrderKey(statement_.order_by[i]);
      auto bare = OrderKeyColumn(key, "");
      if (!bare) continue;
      for (const auto& item : statement_.select) {
        if (item.alias != *bare) continue;
        auto column = OrderKeyColumn(item.expr, statement_.source.Qualifier());
        if (column && *column == *bare) continue;
        return cursor_.UnsupportedAt(
            order_by_position_,
            "ORDER BY " + key + " names the SELECT item " + item.expr + " AS " + item.alias +
                ", which PostgreSQL would sort by, while Trellis picks the row by the source's "
                "columns; write the expression itself (ORDER BY " +
                item.expr + ")");
      }
    }
    if (statement_.order_by.size() == on.size()) {
      return cursor_.UnsupportedAt(
          order_by_position_,
          "this ORDER BY names only the DISTINCT ON expressions, so every row of a key ties and "
          "the row kept is left to PostgreSQL; add the columns that pick the row, ending with "
          "the source's primary key");
    }
    return std::nullopt;
  }

  bool AtSelectListEnd() const {
    return cursor_.Peek().kind == TokenKind::kEnd || cursor_.AtPunctuation(";") ||
           (query_ && cursor_.AtPunctuation(")")) ||
           (AtClauseKeyword(cursor_) && !cursor_.AtKeyword("as"));
  }

  // Clauses of a SELECT that are valid SQL but that Trellis does not keep.
  std::optional<ParseError> RefuseUnsupportedClause() const {
    const std::size_t at = cursor_.Peek().begin;
    if (cursor_.AtKeyword("order") && cursor_.AtKeyword("by", 1) &&
        (statement_.distinct_on.empty() || after_ >= Clause::kOrderBy)) {
      return cursor_.UnsupportedAt(at,
                                   "ORDER BY is not supported: a target is a table and its rows "
                                   "have no order; order them when you read it");
    }
    if (cursor_.AtKeyword("limit") || cursor_.AtKeyword("offset")) {
      return cursor_.UnsupportedAt(at,
                                   "LIMIT and OFFSET are not supported: a target holds every "
                                   "row of its query; limit when you read it");
    }
    if (cursor_.AtKeyword("window")) {
      return cursor_.UnsupportedAt(at,
                                   "WINDOW is not supported: a transform computes each row "
                                   "from its own source row or group alone");
    }
    if (AtUnionAll()) {
      // After the SELECT list or WHERE it is read; after GROUP BY, HAVING
      // or ORDER BY the first branch is a grouping.
      if (after_ <= Clause::kWhere) return std::nullopt;
      return cursor_.UnsupportedAt(at, kGroupedBranch);
    }
    if (cursor_.AtKeyword("union")) {
      return cursor_.UnsupportedAt(at,
                                   "UNION (without ALL, which removes duplicate rows) is not "
                                   "supported: write UNION ALL, and SELECT DISTINCT over its "
                                   "target in a second transform if the duplicates must go");
    }
    if (cursor_.AtKeyword("intersect") || cursor_.AtKeyword("except")) {
      return cursor_.UnsupportedAt(at,
                                   "INTERSECT and EXCEPT are not supported: a transform is "
                                   "one query, or a UNION ALL of queries; define one transform "
                                   "per query");
    }
    return std::nullopt;
  }

  // DISTINCT next to GROUP BY or aggregates changes nothing SQL computes, but
  // would make the definition read as something it is not.
  std::optional<ParseError> RefuseRedundantDistinct() const {
    if (!statement_.distinct) return std::nullopt;
    if (!statement_.group_by.empty()) {
      return cursor_.UnsupportedAt(distinct_position_,
                                   "SELECT DISTINCT with GROUP BY is not supported: GROUP BY "
                                   "already gives one row per group; remove DISTINCT");
    }
    if (statement_.having) {
      return cursor_.UnsupportedAt(distinct_position_,
                                   "SELECT DISTINCT with HAVING is not supported: HAVING keeps "
                                   "groups of a GROUP BY; write GROUP BY and remove DISTINCT");
    }
    for (const auto& item : statement_.select) {
      if (!item.aggregate_uses.empty()) {
        return cursor_.UnsupportedAt(distinct_position_,
                                     "SELECT DISTINCT with aggregates is not supported: "
                                     "aggregates without GROUP BY give one row; remove DISTINCT");
      }
    }
    return std::nullopt;
  }

  std::optional<ParseError> ParseWhere() {
    cursor_.Advance();
    auto predicate = ScanExpression(cursor_, "a predicate after WHERE");
    if (auto* error = std::get_if<ParseError>(&predicate)) return *error;
    // Aggregates are refused outside subqueries; each subquery is read
    // (grammar/subquery.h) to be compiled into stages.
    std::vector<std::string> tables{statement_.source.Qualifier()};
    for (const auto& join : statement_.joins) tables.push_back(join.table.Qualifier());
    auto subqueries = ReadWhereSubqueries(cursor_, std::get<ExprSpan>(predicate), tables);
    if (auto* error = std::get_if<ParseError>(&subqueries)) return *error;
    statement_.subqueries = std::get<std::vector<WhereSubquery>>(std::move(subqueries));
    statement_.where = std::get<ExprSpan>(std::move(predicate)).text;
    return std::nullopt;
  }

  std::optional<ParseError> ParseGroupBy() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("by")) return cursor_.Expected("BY after GROUP");
    cursor_.Advance();
    while (true) {
      auto expr =
          ScanExpression(cursor_, statement_.group_by.empty() ? "an expression after GROUP BY"
                                                              : "an expression after \",\"");
      if (auto* error = std::get_if<ParseError>(&expr)) return *error;
      if (auto error = CheckGroupingExpression(std::get<ExprSpan>(expr))) return *error;
      statement_.group_by.push_back(std::get<ExprSpan>(std::move(expr)).text);
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  // One GROUP BY item is one expression of a source row: not a position,
  // not a grouping set, not an aggregate.
  std::optional<ParseError> CheckGroupingExpression(const ExprSpan& expr) const {
    const std::vector<Token>& tokens = expr.first_tokens;
    const Token& first = tokens.front();
    const bool call =
        tokens.size() > 1 && tokens[1].kind == TokenKind::kPunctuation && tokens[1].value == "(";
    const bool grouping_sets =
        first.kind == TokenKind::kIdentifier &&
        ((call && (first.value == "rollup" || first.value == "cube")) ||
         (first.value == "grouping" && tokens.size() > 1 &&
          tokens[1].kind == TokenKind::kIdentifier && tokens[1].value == "sets"));
    if (grouping_sets) {
      return cursor_.UnsupportedAt(first.begin,
                                   "ROLLUP, CUBE and GROUPING SETS are not supported: define "
                                   "one transform per grouping");
    }
    if (expr.token_count == 2 && first.kind == TokenKind::kPunctuation && first.value == "(") {
      return cursor_.UnsupportedAt(first.begin,
                                   "GROUP BY () is not supported: leave GROUP BY out for one "
                                   "row over the whole table");
    }
    if (first.kind == TokenKind::kIdentifier &&
        (first.value == "all" || first.value == "distinct")) {
      return cursor_.UnsupportedAt(first.begin,
                                   "GROUP BY ALL and GROUP BY DISTINCT are not supported: "
                                   "write GROUP BY and the expressions");
    }
    if (expr.token_count == 1 && first.kind == TokenKind::kNumber) {
      return cursor_.UnsupportedAt(first.begin,
                                   "GROUP BY " + first.value +
                                       " (a position in the SELECT list) is not supported: "
                                       "write the expression itself");
    }
    if (auto subquery = FirstSubquery(expr)) {
      return cursor_.UnsupportedAt(expr.position + *subquery,
                                   "a subquery in GROUP BY is not supported: group by columns "
                                   "or expressions of one source row");
    }
    return RefuseAggregates(cursor_, expr, "GROUP BY");
  }

  // HAVING condition: aggregates allowed (each use is kept, to be compiled
  // into stages), window functions not.
  std::optional<ParseError> ParseHaving() {
    cursor_.Advance();
    auto condition = ScanExpression(cursor_, "a condition after HAVING");
    if (auto* error = std::get_if<ParseError>(&condition)) return *error;
    ExprSpan& span = std::get<ExprSpan>(condition);
    // Uncorrelated subqueries (TPC-H Q11's): read before the aggregates,
    // which are the statement's only outside them.
    std::vector<std::pair<std::size_t, std::size_t>> brackets;
    if (FirstSubquery(span)) {
      auto read = ReadHavingSubqueries(cursor_, span, Tables());
      if (auto* error = std::get_if<ParseError>(&read)) return *error;
      having_subqueries_ = std::get<std::vector<WhereSubquery>>(std::move(read));
      having_position_ = span.position;
      brackets = SubqueryBrackets(span);
    }
    auto aggregates = ReadAggregates(cursor_, span);
    if (auto* error = std::get_if<ParseError>(&aggregates)) return *error;
    statement_.having = std::move(span.text);
    for (AggregateUse& use : std::get<AggregatesRead>(aggregates).uses) {
      const bool inside = std::any_of(brackets.begin(), brackets.end(), [&](const auto& b) {
        return use.begin >= b.first && use.end <= b.second;
      });
      if (!inside) statement_.having_uses.push_back(std::move(use));
    }
    return std::nullopt;
  }

  // The qualifiers of the statement's tables: its FROM table, then each
  // joined table.
  std::vector<std::string> Tables() const {
    std::vector<std::string> tables{statement_.source.Qualifier()};
    for (const auto& join : statement_.joins) tables.push_back(join.table.Qualifier());
    return tables;
  }

  // A statement whose HAVING holds subqueries (spec/grammar.md section 11,
  // "A subquery in HAVING") is read as its grouping in FROM, each compared
  // side of a subquery one more column of it (kHavingColumnPrefix<k>), and
  // the subqueries in the WHERE of a statement over it: HAVING over a
  // grouping is a WHERE over its rows. `having_query` holds that statement
  // (its target the user's); the statement itself stays as written.
  std::optional<ParseError> CompileHavingSubqueries() {
    if (having_subqueries_.empty()) return std::nullopt;
    const std::string& having = *statement_.having;
    const std::vector<std::pair<std::size_t, std::size_t>> brackets =
        SubqueryBrackets(ExprSpan{having, having_position_, 0, {}});
    TransformStmt grouped = statement_;
    grouped.target = QualifiedName{std::nullopt, "q"};
    grouped.with.clear();
    grouped.without_source_index = false;
    grouped.without_row_security = false;
    grouped.readers.clear();
    grouped.having_uses.clear();
    // HAVING's other conditions stay the grouping's; each between two
    // subquery conditions, without the ANDs around it.
    std::string rest;
    auto keep = [&](std::size_t from, std::size_t to) {
      const std::string gap = having.substr(from, to - from);
      const std::vector<Token> tokens = Tokenize(gap);
      std::size_t first = 0;
      std::size_t last = tokens.size() - 1;  // the kEnd token
      if (first < last && IsWord(tokens[first], "and")) ++first;
      if (first < last && IsWord(tokens[last - 1], "and")) --last;
      if (first >= last) return;
      rest += (rest.empty() ? "" : " AND ") +
              gap.substr(tokens[first].begin, tokens[last - 1].end - tokens[first].begin);
    };
    std::string where;
    std::size_t at = 0;
    std::size_t column = 0;
    for (const WhereSubquery& sq : having_subqueries_) {
      keep(at, sq.begin);
      at = sq.end;
      std::string condition;
      if (sq.use == SubqueryUse::kCompare) {
        const std::size_t open = sq.position - having_position_;
        const auto bracket = std::find_if(brackets.begin(), brackets.end(),
                                          [&](const auto& b) { return b.first == open; });
        if (bracket == brackets.end()) {
          return cursor_.UnsupportedAt(sq.position, "a subquery in HAVING it cannot read");
        }
        const std::string name = std::string(kHavingColumnPrefix) + std::to_string(++column);
        for (const auto& item : statement_.select) {
          if (item.alias == name) {
            return cursor_.UnsupportedAt(
                item.position, "the column name " + name +
                                   " is Trellis's in a statement with a subquery in HAVING: "
                                   "name the column otherwise");
          }
        }
        grouped.select.push_back(SelectItem{sq.compared, name, sq.position, {}, {}});
        condition = std::string(kHavingQueryAlias) + "." + name + " " + sq.op + " " +
                    having.substr(bracket->first, bracket->second - bracket->first);
      } else {
        condition = having.substr(sq.begin, sq.end - sq.begin);
      }
      where += (where.empty() ? "" : " AND ") + condition;
    }
    keep(at, having.size());
    if (rest.empty()) {
      grouped.having.reset();
    } else {
      grouped.having = rest;
    }
    std::string text = "TRANSFORM q FROM (";
    RenderInnerQuery(grouped, text);
    text += ") AS " + std::string(kHavingQueryAlias) + " SELECT ";
    for (std::size_t i = 0; i < statement_.select.size(); ++i) {
      const std::string name = RenderName(statement_.select[i].alias);
      text += (i == 0 ? "" : ", ") + std::string(kHavingQueryAlias) + "." + name + " AS " + name;
    }
    text += " WHERE " + where;
    auto parsed = Parse(text);
    const std::size_t position = having_subqueries_.front().position;
    if (auto* e = std::get_if<ParseError>(&parsed)) {
      const std::size_t colon = e->message.find(": ");
      const std::string what =
          colon == std::string::npos ? e->message : e->message.substr(colon + 2);
      ParseError refused = cursor_.UnsupportedAt(position, "with a subquery in HAVING: " + what);
      refused.kind = e->kind;
      return refused;
    }
    auto* outer = std::get_if<TransformStmt>(&std::get<Statement>(parsed));
    if (!outer) return cursor_.UnsupportedAt(position, "a subquery in HAVING it cannot read");
    // Its subqueries are HAVING's, one per condition, in order: named as
    // the user wrote them, never by a position in the text made here.
    for (std::size_t k = 0; k < outer->subqueries.size(); ++k) {
      outer->subqueries[k].named = outer->subqueries.size() == 1
                                       ? "the subquery in HAVING"
                                       : "subquery " + std::to_string(k + 1) + " in HAVING";
    }
    outer->target = statement_.target;
    outer->with = statement_.with;
    outer->without_source_index = statement_.without_source_index;
    outer->without_row_security = statement_.without_row_security;
    outer->readers = statement_.readers;
    statement_.having_query.push_back(std::move(*outer));
    return std::nullopt;
  }

  std::optional<ParseError> ParseWithoutSourceIndex() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("source")) return cursor_.Expected("SOURCE or ROW after WITHOUT");
    cursor_.Advance();
    if (!cursor_.AtKeyword("index")) return cursor_.Expected("INDEX after WITHOUT SOURCE");
    cursor_.Advance();
    statement_.without_source_index = true;
    return std::nullopt;
  }

  std::optional<ParseError> ParseWithoutRowSecurity() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("row")) return cursor_.Expected("ROW after WITHOUT");
    cursor_.Advance();
    if (!cursor_.AtKeyword("security")) return cursor_.Expected("SECURITY after WITHOUT ROW");
    cursor_.Advance();
    statement_.without_row_security = true;
    return std::nullopt;
  }

  // GRANT SELECT TO role [, ...]: each role once. PostgreSQL checks that
  // the roles exist when the transform is defined.
  std::optional<ParseError> ParseGrantSelect() {
    cursor_.Advance();
    if (!cursor_.AtKeyword("select")) {
      return cursor_.Expected("SELECT after GRANT (a target is only ever granted SELECT)");
    }
    cursor_.Advance();
    if (!cursor_.AtKeyword("to")) return cursor_.Expected("TO after GRANT SELECT");
    cursor_.Advance();
    std::map<std::string, std::size_t> seen;
    while (true) {
      const std::size_t at = cursor_.Peek().begin;
      auto role =
          ParseName(cursor_, statement_.readers.empty() ? "a role name after GRANT SELECT TO"
                                                        : "a role name after \",\"");
      if (auto* error = std::get_if<ParseError>(&role)) return *error;
      auto [first, inserted] = seen.emplace(std::get<std::string>(role), at);
      if (!inserted) {
        return cursor_.ErrorAt(at, "role \"" + first->first +
                                       "\" is granted twice (first at position " +
                                       std::to_string(first->second) + ")");
      }
      statement_.readers.push_back(std::get<std::string>(std::move(role)));
      if (!cursor_.AtPunctuation(",")) return std::nullopt;
      cursor_.Advance();
    }
  }

  TokenCursor& cursor_;
  TransformStmt statement_;
  std::size_t distinct_position_ = 0;
  std::size_t order_by_position_ = 0;
  Clause after_ = Clause::kSelectList;
  std::vector<std::size_t> union_positions_;  // of each UNION ALL's UNION
  std::vector<std::size_t> with_positions_;   // of each WITH query's name
  bool query_ = false;                        // a query in parentheses
  std::size_t open_ = 0;                      // where its "(" is
  bool branch_ = false;                       // a UNION ALL branch
  // HAVING's subqueries, and where HAVING's text begins.
  std::vector<WhereSubquery> having_subqueries_;
  std::size_t having_position_ = 0;
};

}  // namespace

std::variant<TransformStmt, ParseError> ParseTransform(TokenCursor& cursor) {
  return TransformParser(cursor).Run();
}

}  // namespace trellis::grammar
