// The captured changes as staging's readers see them: the relation
// `consumed` that plan::TransformPlan::DirtyKeySql and DeltaRowsSql read,
// whichever feed produced it (capture/feed.h). One row per captured
// statement on one relation, with the columns
//
//   id        an identity of the row within the batch (tid: the trigger
//             feed's ctid), which keeps the versions of two rows apart
//   source_id the source (catalog `sources.id`)
//   op        'I', 'U', 'D' or 'T' (TRUNCATE: routing is NULL)
//   xid       the writer's transaction (xid8)
//   routing   text[][]: one row per row version (an UPDATE's old versions
//             first, then as many new ones), one column per routing column
//             of the source's layout when it was written (capture/routing.h)
//   width     array_length(routing, 2), evaluated once per row
//   versions  array_length(routing, 1), evaluated once per row
//   member    whether the row's relation is still under its source
//             (capture/relations.h CapturedUnderSourceSql); NULL when no
//             reader needs it
#pragma once

#include <string>

namespace trellis::capture {

// The select list of `consumed` over rows of the capture table aliased
// `alias` (the trigger feed's buffer). `member` costs a walk of the captured relations per
// statement, so without `member` (no transform takes deltas, none reads it) it is NULL.
std::string ConsumedColumnsSql(const std::string& schema, const std::string& alias, bool member);

}  // namespace trellis::capture
