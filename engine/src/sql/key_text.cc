#include "sql/key_text.h"

#include "sql/flat_rows.h"
#include "sql/quote.h"

namespace trellis::sql {
namespace {

// PostgreSQL's array_isspace: the white space array_in skips around an
// unquoted element, so array_out quotes an element holding any of it.
bool ArraySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool SpellsNull(std::string_view value) {
  if (value.size() != 4) return false;
  static constexpr std::string_view kNull = "null";
  for (size_t i = 0; i < 4; ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kNull[i]) return false;
  }
  return true;
}

bool NeedsQuotes(std::string_view value) {
  if (value.empty() || SpellsNull(value)) return true;
  for (char c : value) {
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == ',' || ArraySpace(c)) return true;
  }
  return false;
}

}  // namespace

std::string KeyText(const std::vector<std::string>& value_exprs) {
  std::vector<std::string> parts;
  for (const auto& e : value_exprs) parts.push_back(e + "::text");
  return "ARRAY[" + Join(parts, ", ") + "]";
}

std::string KeyLiteralOf(const std::string& key) { return key + "::text"; }

std::string KeyBucket(const std::string& key, int buckets) {
  return "abs(hashtext(" + KeyLiteralOf(key) + ") % " + std::to_string(buckets) + ")";
}

std::string KeyElement(const std::string& key, size_t i) {
  return "(" + key + ")[" + std::to_string(i + 1) + "]";
}

std::string KeyValue(const std::string& key, size_t i, const std::string& type) {
  return KeyElement(key, i) + "::" + type;
}

std::vector<std::string> KeyValues(const std::string& key, const std::vector<std::string>& types) {
  std::vector<std::string> out;
  for (size_t i = 0; i < types.size(); ++i) out.push_back(KeyValue(key, i, types[i]));
  return out;
}

std::string KeyRows(const std::string& keys_expr, const std::string& row_id, size_t width,
                    const std::string& alias) {
  return FlatRows(keys_expr, row_id, width, width, alias);
}

std::vector<std::string> KeyRowCells(const std::string& alias, size_t width) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= width; ++i) out.push_back(alias + ".c" + std::to_string(i));
  return out;
}

std::string KeyOfRow(const std::string& alias, size_t width) {
  return "ARRAY[" + Join(KeyRowCells(alias, width), ", ") + "]";
}

std::vector<std::string> KeyRowValues(const std::string& alias,
                                      const std::vector<std::string>& types) {
  std::vector<std::string> out = KeyRowCells(alias, types.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] += "::" + types[i];
  return out;
}

std::string KeyLiteral(const KeyValueList& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    if (!values[i]) {
      out += "NULL";
      continue;
    }
    const std::string& value = *values[i];
    if (!NeedsQuotes(value)) {
      out += value;
      continue;
    }
    out += '"';
    for (char c : value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

KeyValueList ParseKeyLiteral(std::string_view literal) { return ParseNullableTextArray(literal); }

std::string KeyListLiteral(const std::vector<std::string>& key_literals) {
  return ArrayLiteral(key_literals);
}

std::vector<std::string> ParseKeyList(std::string_view list) { return ParseTextArray(list); }

std::string KeysOfList(const std::string& list) {
  return "SELECT k::text[] AS key FROM unnest(" + list + "::text[]) k";
}

std::string KeyRowsLiteral(const std::vector<std::string>& key_literals) {
  return "{" + Join(key_literals, ",") + "}";
}

}  // namespace trellis::sql
