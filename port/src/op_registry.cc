#include "op_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace trellis::port {

Op InlineOp(std::string name, InlineHandler handler) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kInline;
  op.run_inline = std::move(handler);
  return op;
}

Op DatabaseOp(std::string name, DatabaseHandler handler) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kDatabase;
  op.run_database = std::move(handler);
  return op;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::Add(Op op) {
  const bool inline_ok = op.kind == OpKind::kInline && op.run_inline;
  const bool database_ok = op.kind == OpKind::kDatabase && op.run_database;
  if (!inline_ok && !database_ok) {
    // Static initialisation: no logger is set up yet, so stderr directly.
    std::fprintf(stderr, "trellis-port: op \"%s\" registered without a handler\n", op.name.c_str());
    std::abort();
  }
  std::string name = op.name;
  if (!ops_.emplace(name, std::move(op)).second) {
    std::fprintf(stderr, "trellis-port: op \"%s\" registered twice\n", name.c_str());
    std::abort();
  }
}

const Op* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const auto& [name, op] : ops_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

OpRegistrar::OpRegistrar(Op op) { OpRegistry::Global().Add(std::move(op)); }

}  // namespace trellis::port
