#include "pg/error_text.h"

#include <array>
#include <vector>

namespace trellis::pg {
namespace {

std::string_view Trim(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  return line;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// "LINE 12: ..." as libpq writes a statement's position.
bool IsPositionLine(std::string_view line) {
  if (!StartsWith(line, "LINE ")) return false;
  std::size_t i = 5;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  return i > 5 && i < line.size() && line[i] == ':';
}

constexpr std::array<std::string_view, 6> kContextPrefixes = {
    "QUERY:", "CONTEXT:", "STATEMENT:", "LOCATION:", "DETAIL:", "HINT:"};
constexpr std::array<std::string_view, 4> kSeverityPrefixes = {
    "ERROR:", "FATAL:", "PANIC:", "WARNING:"};

}  // namespace

std::string MessageLines(std::string_view text) {
  std::vector<std::string_view> kept;
  bool skip_caret = false;
  bool in_context = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    // A context block (QUERY:, CONTEXT:) may go on over indented lines.
    const bool indented = !line.empty() && (line.front() == ' ' || line.front() == '\t');
    line = Trim(line);
    if (skip_caret) {  // the line after "LINE n:" points at the position
      skip_caret = false;
      if (!line.empty() && line.back() == '^') continue;
    }
    if (line.empty()) continue;
    if (IsPositionLine(line)) {
      skip_caret = true;
      continue;
    }
    bool context = false;
    for (std::string_view prefix : kContextPrefixes) context = context || StartsWith(line, prefix);
    if (context || (in_context && indented)) {
      in_context = true;
      continue;
    }
    in_context = false;
    for (std::string_view prefix : kSeverityPrefixes) {
      if (StartsWith(line, prefix)) line = Trim(line.substr(prefix.size()));
    }
    bool seen = false;
    for (std::string_view k : kept) seen = seen || k == line;
    if (!seen && !line.empty()) kept.push_back(line);
  }
  std::string joined;
  for (std::string_view line : kept) {
    if (!joined.empty()) joined += "; ";
    joined += line;
  }
  return joined;
}

std::string ConnectionLostMessage(std::string_view why) {
  std::string message = "the connection to the database was lost during the call";
  if (!why.empty()) message += " (" + std::string(why) + ")";
  return message +
         "; whether the call took effect is unknown: check its effect, or retry it once the "
         "database accepts connections again";
}

}  // namespace trellis::pg
