#include "grammar/address.h"

#include "grammar/lexer.h"
#include "grammar/names.h"
#include "grammar/render.h"
#include "grammar/token_cursor.h"

namespace trellis::grammar {

std::vector<TransformAddress> AddressReadings(const std::vector<std::string>& parts) {
  switch (parts.size()) {
    case 1:
      return {TransformAddress{QualifiedName{std::nullopt, parts[0]}, std::nullopt}};
    case 2:
      return {TransformAddress{QualifiedName{std::nullopt, parts[0]}, parts[1]},
              TransformAddress{QualifiedName{parts[0], parts[1]}, std::nullopt}};
    case 3:
      return {TransformAddress{QualifiedName{parts[0], parts[1]}, parts[2]}};
    default:
      return {};
  }
}

std::string RenderTransformName(std::string_view name) { return RenderName(name); }

std::string RenderAddress(std::string_view transform, const std::optional<std::string>& column) {
  std::string out = RenderName(transform);
  if (column) out += "." + RenderName(*column);
  return out;
}

std::variant<QualifiedName, ParseError> ParseTransformName(std::string_view text) {
  TokenCursor cursor(text);
  auto name = ParseQualifiedName(cursor, "a transform name");
  if (std::holds_alternative<ParseError>(name)) return name;
  if (cursor.Peek().kind != TokenKind::kEnd) {
    return cursor.Expected("the end of the transform name");
  }
  return name;
}

}  // namespace trellis::grammar
