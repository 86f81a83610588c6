// Builds driven step by step, the way a drain worker runs them (a range if
// one is free, else the build's start or end), over the `items` scenario
// the first-build and rebuild tests share.
#pragma once

#include <memory>
#include <string>

#include "engine_fixture.h"

namespace trellis::test {

// Rows per planned range: 6 ranges for `items`.
inline constexpr long kItemsRangeRows = 1000;
inline constexpr const char* kItems = R"sql(
CREATE TABLE items (id bigint PRIMARY KEY, v int NOT NULL, w text);
INSERT INTO items SELECT g, g % 97, md5(g::text) FROM generate_series(1, 6000) g;
)sql";
inline constexpr const char* kItemsDefinition =
    "TRANSFORM items_t FROM items SELECT v * 2 AS v2, upper(w) AS w_up WHERE v % 5 <> 0";
inline constexpr const char* kItemsQuery =
    "SELECT id, v * 2 AS v2, upper(w) AS w_up FROM items WHERE v % 5 <> 0";

std::unique_ptr<pg::Connection> ConnectBuilder(EngineFixture& f);

// One builder's step. True when it did something.
Result<bool> TryBuildStep(pg::Connection& conn, long range_rows = kItemsRangeRows);
// The same, failing the test on an error.
bool BuildStep(pg::Connection& conn, long range_rows = kItemsRangeRows);

}  // namespace trellis::test
