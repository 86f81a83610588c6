// SQL written as a template with named slots, so that a reader sees the
// statement and not the string building around it:
//
//   FillSlots("DELETE FROM {target} t WHERE t.{rows} = 0",
//             {{"target", "\"app\".\"totals\""}, {"rows", "\"__trellis_rows\""}})
//
// Slot values are inserted as they are: the caller quotes names
// (sql/quote.h) before passing them.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace trellis::plan::aggregates {

using Slots = std::map<std::string, std::string, std::less<>>;

// Replaces every `{name}` in `text` with slots[name]. REQUIRES: every slot
// named in `text` is given (a missing one is left in place, which the golden
// tests of each template would show).
std::string FillSlots(std::string_view text, const Slots& slots);

}  // namespace trellis::plan::aggregates
