// The closed set of transform kinds, and the name the catalog stores for
// each (transforms.kind), defined here once in the trellis/states.h pattern:
// WireName(kind) and FromWireName<TransformKind>(text) are the only way
// between the enum and the text. Which kind a statement is, and everything
// that differs by kind, is the plan's business (plan/bind.h): outside
// engine/src/plan/ no code compares a kind's name (test/engine/check_kinds.sh).
#pragma once

#include <array>
#include <string_view>

#include "trellis/states.h"

namespace trellis::catalog {

// A switch over it lists every kind and has no default, so that a new kind
// is a compile error (-Wswitch) wherever a kind decides something.
enum class TransformKind {
  kProjection,     // one target row per source row
  kGroupBy,        // one target row per group (GROUP BY, DISTINCT, whole-table aggregates)
  kJoin,           // one target row per FROM row, joined many-to-one
  kFanOutJoin,     // a join of any other shape: rows under one row of a root input
  kFullOuterJoin,  // a FULL JOIN no later join narrows: rows under one join value
};

}  // namespace trellis::catalog

namespace trellis {

template <>
struct WireNames<catalog::TransformKind> {
  static constexpr std::array<std::string_view, 5> kNames = {"projection", "group_by", "join",
                                                             "fan_out_join", "full_outer_join"};
};

}  // namespace trellis
