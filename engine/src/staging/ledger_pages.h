// Ledger pages from dirty keys: the one way keys become pages, shared by
// staging batches (keys from capture rows) and relation corrections (keys
// from a partition's rows, staging/relation_sync.h).
#pragma once

#include <map>
#include <string>

namespace trellis::staging {

// CTEs that follow a CTE `dirty` (transform_id int, key text[]): they cut
// its keys into pages per transform, insert them, and end with `paged` (id,
// key_count) of the pages made. Text to append after ", " in a WITH list.
// A transform's n keys make ceil(n / $<page_keys_param>) pages of whole key
// buckets, about n / pages keys each (always under twice page_keys), so the
// pages of one batch lock disjoint buckets when drained; a bucket with more
// keys than page_keys goes on over pages of its own, which share only that
// bucket. With `delta_rows`, `dirty` also has columns sign, xid and
// row_values, a key may repeat, and each row whose sign is not NULL
// (plan::TransformPlan::DeltaRowsSql) goes to the page of its key as a
// delta row (spec/engine.md "Deltas"). Every page records how many delta
// rows it carries (`delta_count`, 0 without them), which caps a drain's
// claim (drain/drain_page.h).
// `lock_widths` maps a transform whose units may share a target row to
// the number of leading key values such units have in common
// (plan::MaintainPlan::LockWidth): their buckets hash those values only, so
// that units that may touch one row are in one bucket and never drained
// side by side. Every other transform's buckets hash its whole key.
std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param,
                             bool delta_rows = false,
                             const std::map<int, size_t>& lock_widths = {});

}  // namespace trellis::staging
