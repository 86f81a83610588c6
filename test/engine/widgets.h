// The `widgets` source most engine tests start from, and the scenarios built
// on it.
#pragma once

#include <memory>
#include <string>

#include "engine_fixture.h"

namespace trellis::test {

// 2000 widgets with a column of each common type.
inline constexpr const char* kWidgets = R"sql(
CREATE TABLE widgets (id bigint PRIMARY KEY, name text, price numeric, meta jsonb,
                      seen timestamptz, active bool);
INSERT INTO widgets
SELECT g, 'w' || g, g * 1.5, jsonb_build_object('g', g), '2024-01-01'::timestamptz + g * interval '1 hour',
       g % 2 = 0
FROM generate_series(1, 2000) g;
)sql";

inline constexpr const char* kPricesQuery =
    "SELECT id, price, name AS label FROM widgets WHERE price > 10";

// Polls a transform's status until it reads `wanted` or about 4 s pass;
// returns the last status read.
std::string AwaitStatus(Session& s, const std::string& name, const std::string& wanted);

// `widgets` with the live projection `a` (its price) over it, and staging
// plus `drains` drain threads running: where most lifecycle tests start.
struct LivePrices {
  explicit LivePrices(int drains);
  EngineFixture f;
  std::unique_ptr<Session> s;
  std::unique_ptr<BackgroundWorkers> workers;
};

}  // namespace trellis::test
