// path_bench: the batch paths and their chooser (issue 27; spec/engine.md
// "Batch paths"), in one run. N orders (numeric amounts) of N/100
// customers, and three shapes over them, each maintained alone in turn with
// staging and 2 drain threads running, as in production:
//   group       SELECT customer_id, count(*), sum(amount), avg(amount)
//               GROUP BY customer_id
//   join        orders JOIN customers (many-to-one): the order and its
//               customer's name and region
//   projection  SELECT id, amount * 2 WHERE status = 'open'
// For each shape and level (0.01%, 0.1%, 1%, 10%, 100% of the orders
// given a new amount in one committed UPDATE), then a COPY of N new orders
// and a TRUNCATE followed by a reload of N orders in one transaction:
//   - the write's own time, and the time from its commit until the target
//     converged, with the path of the last batch (status's last_batch);
//   - REFRESH MATERIALIZED VIEW of the same query, in the same state;
//   - the bare rewrite of the target rows the write touched (an UPDATE
//     setting each to itself: the floor any stored target pays);
//   - with pg_ivm on the server (bench/build_pg_ivm.sh), the same write on
//     a copy of the orders read by an IMMV of the query, less the write on
//     a plain copy: what pg_ivm adds inside the writer's statement.
// The target must equal its query after every leg. Ratios in one run; no
// timed asserts.
//
//   path_bench [--rows N]   (default 1,000,000 orders)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bench_db.h"
#include "join_sections.h"
#include "stats.h"

