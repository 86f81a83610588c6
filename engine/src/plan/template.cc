#include "plan/template.h"

#include <stdexcept>

namespace trellis::plan {
namespace {

bool IsSlotChar(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }

}  // namespace

std::string Render(std::string_view text, const Slots& slots) {
  std::string out;
  out.reserve(text.size() * 2);
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      size_t end = i + 1;
      while (end < text.size() && IsSlotChar(text[end])) ++end;
      if (end < text.size() && text[end] == '}' && end > i + 1) {
        const std::string_view name = text.substr(i + 1, end - i - 1);
        auto it = slots.find(name);
        if (it == slots.end()) {
          throw std::logic_error("statement template slot {" + std::string(name) +
                                 "} has no value");
        }
        out += it->second;
        i = end + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace trellis::plan
