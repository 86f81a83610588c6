// A small renderer for the plan's statement templates: readable SQL with
// named slots ("{target}", "{key_columns}"), filled from a map. A template
// names every piece it needs, so a statement reads as SQL, not as string
// concatenation, and a golden test shows the whole text.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace trellis::plan {

using Slots = std::map<std::string, std::string, std::less<>>;

// Replaces every "{name}" in `text` with slots[name]. A slot name is
// [a-z_]+; any other brace (a JSON literal, say) is left as it is. A slot the
// map lacks is a programming error: it throws std::logic_error, which the
// golden tests catch for every template.
std::string Render(std::string_view text, const Slots& slots);

}  // namespace trellis::plan
