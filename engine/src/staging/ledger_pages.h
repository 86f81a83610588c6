// Ledger pages from dirty keys: the one way keys become pages, shared by
// staging batches (keys from capture rows) and relation corrections (keys
// from a partition's rows, staging/relation_sync.h).
#pragma once

#include <string>

namespace trellis::staging {

// CTEs that follow a CTE `dirty` (transform_id int, key text[]): they cut
// its keys into pages of whole key buckets, of about $<page_keys_param>
// keys each (at most twice that; a bucket with more keys than that is split
// over pages of its own), per transform,
// insert them, and end with `paged` (id, key_count) of the pages made. Text
// to append after ", " in a WITH list. With `delta_rows`, `dirty` also has
// columns sign, xid and row_values, a key may repeat, and each row whose
// sign is not NULL (plan::TransformPlan::DeltaRowsSql) goes to the page of
// its key as a delta row (spec/engine.md "Deltas").
std::string PageDirtyKeysSql(const std::string& schema, int page_keys_param,
                             bool delta_rows = false);

}  // namespace trellis::staging
