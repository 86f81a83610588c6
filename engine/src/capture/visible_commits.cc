#include "capture/visible_commits.h"

#include <algorithm>
#include <charconv>

#include "capture/decoded_changes.h"
#include "capture/pgoutput.h"

namespace trellis::capture {
namespace {

std::optional<uint64_t> Number(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<XactSnapshot> XactSnapshot::Parse(std::string_view text) {
  const auto first = text.find(':');
  if (first == std::string_view::npos) return std::nullopt;
  const auto second = text.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  auto xmin = Number(text.substr(0, first));
  auto xmax = Number(text.substr(first + 1, second - first - 1));
  if (!xmin || !xmax || *xmin > *xmax) return std::nullopt;
  XactSnapshot out{*xmin, *xmax, {}};
  std::string_view list = text.substr(second + 1);
  while (!list.empty()) {
    const auto comma = list.find(',');
    auto xid = Number(list.substr(0, comma));
    if (!xid) return std::nullopt;
    out.running.push_back(*xid);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
    if (list.empty()) return std::nullopt;  // a trailing comma
  }
  return out;
}

bool XactSnapshot::Sees(uint64_t xid) const {
  if (xid < xmin) return true;
  if (xid >= xmax) return false;
  return std::find(running.begin(), running.end(), xid) == running.end();
}

Result<size_t> VisiblePrefix(const std::vector<std::string>& messages,
                             const XactSnapshot& snapshot) {
  for (size_t i = 0; i < messages.size(); ++i) {
    // Only a Begin ('B') names its transaction; the rest need no decoding.
    if (messages[i].empty() || messages[i][0] != 'B') continue;
    auto decoded = pgoutput::Decode(messages[i]);
    if (!decoded.ok()) return decoded.status();
    const uint32_t xid = std::get<pgoutput::Begin>(decoded.value()).xid;
    if (!snapshot.Sees(WidenXid(xid, snapshot.xmax))) return i;
  }
  return messages.size();
}

}  // namespace trellis::capture
