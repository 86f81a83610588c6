// Who may read what Trellis writes (issue 30 item 3; spec/engine.md
// "Target privileges", "Row-level security"): a TRANSFORM's GRANT SELECT TO
// gives roles SELECT on its target, kept through rebuilds, ALTER TRANSFORM
// and a dump and load; a define over a table with row-level security is
// refused unless it says WITHOUT ROW SECURITY, and security enabled later
// is reported.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <fstream>

#include "roles.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::RoleFixture;

namespace {

constexpr const char* kEngine = "tp_engine";
constexpr const char* kReader = "tp_reader";
constexpr const char* kStranger = "tp_stranger";

// The engine role owns `accounts` (20 rows) and `owners`.
struct Accounts : RoleFixture {
  Accounts() : RoleFixture(kEngine, {kReader, kStranger}) {
    REQUIRE(As(kEngine, R"sql(
CREATE TABLE owners (id int PRIMARY KEY, name text);
INSERT INTO owners SELECT g, 'owner ' || g FROM generate_series(1, 4) g;
CREATE TABLE accounts (id int PRIMARY KEY, owner_id int REFERENCES owners, balance int);
INSERT INTO accounts SELECT g, 1 + g % 4, g FROM generate_series(1, 20) g;
CREATE INDEX ON accounts (owner_id))sql")
                .ok());
  }

  // True when `role` can read `query`; a refusal must be PostgreSQL's
  // permission check, not some other failure.
  bool CanRead(const std::string& role, const std::string& query) {
    auto read = ScalarAs(role, query);
    if (read.ok()) return true;
    INFO(read.status().ToString());
    CHECK_THAT(read.status().message(), Catch::Contains("permission denied"));
    return false;
  }
};

std::string PgBin(const std::string& tool) {
  const char* dir = std::getenv("TRELLIS_PG_BIN");
  return std::string(dir ? dir : "/usr/lib/postgresql/15/bin") + "/" + tool;
}

void Run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

}  // namespace

TEST_CASE("GRANT SELECT TO lets the listed role read the target through rebuilds and ALTERs",
          "[engine][privileges][readers]") {
  Accounts a;
  auto applied = a.session->Apply(
      "TRANSFORM balances FROM accounts SELECT balance AS balance GRANT SELECT TO tp_reader", true);
  if (!applied.ok()) FAIL(applied.status().ToString());
  CHECK(a.f.Scalar("SELECT readers::text FROM trellis.transforms WHERE target_name = "
                   "'balances'") == "{tp_reader}");
  auto definitions = a.session->Definitions();
  REQUIRE(definitions.ok());
  CHECK(definitions->front().statement ==
        "TRANSFORM balances FROM accounts SELECT balance AS balance GRANT SELECT TO tp_reader");
  // Readable at once (before its first build), by the reader alone.
  CHECK(a.CanRead(kReader, "SELECT count(*) FROM balances"));
  CHECK_FALSE(a.CanRead(kStranger, "SELECT count(*) FROM balances"));
  // Nothing else: not the source, not the catalog, not a write.
  CHECK_FALSE(a.CanRead(kReader, "SELECT count(*) FROM accounts"));
  CHECK_FALSE(a.As(kReader, "SELECT count(*) FROM trellis.transforms").ok());
  CHECK_FALSE(a.As(kReader, "DELETE FROM balances").ok());

  a.StartWorkers();
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT sum(balance) FROM balances").value() == "210");

  REQUIRE(a.session->RequestBackfill("balances").ok());
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT sum(balance) FROM balances").value() == "210");

  REQUIRE(a.session->Apply("ALTER TRANSFORM balances ADD COLUMN balance * 2 AS twice", false).ok());
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT sum(twice) FROM balances").value() == "420");
  REQUIRE(
      a.session->Apply("ALTER TRANSFORM balances ALTER COLUMN twice AS balance * 3", false).ok());
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT sum(twice) FROM balances").value() == "630");
  REQUIRE(a.session->Apply("ALTER TRANSFORM balances DROP COLUMN twice", false).ok());
  CHECK(a.CanRead(kReader, "SELECT count(*) FROM balances"));
  CHECK_FALSE(a.CanRead(kStranger, "SELECT count(*) FROM balances"));
}

