#include "grammar/join.h"

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

enum class Side { kFrom, kJoined };

std::variant<ColumnRef, ParseError> ParseColumnRef(TokenCursor& cursor) {
  ColumnRef ref;
  ref.position = cursor.Peek().begin;
  auto qualifier = ParseName(cursor, "a qualified column (table.column) in the JOIN condition");
  if (auto* error = std::get_if<ParseError>(&qualifier)) return *error;
  ref.qualifier = std::get<std::string>(std::move(qualifier));
  if (!cursor.AtPunctuation(".")) {
    return cursor.Expected(
        "\".\" and a column name: each side of a JOIN condition is table.column");
  }
  cursor.Advance();
  auto column = ParseName(cursor, "a column name after \".\"", NameRule::kLabel);
  if (auto* error = std::get_if<ParseError>(&column)) return *error;
  ref.column = std::get<std::string>(std::move(column));
  return ref;
}

std::string Quoted(const std::string& name) { return "\"" + name + "\""; }

class JoinParser {
 public:
  JoinParser(TokenCursor& cursor, const TableRef& from) : cursor_(cursor), from_(from) {}

  std::variant<JoinClause, ParseError> Run() {
    cursor_.Advance();  // JOIN
    const std::size_t table_position = cursor_.Peek().begin;
    auto table = ParseQualifiedName(cursor_, "the joined table name after JOIN");
    if (auto* error = std::get_if<ParseError>(&table)) return *error;
    join_.table.table = std::get<QualifiedName>(std::move(table));
    auto alias = ParseOptionalAlias(cursor_);
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    join_.table.alias = std::get<std::optional<std::string>>(std::move(alias));
    if (join_.table.Qualifier() == from_.Qualifier()) {
      // Column references could not tell the two tables apart.
      return cursor_.ErrorAt(table_position,
                             "the joined table and the FROM table are both called " +
                                 Quoted(from_.Qualifier()) + ": give the joined table an alias");
    }
    if (!cursor_.AtKeyword("on")) return cursor_.Expected("ON after the joined table");
    cursor_.Advance();
    while (true) {
      if (auto error = ParseEquality()) return *error;
      if (!cursor_.AtKeyword("and")) return join_;
      cursor_.Advance();
    }
  }

 private:
  std::optional<ParseError> ParseEquality() {
    auto left = ParseColumnRef(cursor_);
    if (auto* error = std::get_if<ParseError>(&left)) return *error;
    const Token& equals = cursor_.Peek();
    if (equals.kind != TokenKind::kOperator || equals.value != "=") {
      return cursor_.Expected("\"=\" between the two columns of the JOIN condition");
    }
    cursor_.Advance();
    auto right = ParseColumnRef(cursor_);
    if (auto* error = std::get_if<ParseError>(&right)) return *error;
    const ColumnRef& a = std::get<ColumnRef>(left);
    const ColumnRef& b = std::get<ColumnRef>(right);
    Side side_a;
    Side side_b;
    if (auto error = Classify(a, side_a)) return error;
    if (auto error = Classify(b, side_b)) return error;
    if (side_a == side_b) {
      return cursor_.ErrorAt(a.position, "both columns of the JOIN condition belong to " +
                                             Quoted(a.qualifier) +
                                             ": one must come from the FROM table and the "
                                             "other from the joined table");
    }
    if (side_a == Side::kFrom) {
      join_.on.emplace_back(a.column, b.column);
    } else {
      join_.on.emplace_back(b.column, a.column);
    }
    return std::nullopt;
  }

  std::optional<ParseError> Classify(const ColumnRef& ref, Side& side) const {
    if (ref.qualifier == from_.Qualifier()) {
      side = Side::kFrom;
    } else if (ref.qualifier == join_.table.Qualifier()) {
      side = Side::kJoined;
    } else {
      return cursor_.ErrorAt(ref.position, "unknown table " + Quoted(ref.qualifier) +
                                               " in the JOIN condition: expected " +
                                               Quoted(from_.Qualifier()) + " (the FROM table) or " +
                                               Quoted(join_.table.Qualifier()) +
                                               " (the joined table)");
    }
    return std::nullopt;
  }

  TokenCursor& cursor_;
  const TableRef& from_;
  JoinClause join_;
};

}  // namespace

std::variant<JoinClause, ParseError> ParseJoin(TokenCursor& cursor, const TableRef& from) {
  return JoinParser(cursor, from).Run();
}

}  // namespace trellis::grammar
