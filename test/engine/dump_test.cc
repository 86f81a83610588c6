// The definitions dump: a schema-only pg_dump of a database with transforms,
// plus Session::DumpDefinitionsSql(), loaded into an empty database with
// psql, gives a database whose workers build every target again.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "engine_fixture.h"
#include "pipeline_steps.h"

using trellis::test::EngineFixture;

namespace {

std::string PgBin(const std::string& tool) {
  const char* dir = std::getenv("TRELLIS_PG_BIN");
  return std::string(dir ? dir : "/usr/lib/postgresql/15/bin") + "/" + tool;
}

// Runs a command through the shell; fails the test when it fails.
void Run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

TEST_CASE("a schema dump plus the definitions dump loads into a database that builds the targets",
          "[engine][dump]") {
  EngineFixture from;
  from.Sql(
      "CREATE TABLE widgets (id bigint PRIMARY KEY, name text, price numeric); "
      "INSERT INTO widgets SELECT g, 'w' || g, g FROM generate_series(1, 300) g; "
      "CREATE TABLE \"Odd Table\" (\"K\" int, k2 text, v text, PRIMARY KEY (\"K\", k2)); "
      "INSERT INTO \"Odd Table\" SELECT g, 'x', 'it''s ' || g FROM generate_series(1, 50) g; "
      "CREATE TABLE customers (id int PRIMARY KEY, region text); "
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int)");
  auto s = from.OpenSession();
  // A grouped join: two catalog transforms, the hidden join recorded as the
  // group's stage; the load must keep it one transform to the user.
  REQUIRE(s->Apply("TRANSFORM by_region FROM orders JOIN customers ON orders.customer_id = "
                   "customers.id SELECT customers.region, sum(orders.amount) AS total "
                   "GROUP BY customers.region",
                   true)
              .ok());
  REQUIRE(s->Apply("TRANSFORM cheap FROM widgets AS w SELECT upper(w.name) AS label, "
                   "w.price AS price WHERE w.price < 100",
                   true)
              .ok());
  REQUIRE(s->Apply("ALTER TRANSFORM cheap ADD COLUMN price * 2 AS twice", false).ok());
  REQUIRE(
      s->Apply("TRANSFORM \"Odd Target\" FROM \"Odd Table\" SELECT v || '!' AS \"V\"", true).ok());
  REQUIRE(s->Apply("PAUSE TRANSFORM \"Odd Target\"", false).ok());
  {
    auto workers = trellis::BackgroundWorkers::Start(from.Options(), true, 1);
    from.AwaitConverged(*s);
  }
  auto definitions = s->Definitions();
  REQUIRE(definitions.ok());
  auto dumped = s->DumpDefinitionsSql();
  REQUIRE(dumped.ok());

  const std::string file = "/tmp/trellis-dump-test-" + std::to_string(getpid()) + ".sql";
  Run(ShellQuote(PgBin("pg_dump")) + " --schema-only --no-owner -f " + file + " " +
      ShellQuote(from.url()));
  std::ofstream(file, std::ios::app) << dumped.value();

  EngineFixture to;
  Run(ShellQuote(PgBin("psql")) + " -q -v ON_ERROR_STOP=1 -f " + file + " " + ShellQuote(to.url()) +
      " > /dev/null");
  std::remove(file.c_str());
  // Rows arrive after the load, as an app's would, through the dumped triggers.
  to.Sql("INSERT INTO widgets SELECT g, 'w' || g, g FROM generate_series(1, 300) g");
  to.Sql("INSERT INTO \"Odd Table\" SELECT g, 'x', 'it''s ' || g FROM generate_series(1, 50) g");
  to.Sql("INSERT INTO customers SELECT g, 'r' || g % 4 FROM generate_series(1, 40) g");
  to.Sql("INSERT INTO orders SELECT g, 1 + g % 50, g % 9 FROM generate_series(1, 400) g");

  auto loaded = to.OpenSession(/*migrate=*/false);
  REQUIRE(loaded->CheckMigrated().ok());
  auto reloaded = loaded->Definitions();
  REQUIRE(reloaded.ok());
  REQUIRE(reloaded->size() == definitions->size());
  for (size_t i = 0; i < reloaded->size(); ++i) {
    CHECK((*reloaded)[i].name == (*definitions)[i].name);
    CHECK((*reloaded)[i].statement == (*definitions)[i].statement);
    CHECK((*reloaded)[i].status == "waiting_to_backfill");  // the paused one too
  }
  auto workers = trellis::BackgroundWorkers::Start(to.Options(), true, 2);
  to.AwaitConverged(*loaded);
  CHECK(to.Differences("cheap",
                       "SELECT w.id, upper(w.name) AS label, w.price AS price, "
                       "w.price * 2 AS twice FROM widgets w WHERE w.price < 100") == 0);
  CHECK(to.Differences("\"Odd Target\"",
                       "SELECT \"K\", k2, v || '!' AS \"V\" FROM \"Odd Table\"") == 0);
  CHECK(to.Scalar("SELECT count(*) FROM cheap") == "99");
  CHECK(trellis::test::SelectDifferences(
            to, "SELECT region, total FROM by_region",
            "SELECT c.region, sum(o.amount) AS total FROM orders o "
            "JOIN customers c ON o.customer_id = c.id GROUP BY c.region") == 0);
  // Capture came with the schema dump, ENABLE ALWAYS and all.
  auto disrupted = loaded->DetectCaptureDisruptions();
  REQUIRE(disrupted.ok());
  CHECK(disrupted->empty());
  to.Sql("UPDATE widgets SET price = 1 WHERE id = 150");
  to.AwaitConverged(*loaded);
  CHECK(to.Scalar("SELECT count(*) FROM cheap") == "100");
  // A define on the loaded database takes fresh ids.
  REQUIRE(loaded->Apply("TRANSFORM names FROM widgets SELECT name AS name", true).ok());
}