TEST_CASE("a grouped join's readers read its target and not its hidden join",
          "[engine][privileges][readers]") {
  Accounts a;
  auto applied = a.session->Apply(
      "TRANSFORM totals FROM accounts JOIN owners ON accounts.owner_id = owners.id "
      "SELECT owners.name, sum(accounts.balance) AS total GROUP BY owners.name "
      "GRANT SELECT TO tp_reader",
      true);
  if (!applied.ok()) FAIL(applied.status().ToString());
  a.StartWorkers();
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT sum(total) FROM totals").value() == "210");
  CHECK_FALSE(a.CanRead(kStranger, "SELECT count(*) FROM totals"));
  const std::string hidden = a.f.Scalar(
      "SELECT format('%I.%I', target_schema, target_name) FROM trellis.transforms "
      "WHERE target_name LIKE '\\_\\_trellis\\_join\\_%'");
  CHECK_FALSE(a.As(kReader, "SELECT count(*) FROM " + hidden).ok());
  // ALTER extends the hidden join and rebuilds: the grant stays.
  REQUIRE(a.session->Apply("ALTER TRANSFORM totals ADD COLUMN max(accounts.balance) AS top", false)
              .ok());
  a.f.AwaitConverged(*a.session);
  CHECK(a.ScalarAs(kReader, "SELECT max(top) FROM totals").value() == "20");
}

TEST_CASE("GRANT SELECT TO a role that does not exist is refused and creates nothing",
          "[engine][privileges][readers]") {
  Accounts a;
  auto refused = a.session->Apply(
      "TRANSFORM balances FROM accounts SELECT balance AS balance "
      "GRANT SELECT TO tp_reader, \"No Such Role\"",
      true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kNotFound);
  CHECK(refused.status().message() ==
        "role \"No Such Role\" does not exist: create it before granting it balances, or leave "
        "it out of GRANT SELECT TO");
  CHECK(a.f.Scalar("SELECT to_regclass('balances') IS NULL") == "t");
  CHECK(a.f.Scalar("SELECT count(*) FROM trellis.transforms") == "0");
  CHECK(a.f.Scalar("SELECT count(*) FROM trellis.sources") == "0");

  // public is PostgreSQL's PUBLIC, as in GRANT.
  REQUIRE(a.session
              ->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance "
                      "GRANT SELECT TO public",
                      true)
              .ok());
  CHECK(a.CanRead(kStranger, "SELECT count(*) FROM balances"));
}

