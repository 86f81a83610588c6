#include "bench_db.h"
#include "group_benchmarks.h"

namespace trellis::bench {

void CreateOrders(BenchDb& db, const std::string& table, const GroupConfig& config) {
  std::string partitions;
  if (config.partitions > 0) {
    partitions = " PARTITION BY HASH (id);";
    const std::string modulus = std::to_string(config.partitions);
    for (int p = 0; p < config.partitions; ++p) {
      partitions += " CREATE TABLE " + table + "_p" + std::to_string(p) + " PARTITION OF " + table +
                    " FOR VALUES WITH (MODULUS " + modulus + ", REMAINDER " + std::to_string(p) +
                    ");";
    }
  }
  db.Sql("CREATE TABLE " + table +
         " (id bigint PRIMARY KEY, customer_id int NOT NULL, amount int)" + partitions +
         "; INSERT INTO " + table + " SELECT g, g % " + std::to_string(config.groups) +
         ", abs(hashint4(g)) % 1000 FROM generate_series(1, " + std::to_string(config.rows) +
         ") g; CREATE INDEX ON " + table + " (customer_id)");
  db.Sql("VACUUM ANALYZE " + table);
}

std::string TotalsSelect() {
  return "SELECT customer_id, sum(amount) AS total, count(*) AS n, avg(amount) AS mean, "
         "max(amount) AS top";
}

}  // namespace trellis::bench
