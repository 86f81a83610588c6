// The engine's result types as protocol values (spec/protocol.md section 8
// gives each shape). Times are epoch microseconds; absent values are nil.
#pragma once

#include <optional>
#include <string>

#include "trellis/protocol/value.h"
#include "trellis/quarantine.h"
#include "trellis/self_check.h"
#include "trellis/types.h"

namespace trellis::port {

protocol::Value ToValue(const ApplyResult& result);
protocol::Value ToValue(const TransformStatus& status);
protocol::Value ToValue(const Definition& definition);
protocol::Value ToValue(const SelfCheckJob& job);
protocol::Value ToValue(const QuarantineEntry& entry);
protocol::Value ToValue(const QuarantineSample& sample);

// A present value, or nil.
protocol::Value OptionalValue(const std::optional<std::string>& v);
protocol::Value OptionalValue(const std::optional<int64_t>& v);

}  // namespace trellis::port
