// Self-check jobs (spec/engine.md "Self-check"): a background comparison of
// a target with a fresh recompute of its definition, run by a drain worker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trellis/types.h"

namespace trellis {

struct SelfCheckRequest {
  std::string mode = "full";           // "full" or "sample"
  std::optional<int64_t> sample_size;  // required by "sample", refused by "full"
};

// One column of a divergent row: its value in the target and in the fresh
// recompute, as text (unset: NULL, or no row on that side).
struct DivergentColumn {
  std::string name;
  std::optional<std::string> target;
  std::optional<std::string> recomputed;
};

struct Divergence {
  std::string kind;  // "missing", "extra" or "differs"
  // The target key, as text, in key-column order; nullopt for a NULL
  // element (a group key may be NULL).
  std::vector<std::optional<std::string>> key;
  std::vector<DivergentColumn> columns;  // the columns that differ
  std::string fix;                       // what repairs it
};

struct SelfCheckReport {
  std::string outcome;  // "clean", "diverged" or "unsettled"
  int64_t rows_compared = 0;
  int64_t divergence_count = 0;  // exact, even when the list is truncated
  bool truncated = false;
  int64_t unsettled_keys = 0;              // keys still behind when the check gave up waiting
  std::vector<std::string> failed_ranges;  // ranges the recompute itself failed on
  // Quarantined columns: not compared, their values are withheld on purpose.
  std::vector<std::string> quarantined_columns;
  std::vector<Divergence> divergences;
  std::vector<DrainFailureStatus> drain_failures;
};

struct SelfCheckJob {
  int64_t id = 0;
  std::string target;  // the transform's name, as a statement writes it
  std::string mode;
  std::optional<int64_t> sample_size;
  std::string state;  // "queued", "running", "done", "failed", "cancelled"
  int64_t rows_compared = 0;
  std::optional<SelfCheckReport> report;  // set when done
  std::optional<std::string> error;       // set when failed or cancelled
};

}  // namespace trellis
