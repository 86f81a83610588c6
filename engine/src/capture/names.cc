#include "capture/names.h"

#include <cstdint>

#include "sql/quote.h"

namespace trellis::capture {
namespace {

constexpr std::string_view kTriggerPrefix = "trellis_";
constexpr std::string_view kTriggerInfix = "_capture_";

// FNV-1a, 64 bits: stable across builds and platforms, which a trigger name
// kept in the database for years needs (std::hash promises neither).
uint64_t Fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex16(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[i] = kDigits[value & 0xf];
  return out;
}

}  // namespace

std::string StableHash(std::string_view text) { return Hex16(Fnv1a(text)); }

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  // Back off continuation bytes (10xxxxxx) so the cut falls before a lead byte.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return text.substr(0, end);
}

std::string TriggerName(std::string_view schema, std::string_view event) {
  std::string name = std::string(kTriggerPrefix) + std::string(schema) +
                     std::string(kTriggerInfix) + std::string(event);
  if (name.size() <= kMaxIdentifierBytes) return name;
  // The hash covers the event too: the four names of one schema differ even
  // if a reader ignores everything but the suffix. The NUL separates the
  // parts, so no (schema, event) pair hashes the text of another.
  const std::string hash =
      Hex16(Fnv1a(std::string(schema) + std::string(1, '\0') + std::string(event)));
  const size_t fixed =
      kTriggerPrefix.size() + kTriggerInfix.size() + event.size() + 1 + hash.size();
  return std::string(kTriggerPrefix) +
         std::string(Utf8Prefix(schema, kMaxIdentifierBytes - fixed)) + std::string(kTriggerInfix) +
         std::string(event) + "_" + hash;
}

std::string SlotName(std::string_view database, std::string_view schema) {
  constexpr size_t kMaxReadable = 20;
  std::string readable;
  for (char c : schema) {
    if (readable.size() == kMaxReadable) break;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') readable += c;
  }
  return "trellis_" + readable + "_" +
         Hex16(Fnv1a(std::string(database) + std::string(1, '\0') + std::string(schema)));
}

std::string FunctionName(int source_id, std::string_view event) {
  return "capture_" + std::to_string(source_id) + "_" + std::string(event);
}

std::string QualifiedFunctionName(std::string_view schema, int source_id, std::string_view event) {
  return sql::Qualified(schema, FunctionName(source_id, event));
}

}  // namespace trellis::capture
