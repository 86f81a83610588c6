#include "bench_db.h"
#include "group_benchmarks.h"

namespace trellis::bench {

void CreateOrders(BenchDb& db, const std::string& table, const GroupConfig& config) {
  db.Sql("CREATE TABLE " + table +
         " (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int); INSERT INTO " + table +
         " SELECT g, g % " + std::to_string(config.groups) +
         ", abs(hashint4(g)) % 1000 FROM generate_series(1, " + std::to_string(config.rows) +
         ") g; CREATE INDEX ON " + table + " (customer_id)");
  db.Sql("VACUUM ANALYZE " + table);
}

std::string TotalsSelect() {
  return "SELECT customer_id, sum(amount) AS total, count(*) AS n, avg(amount) AS mean, "
         "max(amount) AS top";
}

}  // namespace trellis::bench