namespace trellis::bench {
namespace {

constexpr int kCapMs = 1800000;

struct Shape {
  std::string name;       // also the target's name
  std::string transform;  // TRANSFORM <name> FROM orders ...
  std::string query;      // the same over `orders` (the view's), {orders} for the table
  std::string columns;    // the target's columns the view has, in its order
  std::string touched;    // the target's keys a write of `pick` touches: {pick}
  std::string key;        // the target's key column
  std::string rewritten;  // a value column the bare rewrite sets to itself
};

std::vector<Shape> Shapes() {
  return {
      {"by_customer",
       "TRANSFORM by_customer FROM orders SELECT customer_id, count(*) AS n, sum(amount) AS "
       "total, avg(amount) AS mean GROUP BY customer_id",
       "SELECT customer_id, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM "
       "{orders} GROUP BY customer_id",
       "customer_id, n, total, mean", "SELECT DISTINCT customer_id FROM orders WHERE {pick}",
       "customer_id", "n"},
      {"order_customers",
       "TRANSFORM order_customers FROM orders o JOIN customers c ON o.customer_id = c.id SELECT "
       "c.id AS customer_key, o.amount AS amount, c.name AS name, c.region AS region",
       // The customer's key too: pg_ivm indexes an IMMV of a join only
       // when it holds every side's key (without it, each of its deletes
       // scanned the IMMV: 108 s for a 10% UPDATE of 100,000 orders).
       "SELECT o.id, c.id AS customer_key, o.amount, c.name, c.region FROM {orders} o JOIN "
       "customers c ON o.customer_id = c.id",
       "id, customer_key, amount, name, region", "SELECT id FROM orders WHERE {pick}", "id",
       "amount"},
      {"open_doubled",
       "TRANSFORM open_doubled FROM orders SELECT amount * 2 AS doubled WHERE status = 'open'",
       "SELECT id, amount * 2 AS doubled FROM {orders} WHERE status = 'open'", "id, doubled",
       "SELECT id FROM orders WHERE {pick} AND status = 'open'", "id", "doubled"},
  };
}

std::string Replace(std::string text, const std::string& slot, const std::string& value) {
  for (size_t at = text.find(slot); at != std::string::npos; at = text.find(slot, at)) {
    text.replace(at, slot.size(), value);
    at += value.size();
  }
  return text;
}

std::string Differences(const Shape& s) {
  const std::string mine = "SELECT " + s.columns + " FROM " + s.name;
  return "SELECT count(*) FROM ((" + mine +
         " EXCEPT ALL TABLE mv) UNION ALL (TABLE mv EXCEPT ALL " + mine + ")) d";
}

// N orders of N/100 customers; `table` may be a copy for pg_ivm's legs.
std::string OrdersRows(const std::string& from, const std::string& to, const std::string& groups) {
  return "SELECT g, 1 + g % " + groups + ", (g % 997) / 10.0, CASE WHEN g % 3 = 0 THEN 'closed' " +
         "ELSE 'open' END FROM generate_series(" + from + ", " + to + ") g";
}

// The IMMV of `s` over orders_ivm, or why there is none.
std::optional<std::string> CreateImmv(BenchDb& db, const Shape& s) {
  auto created = db.conn().Exec("CREATE EXTENSION IF NOT EXISTS pg_ivm");
  if (!created.ok()) {
    return "pg_ivm is not installed on this server; build it with bench/build_pg_ivm.sh";
  }
  db.Sql("SELECT pgivm.create_immv('ivm_" + s.name + "', $q$" +
         Replace(s.query, "{orders}", "orders_ivm") + "$q$)");
  return std::nullopt;
}

// One write, as the levels and bulk legs run it: the statement over
// `{orders}`, and which orders it changes (`{pick}` of the touched keys;
// empty for a bulk leg, whose floor is not measured).
struct Write {
  std::string name;
  std::string statement;
  std::string pick;
};

void Leg(BenchDb& db, const Shape& s, const Write& w, bool ivm) {
  // pg_ivm's cost: the same write on the IMMV's copy and on a plain copy.
  std::string ivm_extra = "-";
  if (ivm) {
    const double plain = db.TimeSql(Replace(w.statement, "{orders}", "orders_plain"));
    const double with_ivm = db.TimeSql(Replace(w.statement, "{orders}", "orders_ivm"));
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", (with_ivm - plain) * 1000);
    ivm_extra = text;
  }
  // The floor: the touched target rows rewritten as they are, after the
  // write (so the same rows), timed alone.
  const std::string touched =
      w.pick.empty() ? "" : Replace(s.touched, "{pick}", Replace(w.pick, "{orders}", "orders"));
  const double wrote = db.TimeSql(Replace(w.statement, "{orders}", "orders"));
  const auto committed = Clock::now();
  db.AwaitConverged(kCapMs);
  const double converged = Since(committed);
  const TransformStatus status = db.ReadStatus(s.name);
  const std::string path = status.last_batch ? status.last_batch->path : "-";
  const double refresh = db.TimeSql("REFRESH MATERIALIZED VIEW mv");
  const std::string wrong = db.Scalar(Differences(s));
  if (wrong != "0") throw BenchError(s.name + " differs from its query after " + w.name);
  std::string floor = "-";
  if (!touched.empty()) {
    const double rewrite =
        db.TimeSql("UPDATE " + s.name + " t SET " + s.rewritten + " = t." + s.rewritten +
                   " FROM (" + touched + ") k WHERE t." + s.key + " = k." + s.key);
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", rewrite * 1000);
    floor = text;
  }
  std::printf("| %s | %.0f | %.1f | %s | %.1f | %s | %s | %.2fx |\n", w.name.c_str(), wrote * 1000,
              converged * 1000, path.c_str(), refresh * 1000, floor.c_str(), ivm_extra.c_str(),
              refresh / converged);
  std::fflush(stdout);
}

void RunShape(BenchDb& db, const Shape& s, long rows, bool ivm_wanted) {
  const std::string n = std::to_string(rows);
  const std::string groups = std::to_string(std::max(1L, rows / 100));
  db.Sql("DROP MATERIALIZED VIEW IF EXISTS mv");
  db.Sql("CREATE MATERIALIZED VIEW mv AS " + Replace(s.query, "{orders}", "orders"));
  bool ivm = false;
  if (ivm_wanted) {
    const auto why_not = CreateImmv(db, s);
    if (why_not) std::printf("\n(no pg_ivm legs: %s)\n", why_not->c_str());
    ivm = !why_not;
  }
  db.Apply(s.transform);
  db.AwaitConverged(kCapMs);
  db.Sql("REFRESH MATERIALIZED VIEW mv");
  if (db.Scalar(Differences(s)) != "0") throw BenchError(s.name + " differs after its build");
  std::printf(
      "\n### %s over %ld orders (one run)\n\n"
      "| write | write ms | converged ms (after commit) | last batch's path | REFRESH ms | "
      "rewrite floor ms | pg_ivm extra ms | REFRESH / converged |\n"
      "|---|---|---|---|---|---|---|---|\n",
      s.name.c_str(), rows);
  std::fflush(stdout);
  long seed = 0;
  // PATH_BENCH_SMALL: only the 0.01%, 0.1% and 1% legs (for iterating).
  // PATH_BENCH_REPEAT=n: those legs n times over (medians need several).
  const bool small = std::getenv("PATH_BENCH_SMALL") != nullptr;
  const int repeat = small && std::getenv("PATH_BENCH_REPEAT")
                         ? std::max(1, std::atoi(std::getenv("PATH_BENCH_REPEAT")))
                         : 1;
  std::vector<double> fractions;
  for (int r = 0; r < repeat; ++r)
    for (double f : {0.0001, 0.001, 0.01, 0.1, 1.0})
      if (!small || f <= 0.01) fractions.push_back(f);
  for (double fraction : fractions) {
    const long changed = static_cast<long>(rows * fraction + 0.5);
    db.Sql("VACUUM ANALYZE orders, " + s.name + (ivm ? ", orders_ivm, orders_plain" : ""));
    const std::string pick =
        fraction >= 1.0
            ? "true"
            : "id IN (SELECT DISTINCT 1 + abs(hashint8(g * 31 + " + std::to_string(++seed) +
                  ")) % " + n + " FROM generate_series(1, " + std::to_string(changed) + ") g)";
    char name[64];
    std::snprintf(name, sizeof name, "UPDATE %ld (%g%%)", changed, fraction * 100);
    // The floor's keys are read after the write: the pick names ids,
    // which the UPDATE keeps.
    Leg(db, s, Write{name, "UPDATE {orders} SET amount = amount + 1 WHERE " + pick, pick}, ivm);
  }
  if (small) {
    db.Apply("PAUSE TRANSFORM " + s.name);
    db.Apply("DROP TRANSFORM " + s.name);
    if (ivm) db.Sql("DROP TABLE ivm_" + s.name);
    return;
  }
  db.Sql("VACUUM ANALYZE orders, " + s.name + (ivm ? ", orders_ivm, orders_plain" : ""));
  Leg(db, s,
      Write{"COPY " + n + " new orders",
            "COPY {orders} FROM PROGRAM 'seq " + std::to_string(rows + 1) + " " +
                std::to_string(2 * rows) + " | awk ''{print $1\",\"1+$1%" + groups +
                "\",\"($1%997)/10\",\"($1%3==0?\"closed\":\"open\")}''' WITH (FORMAT csv)",
            ""},
      ivm);
  db.Sql("VACUUM ANALYZE orders, " + s.name + (ivm ? ", orders_ivm, orders_plain" : ""));
  Leg(db, s,
      Write{"TRUNCATE + reload of " + n,
            "BEGIN; TRUNCATE {orders}; INSERT INTO {orders} " + OrdersRows("1", n, groups) +
                "; COMMIT",
            ""},
      ivm);
  db.Apply("PAUSE TRANSFORM " + s.name);
  db.Apply("DROP TRANSFORM " + s.name);
  if (ivm) db.Sql("DROP TABLE ivm_" + s.name);
}

void Run(const test::ThrowawayCluster& cluster, long rows) {
  BenchDb db(cluster, "path_bench");
  const std::string n = std::to_string(rows);
  const std::string groups = std::to_string(std::max(1L, rows / 100));
  db.Sql("CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, region text NOT NULL)");
  db.Sql("INSERT INTO customers SELECT g, 'customer ' || g, 'region ' || g % 25 FROM " +
         std::string("generate_series(1, ") + groups + ") g");
  for (const char* table : {"orders", "orders_ivm", "orders_plain"}) {
    db.Sql(std::string("CREATE TABLE ") + table +
           " (id bigint PRIMARY KEY, customer_id int NOT NULL, amount numeric(12, 2) NOT NULL, "
           "status text NOT NULL)");
    db.Sql(std::string("INSERT INTO ") + table + " " + OrdersRows("1", n, groups));
    db.Sql(std::string("CREATE INDEX ON ") + table + " (customer_id)");
  }
  db.Sql("VACUUM ANALYZE customers, orders, orders_ivm, orders_plain");
  if (const char* ms = std::getenv("PATH_BENCH_EXPLAIN_MS")) {
    // Diagnosis: the workers' sessions (opened from here on) log the plan
    // of every statement slower than this, with actual times.
    db.Sql("LOAD 'auto_explain'");
    db.Sql("ALTER SYSTEM SET session_preload_libraries = 'auto_explain'");
    db.Sql(std::string("ALTER SYSTEM SET auto_explain.log_min_duration = ") + ms);
    db.Sql("ALTER SYSTEM SET auto_explain.log_analyze = on");
    db.Scalar("SELECT pg_reload_conf()");
  }
  if (const char* ms = std::getenv("PATH_BENCH_LOG_MS")) {
    // Diagnosis: the server logs every statement slower than this.
    db.Sql(std::string("ALTER SYSTEM SET log_min_duration_statement = ") + ms);
    db.Scalar("SELECT pg_reload_conf()");
  }
  auto workers = db.StartWorkers();
  const bool ivm = std::getenv("PATH_BENCH_NO_IVM") == nullptr;
  // PATH_BENCH_SHAPES: a comma-separated list of the shapes to run.
  const char* only = std::getenv("PATH_BENCH_SHAPES");
  for (const Shape& s : Shapes()) {
    if (only && ("," + std::string(only) + ",").find("," + s.name + ",") == std::string::npos)
      continue;
    RunShape(db, s, rows, ivm);
  }
  std::printf("\nEvery leg: the target equal to its query (0 differences).\n");
  if (const char* out = std::getenv("PATH_BENCH_SERVER_LOG")) {
    // The server's log (the testkit removes its directory at the end).
    const std::string log =
        db.Scalar("SELECT pg_read_file(current_setting('data_directory') || '/../postgres.log')");
    if (std::FILE* f = std::fopen(out, "w")) {
      std::fwrite(log.data(), 1, log.size(), f);
      std::fclose(f);
    }
  }
}

}  // namespace
}  // namespace trellis::bench

int main(int argc, char** argv) {
  return trellis::bench::JoinBenchMain(argc, argv, trellis::bench::Run);
}
