#include "grammar/join.h"

#include <cctype>
#include <cstddef>
#include <string>

#include "grammar/names.h"

namespace trellis::grammar {
namespace {

// One side of an equality: qualifier.column.
struct ColumnRef {
  std::string qualifier;
  std::string column;
  std::size_t position = 0;
};

std::string Quoted(const std::string& name) { return "\"" + name + "\""; }

// What each refused form would have to be instead: every table is joined
// by equalities of its columns with one table before it.
constexpr std::string_view kKeepsFromRows =
    "each joined table is matched by equalities with one table before it";

class JoinParser {
 public:
  JoinParser(TokenCursor& cursor, const TableRef& from) : cursor_(cursor) {
    tables_.push_back(from);
  }

  std::variant<std::vector<JoinClause>, ParseError> Run() {
    while (true) {
      if (auto error = RefuseOtherFroms()) return *error;
      JoinClause join;
      if (cursor_.AtKeyword("inner")) {
        cursor_.Advance();
        if (!cursor_.AtKeyword("join")) return cursor_.Expected("JOIN after INNER");
      } else if (auto outer = OuterKind()) {
        const std::string word = cursor_.Peek().value;
        cursor_.Advance();
        if (cursor_.AtKeyword("outer")) cursor_.Advance();
        if (!cursor_.AtKeyword("join")) return cursor_.Expected("JOIN after " + Upper(word));
        join.kind = *outer;
      } else if (!cursor_.AtKeyword("join")) {
        return joins_;
      }
      cursor_.Advance();  // JOIN
      if (auto error = ParseJoin(join)) return *error;
      tables_.push_back(join.table);
      joins_.push_back(std::move(join));
    }
  }

 private:
  // LEFT, RIGHT or FULL at the cursor: an outer join's first word.
  std::optional<JoinKind> OuterKind() const {
    if (cursor_.AtKeyword("left")) return JoinKind::kLeft;
    if (cursor_.AtKeyword("right")) return JoinKind::kRight;
    if (cursor_.AtKeyword("full")) return JoinKind::kFull;
    return std::nullopt;
  }

  static std::string Upper(std::string word) {
    for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return word;
  }

  // The ways of reading more than one table that are valid SQL but that
  // Trellis does not maintain, each refused with what would be valid.
  std::optional<ParseError> RefuseOtherFroms() const {
    const std::size_t at = cursor_.Peek().begin;
    if (cursor_.AtKeyword("cross") || cursor_.AtPunctuation(",")) {
      return cursor_.UnsupportedAt(
          at, "a cross join (CROSS JOIN or a comma between tables) is not supported: " +
                  std::string(kKeepsFromRows) + "; write JOIN t ON x.c = t.c");
    }
    if (cursor_.AtKeyword("natural")) {
      return cursor_.UnsupportedAt(at,
                                   "NATURAL JOIN is not supported: write the equalities with "
                                   "JOIN t ON x.c = t.c");
    }
    return std::nullopt;
  }

  std::optional<ParseError> ParseJoin(JoinClause& join) {
    const std::size_t table_position = cursor_.Peek().begin;
    if (cursor_.AtKeyword("lateral")) {
      return cursor_.UnsupportedAt(
          table_position,
          "LATERAL is not supported: a lateral query reads a row of the tables before it, "
          "which no stage keeps; write the query as a WITH query grouped by the column it "
          "would correlate on, and JOIN it on that column");
    }
    if (cursor_.AtPunctuation("(")) {
      return cursor_.UnsupportedAt(
          table_position,
          "joining a query in parentheses is not supported: name it in WITH after the target "
          "name (WITH s AS (FROM ... SELECT ...)) and JOIN s, or join a table");
    }
    auto table = ParseQualifiedName(cursor_, "the joined table name after JOIN");
    if (auto* error = std::get_if<ParseError>(&table)) return *error;
    join.table.table = std::get<QualifiedName>(std::move(table));
    auto alias = ParseOptionalAlias(cursor_);
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    join.table.alias = std::get<std::optional<std::string>>(std::move(alias));
    for (const auto& earlier : tables_) {
      if (join.table.Qualifier() != earlier.Qualifier()) continue;
      // Column references could not tell the two tables apart.
      return cursor_.ErrorAt(table_position, "two tables are called " +
                                                 Quoted(earlier.Qualifier()) +
                                                 ": give the joined table another alias");
    }
    if (cursor_.AtKeyword("using")) {
      return cursor_.UnsupportedAt(cursor_.Peek().begin,
                                   "JOIN ... USING is not supported: write the equalities with "
                                   "ON x.c = t.c");
    }
    if (!cursor_.AtKeyword("on")) return cursor_.Expected("ON after the joined table");
    cursor_.Advance();
    while (true) {
      if (auto error = ParseEquality(join)) return error;
      if (cursor_.AtKeyword("or")) {
        return cursor_.UnsupportedAt(
            cursor_.Peek().begin,
            "OR in a JOIN condition is not supported: the condition is an AND of column "
            "equalities; filter rows with WHERE");
      }
      if (!cursor_.AtKeyword("and")) return std::nullopt;
      cursor_.Advance();
    }
  }

