// The privilege model of capture (issue 17 item 5; spec/engine.md
// "Capture"): the engine runs as a role that owns the catalog, the app
// writes through roles with DML rights on its tables and none on the
// catalog. A write such a role could make before a define must still
// succeed after it, and reach the target.
#include <catch2/catch.hpp>

#include "catalog/migrations.h"
#include "engine_fixture.h"

using trellis::test::EngineFixture;

namespace {

// The fixture's database, as role `role` (the testkit trusts local logins).
trellis::ConnectOptions OptionsAs(const EngineFixture& f, const std::string& role) {
  trellis::ConnectOptions o = f.Options();
  const std::string from = "postgres@";
  const size_t at = o.url.find(from);
  REQUIRE(at != std::string::npos);
  o.url.replace(at, from.size(), role + "@");
  return o;
}

// Runs `statement` as `role` on the fixture's connection; the status it got.
trellis::Status As(EngineFixture& f, const std::string& role, const std::string& statement) {
  REQUIRE(f.conn().Exec("SET ROLE " + role).ok());
  trellis::Status st = f.conn().Exec(statement);
  REQUIRE(f.conn().Exec("RESET ROLE").ok());
  return st;
}

// An engine role that owns the catalog and `accounts`; `writer` with DML
// rights on accounts only; `teller` allowed to read some columns and to
// update `balance` alone.
struct Roles {
  Roles() {
    f.Sql(R"sql(
CREATE ROLE app_owner LOGIN;
CREATE ROLE writer LOGIN;
CREATE ROLE teller LOGIN;
GRANT CREATE ON DATABASE )sql" +
          f.Scalar("SELECT quote_ident(current_database())") + R"sql( TO app_owner;
GRANT CREATE ON SCHEMA public TO app_owner;
SET ROLE app_owner;
CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance int);
INSERT INTO accounts SELECT g, 'o' || g, g FROM generate_series(1, 20) g;
GRANT SELECT, INSERT, UPDATE, DELETE ON accounts TO writer;
GRANT SELECT (id, balance), UPDATE (balance) ON accounts TO teller;
RESET ROLE;
)sql");
    auto s = trellis::Session::Open(OptionsAs(f, "app_owner"));
    REQUIRE(s.ok());
    session = std::move(s.value());
    REQUIRE(session->Migrate().ok());
  }
  ~Roles() {
    // Roles are cluster-wide: leave none behind for the next test.
    workers.reset();
    session.reset();
    // No REQUIRE here: a destructor must not throw.
    (void)f.conn().ExecScript(
        "DROP OWNED BY app_owner, writer, teller CASCADE;"
        "DROP ROLE app_owner; DROP ROLE writer; DROP ROLE teller;");
  }
  EngineFixture f;
  std::unique_ptr<trellis::Session> session;
  std::unique_ptr<trellis::BackgroundWorkers> workers;
};

}  // namespace

TEST_CASE("a DML-only role writes a captured source and its writes reach the target",
          "[engine][capture][privileges]") {
  Roles r;
  auto& f = r.f;
  REQUIRE(r.session
              ->Apply("TRANSFORM balances FROM accounts SELECT owner AS owner, balance AS balance",
                      true)
              .ok());
  // The writer has no right on the catalog, and needs none.
  CHECK_FALSE(As(f, "writer", "SELECT count(*) FROM trellis.capture").ok());
  CHECK(f.Scalar("SELECT has_schema_privilege('writer', 'trellis', 'USAGE')") == "f");
  // Definer functions that pin no setting: an int key's text depends on
  // none (capture/function_settings.h).
  CHECK(f.Scalar("SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                 "WHERE n.nspname = 'trellis' AND p.proname LIKE 'capture%' AND p.prosecdef "
                 "AND p.proconfig IS NULL "
                 "AND NOT has_function_privilege('writer', p.oid, 'EXECUTE') "
                 "AND pg_get_userbyid(p.proowner) = 'app_owner'") == "4");

  auto inserted = As(f, "writer", "INSERT INTO accounts VALUES (100, 'new', 1)");
  INFO(inserted.ToString());
  CHECK(inserted.ok());
  CHECK(As(f, "writer", "UPDATE accounts SET balance = balance + 1 WHERE id <= 10").ok());
  CHECK(As(f, "writer", "DELETE FROM accounts WHERE id = 20").ok());
  r.workers = trellis::BackgroundWorkers::Start(OptionsAs(f, "app_owner"), true, 1);
  f.AwaitConverged(*r.session);
  CHECK(f.Differences("balances", "SELECT id, owner, balance FROM accounts") == 0);
}

