#include "grammar/quote.h"

namespace trellis::grammar {

std::string QuoteIdent(std::string_view name) {
  std::string quoted;
  quoted.reserve(name.size() + 2);
  quoted += '"';
  for (char c : name) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::string QuoteQualified(const QualifiedName& name) {
  if (!name.schema) return QuoteIdent(name.name);
  return QuoteIdent(*name.schema) + "." + QuoteIdent(name.name);
}

}  // namespace trellis::grammar
