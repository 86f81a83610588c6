// The statements of a self-check (spec/engine.md "Self-check"), rendered
// from a transform's plan and therefore the same for every transform kind:
// the target against the plan's definition query, its rows matched on the
// target key; the keys it reports and re-checks (its candidates) are unit
// keys (plan/transform_plan.h), each a key literal (sql/key_text.h).
#pragma once

#include <string>
#include <vector>

#include "plan/transform_plan.h"

namespace trellis::drain {

class SelfCheckStatements {
 public:
  // `columns`: the target's value columns (unquoted), compared in this order.
  SelfCheckStatements(const plan::TransformPlan& plan, std::vector<std::string> columns,
                      std::string schema);

  // Compares `range` of the target key in one snapshot. One row: the number
  // of rows on either side, and the unit keys of the rows that differ
  // (missing, extra or with a different value), as a key list
  // (sql::KeyListLiteral).
  plan::Bound CompareRange(const plan::KeyRange& range) const;

  // Re-checks the unit keys given as $1 (a key list) in one snapshot. One
  // row per target row under each unit, on either side (one row, with
  // neither, for a unit that has none): the unit key literal; whether work
  // that may change it is pending (ledger pages, capture rows, a build or a
  // pause of the transform); whether the target and the recompute hold the
  // row; whether the unit is held (drain/held_keys.h); the row's target key
  // literal; then for every value column: the target's value, the
  // recomputed value, and whether they differ; last, the target row's
  // version (`xmin`, NULL without a target row), which a drain that
  // changes the row changes (self_check_runner.cc says why it is read).
  const std::string& RecheckKeysSql() const { return recheck_; }

  // The unit keys of up to $2 rows of a sample of the target: a TABLESAMPLE
  // BERNOULLI of $1 percent of its rows, as key literals.
  std::string SampleTargetKeysSql() const;

  // The compared value columns, unquoted, in RecheckKeysSql's order.
  const std::vector<std::string>& columns() const { return names_; }

  // Columns of RecheckKeysSql before the value triples.
  static constexpr size_t kRecheckLeading = 6;

 private:
  std::string AllPendingSql() const;
  std::string PendingKeysSql() const;

  const plan::TransformPlan& plan_;
  std::vector<std::string> names_;
  std::vector<std::string> columns_;  // quoted
  std::string schema_;
  std::string recheck_;
};

}  // namespace trellis::drain
