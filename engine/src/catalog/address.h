// Resolving an address (spec/grammar.md, "Addresses") against the catalog:
// the transform it names and, for a column address, the column. Used by
// PAUSE/RESUME and by the quarantine reads, which take the same addresses.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/model.h"
#include "pg/connection.h"
#include "trellis/status.h"

namespace trellis::catalog {

struct ResolvedAddress {
  Transform transform;
  std::optional<std::string> column;
};

// The first reading of `parts` (grammar::AddressReadings) that names an
// existing transform; `lock` as for LoadTransform. not_found names what is
// missing: the transform, or the column of the transform it found.
[[nodiscard]] Result<ResolvedAddress> ResolveAddress(pg::Connection& conn,
                                                     const std::string& schema,
                                                     const std::vector<std::string>& parts,
                                                     bool lock);

// A column address `owner.column` of a transform of stages whose column is
// in quarantine in one of its hidden stages rather than in the owner (the
// stage computes it: the grouping of a statement with a subquery in HAVING,
// spec/grammar.md section 11): that stage and the column, so the quarantine
// reads and RESUME reach it by the user's name. nullopt when `parts` is no
// such address (the caller then resolves it as any address), or when the
// owner's own column is the one in quarantine.
[[nodiscard]] Result<std::optional<ResolvedAddress>> ResolveStageColumn(
    pg::Connection& conn, const std::string& schema, const std::vector<std::string>& parts,
    bool lock);

// The name a transform's quarantine is reported under: its owner's for a
// hidden stage (catalog/composite.h), else its own.
[[nodiscard]] Result<std::string> ShownName(pg::Connection& conn, const std::string& schema,
                                            const Transform& t);

// `text` (a paused column's reason, which names the column's address) with
// every mention of hidden stage `stage` made its owner's name `owner`: the
// owner's address reaches the same column (ResolveStageColumn).
[[nodiscard]] std::string NamedByOwner(std::string text, const std::string& stage,
                                       const std::string& owner);

// How a log line names a transform (spec/engine.md "Stages", "In the log"):
// always the transform the user defined. `address` is what a statement or
// call the line suggests takes (RESUME TRANSFORM, sample_quarantined/3,
// release_key/4): the user's transform's name, rendered. `label` is what the
// line calls the transform: that name, and for a hidden stage which stage it
// is and its catalog name, "big_parts (its stage 1, catalog name
// __trellis_derived_7)", for an operator who reads the stage's row or
// target, or the metrics' `transform` label, which carry that name.
struct LogName {
  std::string address;
  std::string label;
};

// Pure: the log name of transform `name`, stage `stage_order` of `owner`
// (empty for a transform the user defined, which is then its own).
[[nodiscard]] LogName LogNameFor(const std::string& name, const std::string& owner,
                                 int stage_order);

// The log name of `t`. No query for a transform the user defined; one (its
// owner's name) for a hidden stage, only when a line is logged, never per
// drain. Never fails: when the owner cannot be read, the stage's own name
// (a log line must not fail the work it reports on).
[[nodiscard]] LogName LogNameOf(pg::Connection& conn, const std::string& schema,
                                const Transform& t);

// The same for a line that has only the transform's id and name: no query
// unless `name` is one only a hidden stage can have (a user's transform
// cannot be named "__trellis_...", spec/engine.md "The composite").
[[nodiscard]] LogName LogNameOf(pg::Connection& conn, const std::string& schema, int transform_id,
                                const std::string& name);

}  // namespace trellis::catalog
