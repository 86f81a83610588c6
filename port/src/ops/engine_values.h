// The engine's result types as protocol values (spec/protocol.md section 8
// gives each shape). Times are epoch microseconds; absent values are nil.
#pragma once

#include "trellis/protocol/value.h"
#include "trellis/self_check.h"
#include "trellis/types.h"

namespace trellis::port {

protocol::Value ToValue(const ApplyResult& result);
protocol::Value ToValue(const TransformStatus& status);
protocol::Value ToValue(const Definition& definition);
protocol::Value ToValue(const SelfCheckJob& job);

}  // namespace trellis::port
