// The catalog's view of sources and transforms, as the engine components use
// it. Loaded fresh inside the transaction that acts on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/transform_kind.h"
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
  // The key columns that may hold NULL: a key taken from a Trellis target
  // keyed UNIQUE NULLS NOT DISTINCT (a GROUP BY's, a fan-out join's), read
  // from the table (attnotnull) each time the catalog is loaded. A primary
  // key has none.
  std::vector<std::string> nullable_key_columns;

  bool KeyColumnMayBeNull(const std::string& column) const {
    return std::find(nullable_key_columns.begin(), nullable_key_columns.end(), column) !=
           nullable_key_columns.end();
  }
};

// How a transform reads one of its inputs: the FROM table, or a table joined
// to an earlier input.
enum class InputRole { kFrom, kInnerJoin, kLeftJoin, kRightJoin, kFullJoin };
// The name transform_inputs.role stores.
std::string_view InputRoleName(InputRole role);

// One table a transform reads (catalog table transform_inputs).
struct Input {
  int ordinal = 1;  // 1 is the FROM table; joins follow in definition order
  Source source;
  std::string alias;
  InputRole role = InputRole::kFrom;
  std::optional<int> joined_to;             // the ordinal this input joins to
  std::vector<std::string> join_columns;    // this input's side of the equalities
  std::vector<std::string> joined_columns;  // input joined_to's side, same order
  // The source columns the transform reads from this input's capture rows
  // besides the key (a GROUP BY's group columns); each is in
  // source.routing_columns.
  std::vector<std::string> routed_columns;
  // True when routed_columns carry every column the transform evaluates per
  // row (a GROUP BY's arguments and WHERE too), so its changes can travel as
  // deltas (spec/engine.md "Deltas"); false for inputs routed before.
  bool routes_values = false;
};

// One column of the target's key, in key order (catalog table
// target_key_columns).
struct KeyColumn {
  std::string name;      // in the target
  std::string expr;      // over the inputs, e.g. "w"."id"
  std::string sql_type;  // format_type()
};

// What a column of the target holds: a value of one input row, an aggregate
// over a group, or a hidden column the maintenance keeps for itself.
enum class ColumnRole { kValue, kAggregate, kHidden };
// The name transform_columns.role stores.
std::string_view ColumnRoleName(ColumnRole role);

struct Column {
  std::string name;
  std::string expr;
  std::string sql_type;
  ColumnState state = ColumnState::kLive;
  std::optional<PauseKind> paused_kind;
  std::optional<std::string> paused_reason;
  ColumnRole role = ColumnRole::kValue;
  // Stable for the column's life: later columns get higher ones, and no
  // other column ever takes it (a group plan names hidden columns by it).
  int ordinal = 0;
  // A sum or avg column's argument type, format_type() text with its typmod
  // ("bigint", "numeric(12,2)"): how its deltas keep it exactly
  // (plan/aggregates/rules.h SumKindOf). Absent for other columns and for
  // those defined before catalog step 11.
  std::optional<std::string> argument_type;
};

struct Transform {
  int id = 0;
  std::string target_schema;
  std::string target_name;
  TransformKind kind = TransformKind::kProjection;
  std::string definition;
  std::optional<std::string> where_sql;
  TransformState state = TransformState::kWaitingToBackfill;
  std::optional<PauseKind> paused_kind;
  std::optional<std::string> paused_reason;
  std::optional<int64_t> paused_at_us;
  bool key_indexed = true;  // false until the first build has made the key
  // Capture of the source was found disrupted while the transform was paused
  // for another reason: its RESUME must reinstall capture and rebuild.
  bool capture_disrupted = false;
  // Defined WITHOUT SOURCE INDEX: runs without the source indexes it wants.
  bool source_index_optional = false;
  // Set on a stage: the id of the transform the user defined, which this one
  // is part of (catalog/parts.h); unset on a transform the user knows.
  std::optional<int> owner_id;
  // Its place among its owner's stages, from the sources: 1 reads only
  // sources; the owner has the highest.
  int stage_order = 1;
  // A fan-out join whose units are (root key, key of its one repeating
  // input) rather than root keys (plan/fan_out_join_plan.h, catalog step
  // 19): chosen at define, kept for the transform's life.
  bool side_units = false;
  // The build's size estimate, from its start; its progress is the
  // estimated rows of the build jobs left (catalog/jobs.h).
  std::optional<long long> backfill_total;
  std::optional<int64_t> last_applied_at_us;
  std::optional<int64_t> created_at_us;
  std::vector<Input> inputs;    // in ordinal order; never empty
  std::vector<KeyColumn> key;   // the target key, in key order
  std::vector<Column> columns;  // in ordinal order
  // The FROM input's source and alias (inputs.front()), for the code that
  // reads one table.
  Source source;
  std::string source_alias;

  // The unqualified target name, which is the transform's name.
  const std::string& name() const { return target_name; }
  // Whether `column` is one of the target key's columns.
  bool IsKeyColumn(const std::string& column) const {
    return std::any_of(key.begin(), key.end(),
                       [&](const KeyColumn& k) { return k.name == column; });
  }
};

// Loads every transform (with its inputs, key and columns), ordered by id.
// `lock` adds FOR NO KEY UPDATE on the transform rows.
[[nodiscard]] Result<std::vector<Transform>> LoadTransforms(pg::Connection& conn,
                                                            const std::string& schema,
                                                            bool lock = false);
// Loads one transform by name; not_found names the transform when absent.
[[nodiscard]] Result<Transform> LoadTransform(pg::Connection& conn, const std::string& schema,
                                              const std::string& name, bool lock = false);
[[nodiscard]] Result<Transform> LoadTransformById(pg::Connection& conn, const std::string& schema,
                                                  int id, bool lock = false);
// Loads the transforms that read table `table_schema`.`table_name` (an
// input of theirs is that table), ordered by id: a stage's readers, without
// reading every transform of the catalog.
[[nodiscard]] Result<std::vector<Transform>> LoadReadersOf(pg::Connection& conn,
                                                           const std::string& schema,
                                                           const std::string& table_schema,
                                                           const std::string& table_name);

}  // namespace trellis::catalog
