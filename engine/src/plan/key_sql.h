// SQL fragments over a key (KeyColumn: a target or unit key) that every
// plan kind renders the same way: NULL-safe key matching, key ranges, a key
// parameter cast back to the key's types. The key's text form itself is
// sql/key_text.h's, which these delegate to.
#pragma once

#include <string>
#include <vector>

#include "plan/transform_plan.h"

namespace trellis::plan {

// "l1 = r1 AND l2 = r2": each pair of key expressions matched NULL-safely.
// A key column that cannot be NULL compares with "=", which every index
// serves; a nullable one with "(l = r OR (l IS NULL AND r IS NULL))", which
// a btree still serves (an OR of two index conditions), where IS NOT
// DISTINCT FROM would not be indexable at all.
std::string KeyEquals(const std::vector<KeyColumn>& key, const std::vector<std::string>& lhs,
                      const std::vector<std::string>& rhs);

// ON CONFLICT of the target key `key`: update `update_columns` (quoted) of
// the target row (aliased `target_alias`) when their values changed, as
// text so that types without equality (json) compare, or DO NOTHING when
// there are none. A row whose values did not change is not rewritten.
std::string OnConflictUpdate(const std::vector<KeyColumn>& key,
                             const std::vector<std::string>& update_columns,
                             const std::string& target_alias);

// The key's expressions, each prefixed with "<qualifier>." when the
// qualifier is not empty.
std::vector<std::string> KeyNames(const std::vector<KeyColumn>& key, const std::string& qualifier);

// The key's expressions over the FROM clause.
std::vector<std::string> KeyExprs(const std::vector<KeyColumn>& key);

// The key's types, in key-column order.
std::vector<std::string> KeyTypes(const std::vector<KeyColumn>& key);

// ROW(($n::text[])[1]::type1, ...): a key parameter cast back to the key's types.
std::string KeyFromParam(const std::vector<KeyColumn>& key, int param);

// The condition that ROW(exprs) lies in (lo, hi], with the bounds that are
// present numbered from `first_param`. Appends the present bounds to
// `params`. "true" for an unbounded range. Rendered per variant (rather than
// "$1 IS NULL OR ...") so that each variant's plan can use the key's index.
std::string InRange(const std::vector<KeyColumn>& key, const std::vector<std::string>& exprs,
                    const KeyRange& range, pg::Params& params);

// The name of a range variant for golden tests: "lo_hi", "lo", "hi", "all".
std::string RangeVariantName(const KeyRange& range);
// The four variants, with placeholder bounds.
std::vector<KeyRange> RangeVariants();

}  // namespace trellis::plan
