// The partitioned and inherited sources the partition tests share, with the
// group transform they keep over them.
#pragma once

#include <memory>
#include <string>

#include "engine_fixture.h"
#include "plan/transform_plan.h"

namespace trellis::test {

// Group g spans both partitions; group 7 has one row in each.
inline constexpr const char* kPartitionedOrders = R"sql(
CREATE TABLE orders (id bigint, region int, g int, amount int, PRIMARY KEY (id, region))
  PARTITION BY LIST (region);
CREATE TABLE orders_p0 PARTITION OF orders FOR VALUES IN (0);
CREATE TABLE orders_p1 PARTITION OF orders FOR VALUES IN (1);
INSERT INTO orders SELECT i, i % 2, i % 3, i FROM generate_series(1, 30) i;
INSERT INTO orders VALUES (100, 1, 7, 5), (101, 0, 7, 6);
)sql";

// The same shape by inheritance: rows in the parent and in one child,
// orders_p1; group 7 has one row in each.
inline constexpr const char* kInheritedOrders = R"sql(
CREATE TABLE orders (id bigint PRIMARY KEY, region int, g int, amount int);
CREATE TABLE orders_p1 (PRIMARY KEY (id)) INHERITS (orders);
INSERT INTO orders SELECT i, 0, i % 3, i FROM generate_series(1, 30, 2) i;
INSERT INTO orders_p1 SELECT i, 1, i % 3, i FROM generate_series(2, 30, 2) i;
INSERT INTO orders VALUES (101, 0, 7, 6);
INSERT INTO orders_p1 VALUES (100, 1, 7, 5);
)sql";

inline constexpr const char* kTotals =
    "TRANSFORM totals FROM orders SELECT g, count(*) AS n, sum(amount) AS total, "
    "max(amount) AS top GROUP BY g";
inline constexpr const char* kTotalsQuery =
    "SELECT g, count(*) AS n, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY g";

// `totals` defined over the source `setup` makes, built and live, on the
// delta path; no worker running.
std::unique_ptr<Session> BuiltTotals(EngineFixture& f, const char* setup);

// The plan of `totals` as the catalog holds it now.
std::unique_ptr<plan::TransformPlan> TotalsPlan(pg::Connection& conn);

// The relation sync's findings now, as "node:change" in order.
std::string Changes(pg::Connection& conn);

// DETACH PARTITION `partition` (of `orders`) CONCURRENTLY, interrupted in
// its second transaction, which waits for a reader of `orders` from before
// its first: the partition is left pending, out of every new snapshot of
// the source. The reader reads `orders` with `reader_query`, in REPEATABLE
// READ, and ends after the interrupt.
void LeavePendingDetach(EngineFixture& f, const std::string& partition,
                        const std::string& reader_query);

}  // namespace trellis::test
