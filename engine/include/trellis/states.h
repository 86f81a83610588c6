// The closed sets of states a transform and its columns can be in, and why a
// paused one was paused. Each value's wire name is defined here once: the
// catalog stores it, the port's hello frame announces the full set, and the
// Elixir package maps exactly that set to atoms (a test checks they agree).
// spec/engine.md "States" describes the transitions between them.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace trellis {

enum class TransformState { kWaitingToBackfill, kBackfilling, kCatchingUp, kLive, kPaused };

enum class PauseKind {
  kOperator,      // PAUSE TRANSFORM
  kDisruption,    // capture of its source was changed outside Trellis
  kSchemaChange,  // the source or target no longer fits the definition
  kFailure,       // a failure charged to the transform (the failure-charging issue)
  kQuarantine,    // a column quarantined on bad data (the failure-charging issue)
};

enum class ColumnState { kLive, kPaused };

// Wire names, in enum order.
template <typename E>
struct WireNames;
template <>
struct WireNames<TransformState> {
  static constexpr std::array<std::string_view, 5> kNames = {"waiting_to_backfill", "backfilling",
                                                             "catching_up", "live", "paused"};
};
template <>
struct WireNames<PauseKind> {
  static constexpr std::array<std::string_view, 5> kNames = {
      "operator", "disruption", "schema_change", "failure", "quarantine"};
};
template <>
struct WireNames<ColumnState> {
  static constexpr std::array<std::string_view, 2> kNames = {"live", "paused"};
};

template <typename E>
constexpr std::string_view WireName(E value) {
  return WireNames<E>::kNames[static_cast<std::size_t>(value)];
}

// The value whose wire name is `name`; nullopt for any other string.
template <typename E>
constexpr std::optional<E> FromWireName(std::string_view name) {
  for (std::size_t i = 0; i < WireNames<E>::kNames.size(); ++i) {
    if (WireNames<E>::kNames[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace trellis