TEST_CASE("a dump and load keeps the target's readers, and warns of a role it lacks",
          "[engine][privileges][readers][dump]") {
  Accounts a;
  a.f.Sql("DROP ROLE IF EXISTS tp_gone; CREATE ROLE tp_gone");
  REQUIRE(a.session
              ->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance "
                      "GRANT SELECT TO tp_reader, tp_gone",
                      true)
              .ok());
  REQUIRE(
      a.session->Apply("TRANSFORM plain FROM owners SELECT name AS name WITHOUT ROW SECURITY", true)
          .ok());
  // A role the loading cluster will not have.
  a.f.Sql("REVOKE SELECT ON balances FROM tp_gone; DROP ROLE tp_gone");
  auto dumped = a.session->DumpDefinitionsSql();
  REQUIRE(dumped.ok());
  CHECK_THAT(dumped.value(), Catch::Contains("GRANT SELECT ON public.balances TO tp_reader;"));

  // As `mix ecto.dump` runs pg_dump: no owners, no grants.
  const std::string file = "/tmp/trellis-readers-test-" + std::to_string(getpid()) + ".sql";
  const std::string log = file + ".log";
  Run(PgBin("pg_dump") + " --schema-only --no-owner --no-acl -f " + file + " '" + a.f.url() + "'");
  std::ofstream(file, std::ios::app) << dumped.value();
  EngineFixture to;
  Run(PgBin("psql") + " -q -v ON_ERROR_STOP=1 --single-transaction -f " + file + " '" + to.url() +
      "' > /dev/null 2> " + log);
  std::ifstream warnings(log);
  const std::string warned((std::istreambuf_iterator<char>(warnings)),
                           std::istreambuf_iterator<char>());
  std::remove(file.c_str());
  std::remove(log.c_str());
  CHECK_THAT(warned, Catch::Contains("Trellis: role tp_gone does not exist here, so it is not "
                                     "granted SELECT on public.balances"));
  CHECK(to.Scalar("SELECT readers::text FROM trellis.transforms ORDER BY id LIMIT 1") ==
        "{tp_reader,tp_gone}");
  CHECK(to.Scalar("SELECT string_agg(without_row_security::text, ',' ORDER BY id) FROM "
                  "trellis.transforms") == "false,true");

  // Readable right after the load, and after the loaded database's build.
  auto read_as = [&](const std::string& role, const std::string& query) {
    REQUIRE(to.conn().Exec("SET ROLE " + role).ok());
    auto rows = to.conn().Query(query);
    REQUIRE(to.conn().Exec("RESET ROLE").ok());
    return rows;
  };
  CHECK(read_as(kReader, "SELECT count(*) FROM balances").ok());
  CHECK_FALSE(read_as(kStranger, "SELECT count(*) FROM balances").ok());
  to.Sql(
      "INSERT INTO owners SELECT g, 'owner ' || g FROM generate_series(1, 4) g; "
      "INSERT INTO accounts SELECT g, 1 + g % 4, g FROM generate_series(1, 20) g");
  auto loaded = to.OpenSession(/*migrate=*/false);
  auto workers = trellis::BackgroundWorkers::Start(to.Options(), true, 1);
  to.AwaitConverged(*loaded);
  auto summed = read_as(kReader, "SELECT sum(balance) FROM balances");
  REQUIRE(summed.ok());
  CHECK(summed->text(0, 0) == "210");
  CHECK_FALSE(read_as(kStranger, "SELECT count(*) FROM balances").ok());
  workers.reset();
  // The loaded database's objects go before the fixture drops the roles.
  to.Sql("DROP OWNED BY tp_reader");
}

TEST_CASE("a define over a table with row-level security is refused unless it says so",
          "[engine][privileges][row_security]") {
  Accounts a;
  REQUIRE(a.As(kEngine, "ALTER TABLE accounts ENABLE ROW LEVEL SECURITY").ok());
  auto refused =
      a.session->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance", true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kValidation);
  CHECK(refused.status().message() ==
        "table public.accounts has row-level security enabled, and a transform copies rows past "
        "it: whoever can read balances would read every row the engine's role sees, whatever "
        "the table's policies allow them. Read from a table without row-level security, or add "
        "WITHOUT ROW SECURITY to the TRANSFORM to accept that (and grant the target only to "
        "roles that may see every row)");
  CHECK(a.f.Scalar("SELECT to_regclass('balances') IS NULL") == "t");
  CHECK(a.f.Scalar("SELECT count(*) FROM trellis.transforms") == "0");

  // A joined table's security counts too; so does a forced one.
  REQUIRE(a.As(kEngine,
               "ALTER TABLE accounts DISABLE ROW LEVEL SECURITY; "
               "ALTER TABLE owners ENABLE ROW LEVEL SECURITY; "
               "ALTER TABLE owners FORCE ROW LEVEL SECURITY")
              .ok());
  auto joined = a.session->Apply(
      "TRANSFORM named FROM accounts a JOIN owners o ON a.owner_id = o.id "
      "SELECT o.name AS name",
      true);
  REQUIRE_FALSE(joined.ok());
  CHECK_THAT(joined.status().message(),
             Catch::StartsWith("table public.owners has row-level security enabled"));

  // The opt-in: defined, built, and nothing reported. (Forced, the policies
  // bind the engine's role, the owner, too: with none, it would read no row.)
  REQUIRE(a.As(kEngine, "ALTER TABLE owners NO FORCE ROW LEVEL SECURITY").ok());
  REQUIRE(a.session
              ->Apply("TRANSFORM named FROM accounts a JOIN owners o ON a.owner_id = o.id "
                      "SELECT o.name AS name WITHOUT ROW SECURITY",
                      true)
              .ok());
  a.StartWorkers();
  a.f.AwaitConverged(*a.session);
  CHECK(a.f.Scalar("SELECT count(*) FROM named") == "20");
  auto status = a.session->ReadStatus("named");
  REQUIRE(status.ok());
  CHECK(status->row_security_tables.empty());
}

