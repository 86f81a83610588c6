// Typed reads of one result row's cells. The database's text is parsed, never
// trusted: a cell that does not hold what the reader asks for (a catalog
// written by another engine version, a query changed by mistake) records the
// first such error in status() instead of throwing from inside a worker, and
// the read returns a zero value the caller then discards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::sql {

class RowReader {
 public:
  // REQUIRES: row < rows.size(); `rows` outlives the reader.
  RowReader(const pg::Rows& rows, size_t row) : rows_(rows), row_(row) {}

  // The cell as text; "" for NULL.
  std::string Text(size_t column) const { return rows_.text(row_, column); }
  std::optional<std::string> OptionalText(size_t column) const { return rows_.at(row_, column); }
  int Int(size_t column);
  int64_t Int64(size_t column);
  std::optional<int64_t> OptionalInt64(size_t column);
  // A boolean in PostgreSQL's text form ("t" or "f").
  bool Bool(size_t column);
  // A one-dimensional text[] in PostgreSQL's text form.
  std::vector<std::string> TextArray(size_t column);
  std::optional<std::vector<std::string>> OptionalTextArray(size_t column);
  // A one-dimensional text[] whose NULL elements are nullopt.
  std::vector<std::optional<std::string>> NullableTextArray(size_t column);

  // Ok, or the first cell that could not be read as asked.
  const Status& status() const { return status_; }

 private:
  void Fail(size_t column, const char* wanted);

  const pg::Rows& rows_;
  size_t row_;
  Status status_;
};

// The single integer a one-row, one-column query returned.
[[nodiscard]] Result<int64_t> ScalarInt64(const pg::Rows& rows);

}  // namespace trellis::sql
