#include "sql/quote.h"

#include "grammar/quote.h"

namespace trellis::sql {

// One quoting rule for the whole engine: the grammar's.
std::string Ident(std::string_view name) { return grammar::QuoteIdent(name); }

std::string Qualified(std::string_view schema, std::string_view name) {
  return Ident(schema) + "." + Ident(name);
}

std::string Literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string WithSchema(std::string_view text, std::string_view schema) {
  static constexpr std::string_view kMarker = "{schema}";
  const std::string quoted = Ident(schema);
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(kMarker, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out += quoted;
    pos = hit + kMarker.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string ArrayLiteral(const std::vector<std::string>& elements) {
  std::string out = "{";
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : elements[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::vector<std::string> ParseTextArray(std::string_view text) {
  std::vector<std::string> out;
  for (auto& element : ParseNullableTextArray(text)) out.push_back(element.value_or("NULL"));
  return out;
}

std::vector<std::optional<std::string>> ParseNullableTextArray(std::string_view text) {
  std::vector<std::optional<std::string>> out;
  if (text.size() < 2 || text.front() != '{') return out;
  size_t i = 1;
  while (i < text.size() && text[i] != '}') {
    std::string element;
    bool quoted = false;
    if (text[i] == '"') {
      quoted = true;
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        element += text[i++];
      }
      ++i;  // closing quote
    } else {
      while (i < text.size() && text[i] != ',' && text[i] != '}') element += text[i++];
    }
    if (!quoted && element == "NULL") {
      out.push_back(std::nullopt);
    } else {
      out.push_back(std::move(element));
    }
    if (i < text.size() && text[i] == ',') ++i;
  }
  return out;
}

}  // namespace trellis::sql
