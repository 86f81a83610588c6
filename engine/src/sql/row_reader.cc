#include "sql/row_reader.h"

#include <charconv>

#include "sql/quote.h"

namespace trellis::sql {
namespace {

template <typename T>
std::optional<T> ParseInteger(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

void RowReader::Fail(size_t column, const char* wanted) {
  if (!status_.ok()) return;
  const std::string name =
      column < rows_.columns.size() ? rows_.columns[column] : std::to_string(column);
  status_ =
      Status::Internal("the database returned " + Literal(rows_.at(row_, column).value_or("NULL")) +
                       " in column " + name + " where " + wanted + " was expected");
}

int RowReader::Int(size_t column) {
  if (auto v = ParseInteger<int>(rows_.text(row_, column))) return *v;
  Fail(column, "an integer");
  return 0;
}

int64_t RowReader::Int64(size_t column) {
  if (auto v = ParseInteger<int64_t>(rows_.text(row_, column))) return *v;
  Fail(column, "an integer");
  return 0;
}

std::optional<int64_t> RowReader::OptionalInt64(size_t column) {
  if (!rows_.at(row_, column)) return std::nullopt;
  return Int64(column);
}

bool RowReader::Bool(size_t column) {
  const std::string text = rows_.text(row_, column);
  if (text == "t") return true;
  if (text != "f") Fail(column, "a boolean");
  return false;
}

std::vector<std::string> RowReader::TextArray(size_t column) {
  const std::string text = rows_.text(row_, column);
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    Fail(column, "a text array");
    return {};
  }
  return ParseTextArray(text);
}

std::vector<std::optional<std::string>> RowReader::NullableTextArray(size_t column) {
  const std::string text = rows_.text(row_, column);
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    Fail(column, "a text array");
    return {};
  }
  return ParseNullableTextArray(text);
}

std::optional<std::vector<std::string>> RowReader::OptionalTextArray(size_t column) {
  if (!rows_.at(row_, column)) return std::nullopt;
  return TextArray(column);
}

Result<int64_t> ScalarInt64(const pg::Rows& rows) {
  if (rows.empty() || rows.columns.empty()) {
    return Status::Internal("the database returned no row where a number was expected");
  }
  RowReader reader(rows, 0);
  const int64_t value = reader.Int64(0);
  if (!reader.status().ok()) return reader.status();
  return value;
}

}  // namespace trellis::sql