TEST_CASE("a WITH query named as a table with row-level security reads the query, not the table",
          "[engine][privileges][row_security]") {
  Accounts a;
  REQUIRE(a.As(kEngine, "ALTER TABLE owners ENABLE ROW LEVEL SECURITY").ok());
  // `owners` here is the WITH query, over accounts: the secured table of
  // that name is not read, so nothing is refused.
  auto defined = a.session->Apply(
      "TRANSFORM per_owner WITH owners AS (FROM accounts x SELECT x.owner_id, "
      "sum(x.balance) AS total GROUP BY x.owner_id) "
      "FROM accounts a JOIN owners o ON a.owner_id = o.owner_id SELECT o.total AS total",
      true);
  INFO((defined.ok() ? std::string() : defined.status().ToString()));
  CHECK(defined.ok());
  // Read by a schema-qualified name, it is the table again, and refused.
  auto qualified = a.session->Apply(
      "TRANSFORM named WITH owners AS (FROM accounts x SELECT x.owner_id, "
      "sum(x.balance) AS total GROUP BY x.owner_id) "
      "FROM accounts a JOIN public.owners o ON a.owner_id = o.id JOIN owners t "
      "ON a.owner_id = t.owner_id SELECT o.name AS name",
      true);
  REQUIRE_FALSE(qualified.ok());
  CHECK_THAT(qualified.status().message(),
             Catch::StartsWith("table public.owners has row-level security enabled"));
}

TEST_CASE("a partition with row-level security refuses a define over its parent",
          "[engine][privileges][row_security]") {
  Accounts a;
  REQUIRE(a.As(kEngine, R"sql(
CREATE TABLE events (id int, region int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE events_1 PARTITION OF events FOR VALUES IN (1);
CREATE TABLE events_2 PARTITION OF events FOR VALUES IN (2);
ALTER TABLE events_2 ENABLE ROW LEVEL SECURITY)sql")
              .ok());
  auto refused = a.session->Apply("TRANSFORM copied FROM events SELECT region AS region", true);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(),
             Catch::StartsWith("table public.events_2 has row-level security enabled"));
}

TEST_CASE("row-level security enabled after a define is reported by status until disabled",
          "[engine][privileges][row_security]") {
  Accounts a;
  REQUIRE(
      a.session->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance", true).ok());
  REQUIRE(a.session
              ->Apply("TRANSFORM totals FROM accounts JOIN owners ON accounts.owner_id = "
                      "owners.id SELECT owners.name, count(*) AS n GROUP BY owners.name",
                      true)
              .ok());
  REQUIRE(
      a.session
          ->Apply("TRANSFORM accepted FROM owners SELECT name AS name WITHOUT ROW SECURITY", true)
          .ok());
  CHECK(a.session->ReadStatus("balances")->row_security_tables.empty());
  REQUIRE(a.As(kEngine,
               "ALTER TABLE accounts ENABLE ROW LEVEL SECURITY; "
               "ALTER TABLE owners ENABLE ROW LEVEL SECURITY")
              .ok());
  CHECK(a.session->ReadStatus("balances")->row_security_tables ==
        std::vector<std::string>{"public.accounts"});
  // A grouped join reports the tables its hidden join reads.
  CHECK(a.session->ReadStatus("totals")->row_security_tables ==
        std::vector<std::string>{"public.accounts", "public.owners"});
  CHECK(a.session->ReadStatus("accepted")->row_security_tables.empty());
  // The transforms keep running: the status says so, and nothing pauses.
  a.StartWorkers();
  a.f.Sql("INSERT INTO accounts VALUES (21, 1, 21)");
  a.f.AwaitConverged(*a.session);
  CHECK(a.f.Scalar("SELECT count(*) FROM balances") == "21");
  CHECK(a.session->ReadStatus("balances")->status == "live");
  REQUIRE(a.As(kEngine, "ALTER TABLE accounts DISABLE ROW LEVEL SECURITY").ok());
  CHECK(a.session->ReadStatus("balances")->row_security_tables.empty());
}
