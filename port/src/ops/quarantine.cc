// Quarantine ops: quarantined, sample_quarantined, release_key
// (spec/protocol.md section 8).
#include "args.h"
#include "op_registry.h"
#include "ops/engine_values.h"

namespace trellis::port {
namespace {

// A bound on one key value's size: a key is a row's key, not a payload.
constexpr size_t kMaxKeyValueBytes = 64 * 1024;

Result<protocol::Value> QuarantinedOp(Session& session, const protocol::Map& args) {
  std::optional<std::string> target;
  if (const protocol::Value* t = FindArg(args, "target"); t && !t->is_nil()) {
    auto text = RequireString(args, "target");
    if (!text.ok()) return text.status();
    target = text.value();
  }
  auto entries = session.Quarantined(target);
  if (!entries.ok()) return entries.status();
  protocol::Array out;
  for (const auto& e : entries.value()) out.push_back(ToValue(e));
  return protocol::Value(std::move(out));
}

Result<protocol::Value> SampleQuarantinedOp(Session& session, const protocol::Map& args) {
  auto target = RequireString(args, "target");
  if (!target.ok()) return target.status();
  auto limit = RequireInt(args, "limit", 1, kMaxSampleLimit);
  if (!limit.ok()) return limit.status();
  std::optional<std::string> cursor;
  if (const protocol::Value* c = FindArg(args, "cursor"); c && !c->is_nil()) {
    auto text = RequireString(args, "cursor");
    if (!text.ok()) return text.status();
    cursor = text.value();
  }
  auto page = session.SampleQuarantined(target.value(), limit.value(), cursor);
  if (!page.ok()) return page.status();
  protocol::Array samples;
  for (const auto& s : page->samples) samples.push_back(ToValue(s));
  return protocol::Value(protocol::MakeMap({
      {"samples", std::move(samples)},
      {"next_cursor", OptionalValue(page->next_cursor)},
  }));
}

Result<protocol::Value> ReleaseKeyOp(Session& session, const protocol::Map& args) {
  auto transform = RequireString(args, "transform");
  if (!transform.ok()) return transform.status();
  const protocol::Value* key = FindArg(args, "key");
  if (!key || !key->is_array() || key->as_array().empty()) {
    return Status::Validation(
        "argument \"key\" must be a non-empty array of strings (nil for NULL): the key's "
        "values in key-column order");
  }
  std::vector<std::optional<std::string>> values;
  for (const auto& v : key->as_array()) {
    if (v.is_nil()) {
      values.emplace_back();
      continue;
    }
    if (!v.is_string() || v.as_string().size() > kMaxKeyValueBytes) {
      return Status::Validation("argument \"key\" must hold strings of at most " +
                                std::to_string(kMaxKeyValueBytes) + " bytes, or nil");
    }
    values.push_back(v.as_string());
  }
  TRELLIS_RETURN_IF_ERROR(session.ReleaseKey(transform.value(), values));
  return protocol::Value();
}

const OpRegistrar kQuarantined(DatabaseOp("quarantined", QuarantinedOp));
const OpRegistrar kSampleQuarantined(DatabaseOp("sample_quarantined", SampleQuarantinedOp));
const OpRegistrar kReleaseKey(DatabaseOp("release_key", ReleaseKeyOp));

}  // namespace
}  // namespace trellis::port