  std::variant<ColumnRef, ParseError> ParseColumnRef() const {
    ColumnRef ref;
    ref.position = cursor_.Peek().begin;
    if (cursor_.AtPunctuation("(")) return RefuseNonColumn(ref.position);
    auto qualifier = ParseName(cursor_, "a qualified column (table.column) in the JOIN condition");
    if (auto* error = std::get_if<ParseError>(&qualifier)) return *error;
    ref.qualifier = std::get<std::string>(std::move(qualifier));
    if (cursor_.AtPunctuation("(")) return RefuseNonColumn(ref.position);
    if (!cursor_.AtPunctuation(".")) {
      return cursor_.Expected(
          "\".\" and a column name: each side of a JOIN condition is table.column");
    }
    cursor_.Advance();
    auto column = ParseName(cursor_, "a column name after \".\"", NameRule::kLabel);
    if (auto* error = std::get_if<ParseError>(&column)) return *error;
    ref.column = std::get<std::string>(std::move(column));
    const Token& next = cursor_.Peek();
    if (next.kind == TokenKind::kPunctuation && (next.value == "::" || next.value == "(")) {
      return RefuseNonColumn(ref.position);
    }
    return ref;
  }

  ParseError RefuseNonColumn(std::size_t position) const {
    return cursor_.UnsupportedAt(
        position,
        "an expression or subquery in a JOIN condition is not supported: each side is a column "
        "(table.column); compute the value in a transform first, or filter with WHERE");
  }

  std::optional<ParseError> ParseEquality(JoinClause& join) {
    auto left = ParseColumnRef();
    if (auto* error = std::get_if<ParseError>(&left)) return *error;
    const Token& op = cursor_.Peek();
    if (op.kind == TokenKind::kOperator && op.value != "=") {
      return cursor_.UnsupportedAt(
          op.begin, "the JOIN condition operator " + Quoted(op.value) +
                        " is not supported: a join matches columns with \"=\"; filter rows with "
                        "WHERE");
    }
    if (op.kind != TokenKind::kOperator) {
      return cursor_.Expected("\"=\" between the two columns of the JOIN condition");
    }
    cursor_.Advance();
    auto right = ParseColumnRef();
    if (auto* error = std::get_if<ParseError>(&right)) return *error;
    const ColumnRef& a = std::get<ColumnRef>(left);
    const ColumnRef& b = std::get<ColumnRef>(right);
    const std::string& joined = join.table.Qualifier();
    for (const ColumnRef* ref : {&a, &b}) {
      if (ref->qualifier == joined || Earlier(ref->qualifier)) continue;
      return cursor_.ErrorAt(ref->position, "unknown table " + Quoted(ref->qualifier) +
                                                " in the JOIN condition: expected " + Known() +
                                                " or " + Quoted(joined) + " (the joined table)");
    }
    if ((a.qualifier == joined) == (b.qualifier == joined)) {
      return cursor_.ErrorAt(
          a.position, "the JOIN condition " + Quoted(a.qualifier) + "." + Quoted(a.column) + " = " +
                          Quoted(b.qualifier) + "." + Quoted(b.column) +
                          " must compare a column of the joined table " + Quoted(joined) +
                          " with a column of a table before it");
    }
    const ColumnRef& other = a.qualifier == joined ? b : a;
    const ColumnRef& mine = a.qualifier == joined ? a : b;
    if (join.on.empty()) {
      join.to = other.qualifier;
    } else if (join.to != other.qualifier) {
      return cursor_.UnsupportedAt(
          other.position, "the JOIN condition of " + Quoted(joined) + " compares it with " +
                              Quoted(join.to) + " and " + Quoted(other.qualifier) +
                              ": a joined table is matched to one table before it; join "
                              "through that table, or filter with WHERE");
    }
    join.on.emplace_back(other.column, mine.column);
    return std::nullopt;
  }

  bool Earlier(const std::string& qualifier) const {
    for (const auto& t : tables_) {
      if (t.Qualifier() == qualifier) return true;
    }
    return false;
  }

  // `"w" (the FROM table)` or `"w" (the FROM table), "c"`, for errors.
  std::string Known() const {
    std::string out = Quoted(tables_.front().Qualifier()) + " (the FROM table)";
    for (size_t i = 1; i < tables_.size(); ++i) out += ", " + Quoted(tables_[i].Qualifier());
    return out;
  }

  TokenCursor& cursor_;
  std::vector<TableRef> tables_;  // FROM, then each table joined so far
  std::vector<JoinClause> joins_;
};

}  // namespace

std::variant<std::vector<JoinClause>, ParseError> ParseJoins(TokenCursor& cursor,
                                                             const TableRef& from) {
  return JoinParser(cursor, from).Run();
}

}  // namespace trellis::grammar
