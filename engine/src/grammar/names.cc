#include "grammar/names.h"

#include "grammar/keywords.h"

namespace trellis::grammar {
namespace {

constexpr std::size_t kMaxAddressParts = 3;

bool AtNameToken(const TokenCursor& cursor) {
  const Token& token = cursor.Peek();
  return token.kind == TokenKind::kQuotedIdentifier ||
         (token.kind == TokenKind::kIdentifier && !IsReservedKeyword(token.value));
}

}  // namespace

std::optional<ParseError> CheckNameLength(const TokenCursor& cursor, const Token& token) {
  if (token.value.size() <= kMaxNameBytes) return std::nullopt;
  return cursor.ErrorAt(token.begin, "the name " + cursor.Describe(token) +
                                         " is longer than PostgreSQL's limit of " +
                                         std::to_string(kMaxNameBytes) + " bytes");
}

std::variant<std::string, ParseError> ParseName(TokenCursor& cursor, std::string_view what,
                                                NameRule rule) {
  const Token& token = cursor.Peek();
  if (token.kind == TokenKind::kIdentifier && IsReservedKeyword(token.value) &&
      rule == NameRule::kName) {
    ParseError error = cursor.Expected(what);
    error.message += " (a reserved word: write it in double quotes to use it as a name)";
    return error;
  }
  if (token.kind != TokenKind::kIdentifier && token.kind != TokenKind::kQuotedIdentifier) {
    return cursor.Expected(what);
  }
  if (auto error = CheckNameLength(cursor, token)) return *error;
  return cursor.Advance().value;
}

std::variant<QualifiedName, ParseError> ParseQualifiedName(TokenCursor& cursor,
                                                           std::string_view what) {
  auto first = ParseName(cursor, what);
  if (auto* error = std::get_if<ParseError>(&first)) return *error;
  if (!cursor.AtPunctuation(".")) return QualifiedName{std::nullopt, std::get<std::string>(first)};
  cursor.Advance();
  auto second = ParseName(cursor, "a table name after \".\"");
  if (auto* error = std::get_if<ParseError>(&second)) return *error;
  if (cursor.AtPunctuation(".")) {
    return cursor.ErrorAt(cursor.Peek().begin,
                          "too many dotted parts in the table name: expected table or "
                          "schema.table");
  }
  return QualifiedName{std::get<std::string>(first), std::get<std::string>(second)};
}

std::variant<std::vector<std::string>, ParseError> ParseAddress(TokenCursor& cursor) {
  std::vector<std::string> parts;
  while (true) {
    auto part = ParseName(
        cursor, parts.empty() ? "the transform name after TRANSFORM" : "a name after \".\"");
    if (auto* error = std::get_if<ParseError>(&part)) return *error;
    parts.push_back(std::get<std::string>(std::move(part)));
    if (!cursor.AtPunctuation(".")) return parts;
    if (parts.size() == kMaxAddressParts) {
      return cursor.ErrorAt(cursor.Peek().begin,
                            "too many dotted parts in the address: expected transform, "
                            "transform.column or schema.transform.column");
    }
    cursor.Advance();
  }
}

std::variant<std::optional<std::string>, ParseError> ParseOptionalAlias(TokenCursor& cursor) {
  if (cursor.AtKeyword("as")) {
    cursor.Advance();
    auto alias = ParseName(cursor, "an alias after AS");
    if (auto* error = std::get_if<ParseError>(&alias)) return *error;
    return std::optional<std::string>(std::get<std::string>(std::move(alias)));
  }
  if (!AtNameToken(cursor)) return std::optional<std::string>();
  auto alias = ParseName(cursor, "an alias");
  if (auto* error = std::get_if<ParseError>(&alias)) return *error;
  return std::optional<std::string>(std::get<std::string>(std::move(alias)));
}

}  // namespace trellis::grammar
