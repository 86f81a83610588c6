// The statements of a self-check (spec/engine.md "Self-check"), rendered
// from a transform's plan and therefore the same for every transform kind:
// the target against the plan's definition query, matched on the target key.
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
  // of keys on either side, and the keys whose rows differ (missing, extra or
  // with a different value) as text[] literals, in a text[].
  plan::Bound CompareRange(const plan::KeyRange& range) const;

  // Re-checks the keys given as $1 (text[] of text[] literals) in one
  // snapshot. One row per key: the key literal; whether work that may
  // change it is pending (ledger pages, capture rows, a build or a pause of
  // the transform); whether the target and the recompute hold a row for it;
  // whether the key is held (drain/held_keys.h); then for every value column: the target's value,
  // the recomputed value, and whether they differ.
  const std::string& RecheckKeysSql() const { return recheck_; }

  // Up to $2 keys of a sample of the target: a TABLESAMPLE BERNOULLI of $1
  // percent of its rows, as text[] literals.
  std::string SampleTargetKeysSql() const;

  // The compared value columns, unquoted, in RecheckKeysSql's order.
  const std::vector<std::string>& columns() const { return names_; }

  // Columns of RecheckKeysSql before the value triples.
  static constexpr size_t kRecheckLeading = 5;

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
