#include "plan/aggregates/sql_template.h"

namespace trellis::plan::aggregates {

std::string FillSlots(std::string_view text, const Slots& slots) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find('}', open + 1);
    if (close == std::string_view::npos) break;
    out.append(text.substr(i, open - i));
    auto slot = slots.find(text.substr(open + 1, close - open - 1));
    if (slot == slots.end()) {
      out.append(text.substr(open, close + 1 - open));
    } else {
      out.append(slot->second);
    }
    i = close + 1;
  }
  out.append(text.substr(i));
  return out;
}

}  // namespace trellis::plan::aggregates