TEST_CASE("a writer's search_path and temporary tables cannot redirect a capture function",
          "[engine][capture][privileges]") {
  Roles r;
  auto& f = r.f;
  REQUIRE(
      r.session->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance", true).ok());
  // The function pins no search_path, so the writer's own path is in force
  // while it runs as the engine's role. The writer puts its temporary
  // schema first, holding tables named as the body's capture table and
  // transition table, and a row in each.
  for (const char* statement :
       {"CREATE TEMP TABLE capture (source_id int, xid xid8, op \"char\", routing text[], "
        "relid oid)",
        "CREATE TEMP TABLE trellis_new (id int, owner text, balance int)",
        "INSERT INTO trellis_new VALUES (999, 'evil', 0)"}) {
    const trellis::Status made = As(f, "writer", statement);
    INFO(made.ToString());
    REQUIRE(made.ok());
  }
  REQUIRE(f.conn().Exec("SET search_path = pg_temp, public").ok());
  CHECK(As(f, "writer", "INSERT INTO accounts VALUES (101, 'new', 5)").ok());
  CHECK(As(f, "writer", "UPDATE accounts SET balance = 7 WHERE id = 2").ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_temp.capture") == "0");
  REQUIRE(f.conn().Exec("RESET search_path").ok());
  CHECK(f.Scalar("SELECT string_agg(routing::text, ',' ORDER BY op) FROM trellis.capture") ==
        "{{101}},{{2},{2}}");
  r.workers = trellis::BackgroundWorkers::Start(OptionsAs(f, "app_owner"), true, 1);
  f.AwaitConverged(*r.session);
  CHECK(f.Differences("balances", "SELECT id, balance FROM accounts") == 0);
}

TEST_CASE("a role that may update only some columns still can after a define",
          "[engine][capture][privileges]") {
  Roles r;
  auto& f = r.f;
  REQUIRE(
      r.session->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance", true).ok());
  auto updated = As(f, "teller", "UPDATE accounts SET balance = 0 WHERE id = 3");
  INFO(updated.ToString());
  CHECK(updated.ok());
  // Capture grants nothing more than the role had.
  CHECK_FALSE(As(f, "teller", "UPDATE accounts SET owner = 'x' WHERE id = 3").ok());
  CHECK_FALSE(As(f, "teller", "DELETE FROM accounts WHERE id = 3").ok());
  r.workers = trellis::BackgroundWorkers::Start(OptionsAs(f, "app_owner"), true, 1);
  f.AwaitConverged(*r.session);
  CHECK(f.Differences("balances", "SELECT id, balance FROM accounts") == 0);
  CHECK(f.Scalar("SELECT balance FROM balances WHERE id = 3") == "0");
}

TEST_CASE("capture functions a v1 engine made get the privilege model on upgrade",
          "[engine][capture][privileges]") {
  Roles r;
  auto& f = r.f;
  // A v1 catalog as the engine's role left it: a capture function running
  // with the writer's rights (EXECUTE to PUBLIC by default) and its trigger.
  r.session.reset();
  f.Sql("DROP SCHEMA trellis CASCADE");
  auto owner = trellis::pg::Connection::Open(OptionsAs(f, "app_owner").url, "v1_engine");
  REQUIRE(owner.ok());
  REQUIRE(trellis::catalog::Migrate(*owner.value(), "trellis", 1).ok());
  REQUIRE(owner.value()
              ->ExecScript(R"sql(
CREATE FUNCTION trellis.capture_1_update() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN
  INSERT INTO "trellis".capture (source_id, op, routing)
  VALUES (1, 'U', ARRAY(SELECT ARRAY[r."id"::text] FROM trellis_old r UNION ALL
                        SELECT ARRAY[r."id"::text] FROM trellis_new r)); RETURN NULL; END $trellis$;
CREATE TRIGGER trellis_trellis_capture_update AFTER UPDATE ON public.accounts
  REFERENCING OLD TABLE AS trellis_old NEW TABLE AS trellis_new
  FOR EACH STATEMENT EXECUTE FUNCTION trellis.capture_1_update();
)sql")
              .ok());
  // Under v1 the writer fails: the function runs with its rights.
  CHECK_FALSE(As(f, "writer", "UPDATE accounts SET balance = 1 WHERE id = 1").ok());

  REQUIRE(trellis::catalog::Migrate(*owner.value(), "trellis").ok());
  CHECK(f.Scalar("SELECT prosecdef AND proconfig = ARRAY['search_path=pg_catalog, pg_temp', "
                 "'DateStyle=ISO,MDY', "
                 "'IntervalStyle=postgres', 'extra_float_digits=1', 'bytea_output=hex'] AND "
                 "NOT has_function_privilege('writer', oid, 'EXECUTE') FROM pg_proc WHERE oid = "
                 "'trellis.capture_1_update()'::regprocedure") == "t");
  auto updated = As(f, "writer", "UPDATE accounts SET balance = 1 WHERE id = 1");
  INFO(updated.ToString());
  CHECK(updated.ok());
  CHECK(f.Scalar("SELECT routing::text FROM trellis.capture") == "{{1},{1}}");
}
