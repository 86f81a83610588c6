// The catalog's view of sources and transforms, as the engine components use
// it. Loaded fresh inside the transaction that acts on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/states.h"
#include "trellis/status.h"

namespace trellis::catalog {

struct Source {
  int id = 0;
  std::string schema_name;
  std::string table_name;
  std::vector<std::string> key_columns;
  std::vector<std::string> key_types;  // format_type() of each key column
  std::vector<std::string> routing_columns;
};

struct Column {
  std::string name;
  std::string expr;
  std::string sql_type;
  ColumnState state = ColumnState::kLive;
  std::optional<PauseKind> paused_kind;
  std::optional<std::string> paused_reason;
};

struct Transform {
  int id = 0;
  std::string target_schema;
  std::string target_name;
  std::string kind;  // "projection", "group_by", "join"
  std::string definition;
  std::string source_alias;
  std::optional<std::string> where_sql;
  TransformState state = TransformState::kWaitingToBackfill;
  std::optional<PauseKind> paused_kind;
  std::optional<std::string> paused_reason;
  std::optional<std::string> paused_at;  // epoch microseconds as text
  std::optional<std::vector<std::string>> backfill_cursor;
  std::optional<std::vector<std::string>> backfill_columns;
  long long backfill_done = 0;
  bool key_indexed = true;  // false until the first build has made the key
  // Capture of the source was found disrupted while the transform was paused
  // for another reason: its RESUME must reinstall capture and rebuild.
  bool capture_disrupted = false;
  std::optional<long long> backfill_total;
  std::optional<std::string> last_applied_at;  // epoch microseconds as text
  std::optional<std::string> created_at;       // epoch microseconds as text
  Source source;
  std::vector<Column> columns;  // in ordinal order

  // The unqualified target name, which is the transform's name.
  const std::string& name() const { return target_name; }
};

// Loads every transform (with its source and columns), ordered by id.
// `lock` adds FOR UPDATE on the transform rows.
Result<std::vector<Transform>> LoadTransforms(pg::Connection& conn, const std::string& schema,
                                              bool lock = false);
// Loads one transform by name; not_found names the transform when absent.
Result<Transform> LoadTransform(pg::Connection& conn, const std::string& schema,
                                const std::string& name, bool lock = false);
Result<Transform> LoadTransformById(pg::Connection& conn, const std::string& schema, int id,
                                    bool lock = false);

}  // namespace trellis::catalog
