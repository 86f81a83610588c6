// A hostile writer (issue 30 item 3; spec/engine.md "Capture",
// "Privileges"): a role with DML on one source and nothing else tries every
// way we know to use capture to write capture rows for another table, to
// read another table or the catalog, or to run code as the engine's role.
// Each probe asserts PostgreSQL's refusal (or, for the shadowing probes,
// that the capture row went where it belongs and nothing of the writer's
// ran). Finally both targets still equal their sources.
#include <catch2/catch.hpp>

#include "roles.h"

using trellis::test::RoleFixture;

namespace {

constexpr const char* kEngine = "hw_engine";
constexpr const char* kWriter = "hw_writer";

// The engine role owns `accounts`, which the writer may change, and
// `secrets`, which it may not touch; a transform reads each.
struct HostileWriter : RoleFixture {
  HostileWriter() : RoleFixture(kEngine, {kWriter}) {
    REQUIRE(As(kEngine, R"sql(
CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance int);
INSERT INTO accounts SELECT g, 'o' || g, g FROM generate_series(1, 10) g;
CREATE TABLE secrets (id int PRIMARY KEY, secret text);
INSERT INTO secrets SELECT g, 'secret ' || g FROM generate_series(1, 10) g;
GRANT SELECT, INSERT, UPDATE, DELETE ON accounts TO hw_writer)sql")
                .ok());
    REQUIRE(
        session->Apply("TRANSFORM balances FROM accounts SELECT balance AS balance", true).ok());
    REQUIRE(session->Apply("TRANSFORM kept FROM secrets SELECT secret AS secret", true).ok());
    accounts_id = f.Scalar("SELECT id FROM trellis.sources WHERE table_name = 'accounts'");
    secrets_id = f.Scalar("SELECT id FROM trellis.sources WHERE table_name = 'secrets'");
  }

  // `statement` as the writer must fail with `refusal` in its message.
  void Refused(const std::string& statement, const std::string& refusal) {
    INFO(statement);
    const trellis::Status st = As(kWriter, statement);
    INFO(st.ToString());
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains(refusal));
  }

  std::string SecretsFunction(const std::string& event) const {
    return "trellis.capture_" + secrets_id + "_" + event + "()";
  }

  std::string accounts_id, secrets_id;
};

}  // namespace

TEST_CASE("a DML-only writer cannot call, forge or bypass capture, or read the catalog",
          "[engine][capture][privileges][hostile]") {
  HostileWriter h;
  auto& f = h.f;
  const std::string denied = "permission denied";

  SECTION("calling capture functions directly") {
    for (const char* event : {"insert", "update", "delete", "truncate"}) {
      h.Refused("SELECT " + h.SecretsFunction(event), "permission denied for schema trellis");
    }
  }
  SECTION("forging a transition table: its own table's trigger calling a capture function") {
    REQUIRE(h.As(kWriter, "CREATE TEMP TABLE fake (id int, secret text)").ok());
    h.Refused(
        "CREATE TRIGGER forged AFTER INSERT ON pg_temp.fake REFERENCING NEW TABLE AS "
        "trellis_new FOR EACH STATEMENT EXECUTE FUNCTION " +
            h.SecretsFunction("insert"),
        "permission denied for schema trellis");
  }
  SECTION("writing the capture table directly, or through a function of its own") {
    h.Refused("INSERT INTO trellis.capture (source_id, op, routing) VALUES (" + h.secrets_id +
                  ", 'I', ARRAY[ARRAY['1']])",
              "permission denied for schema trellis");
    h.Refused("DELETE FROM trellis.capture", "permission denied for schema trellis");
    h.Refused("TRUNCATE trellis.capture", "permission denied for schema trellis");
    // PL/pgSQL resolves names when it runs, so the function is made; the
    // call is where the rights are checked, as the writer.
    REQUIRE(h.As(kWriter,
                 "CREATE FUNCTION pg_temp.forge() RETURNS void LANGUAGE plpgsql AS "
                 "'BEGIN INSERT INTO trellis.capture (source_id, op, routing) "
                 "VALUES (" +
                     h.secrets_id + ", ''I'', ''{{1}}''); END'")
                .ok());
    h.Refused("SELECT pg_temp.forge()", "permission denied for schema trellis");
  }
  SECTION("reading the catalog, the other table and its target") {
    auto tables = f.conn().Query(
        "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
        "WHERE schemaname = 'trellis' ORDER BY 1");
    REQUIRE(tables.ok());
    REQUIRE(tables->size() > 10);
    for (size_t r = 0; r < tables->size(); ++r) {
      h.Refused("SELECT count(*) FROM " + tables->text(r, 0), "permission denied for schema");
    }
    h.Refused("SELECT count(*) FROM secrets", "permission denied for table secrets");
    h.Refused("SELECT count(*) FROM kept", "permission denied for table kept");
    h.Refused("SELECT count(*) FROM balances", "permission denied for table balances");
  }
  SECTION("becoming the engine's role, or switching capture off") {
    h.Refused("SET ROLE hw_engine", "permission denied to set role");
    h.Refused("SET SESSION AUTHORIZATION hw_engine", "permission denied to set session");
    h.Refused("SET session_replication_role = replica", denied);
    h.Refused("ALTER TABLE accounts DISABLE TRIGGER ALL", "must be owner");
    h.Refused("DROP TRIGGER trellis_trellis_capture_insert ON accounts", "must be owner");
    h.Refused(
        "CREATE TRIGGER mine AFTER INSERT ON accounts FOR EACH STATEMENT EXECUTE "
        "FUNCTION " +
            h.SecretsFunction("insert"),
        denied);
    // A child or partition of its own would put its rows in the source.
    h.Refused("CREATE TEMP TABLE child () INHERITS (accounts)", "must be owner");
  }
  SECTION("even with USAGE on the catalog schema, as a monitoring grant might give") {
    h.f.Sql("GRANT USAGE ON SCHEMA trellis TO hw_writer");
    h.Refused("SELECT " + h.SecretsFunction("insert"), "permission denied for function");
    REQUIRE(h.As(kWriter, "CREATE TEMP TABLE fake (id int, secret text)").ok());
    h.Refused(
        "CREATE TRIGGER forged AFTER INSERT ON pg_temp.fake REFERENCING NEW TABLE AS "
        "trellis_new FOR EACH STATEMENT EXECUTE FUNCTION " +
            h.SecretsFunction("insert"),
        "permission denied for function");
    h.Refused("INSERT INTO trellis.capture (source_id, op, routing) VALUES (" + h.secrets_id +
                  ", 'I', ARRAY[ARRAY['1']])",
              "permission denied for table capture");
    h.Refused("SELECT count(*) FROM trellis.transforms", "permission denied for table transforms");
    h.Refused("SELECT count(*) FROM trellis.quarantined_rows",
              "permission denied for table quarantined_rows");
  }
  // Nothing it tried left a capture row.
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture") == "0");
}

TEST_CASE("a DML-only writer finds no schema on the engine's path to put objects in",
          "[engine][capture][privileges][hostile]") {
  HostileWriter h;
  {
    // No schema on the engine's path takes the writer's objects (PostgreSQL
    // 15: public is not writable by PUBLIC).
    h.Refused("CREATE FUNCTION public.upper(text) RETURNS text LANGUAGE sql AS 'SELECT $1'",
              "permission denied for schema public");
    h.Refused("CREATE TABLE public.capture (x int)", "permission denied for schema public");
  }
}

TEST_CASE("a writer's shadowing objects never run as the engine, and its writes stay its own",
          "[engine][capture][privileges][hostile]") {
  HostileWriter h;
  auto& f = h.f;
  // Everything a capture function's body could be made to find: tables named
  // as its target and transition tables, functions and an operator named as
  // what it might call, each recording who ran it, all first on the path.
  REQUIRE(h.As(kWriter, R"sql(
CREATE TEMP TABLE ran (who text);
GRANT ALL ON pg_temp.ran TO PUBLIC;
CREATE TEMP TABLE capture (source_id int, xid xid8, op "char", routing text[], relid oid);
CREATE TEMP TABLE trellis_new (id int, owner text, balance int);
CREATE TEMP TABLE trellis_old (id int, owner text, balance int);
INSERT INTO trellis_new VALUES (999, 'evil', 0);
CREATE FUNCTION pg_temp.text(int) RETURNS text LANGUAGE sql
  AS 'INSERT INTO pg_temp.ran VALUES (current_user) RETURNING ''x''';
CREATE FUNCTION pg_temp.array_agg(text) RETURNS text LANGUAGE sql
  AS 'INSERT INTO pg_temp.ran VALUES (current_user) RETURNING ''x''';
CREATE FUNCTION pg_temp.pg_current_xact_id() RETURNS xid8 LANGUAGE sql
  AS 'INSERT INTO pg_temp.ran VALUES (current_user) RETURNING ''1''::xid8')sql")
              .ok());
  REQUIRE(h.As(kWriter, "SET search_path = pg_temp, public").ok());
  CHECK(h.As(kWriter, "INSERT INTO accounts VALUES (11, 'new', 5)").ok());
  CHECK(h.As(kWriter, "UPDATE accounts SET balance = 7 WHERE id = 2").ok());
  CHECK(h.As(kWriter, "DELETE FROM accounts WHERE id = 3").ok());
  CHECK(h.ScalarAs(kWriter, "SELECT count(*) FROM pg_temp.ran").value() == "0");
  CHECK(h.ScalarAs(kWriter, "SELECT count(*) FROM pg_temp.capture").value() == "0");
  // Three capture rows, all the source's, none for the other table.
  CHECK(f.Scalar("SELECT string_agg(source_id || ':' || op::text || ':' || routing::text, ',' "
                 "ORDER BY op) FROM trellis.capture") == h.accounts_id + ":D:{{3}}," +
                                                             h.accounts_id + ":I:{{11}}," +
                                                             h.accounts_id + ":U:{{2},{2}}");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.capture WHERE relid <> 'accounts'::regclass") ==
        "0");
  h.StartWorkers();
  f.AwaitConverged(*h.session);
  CHECK(f.Differences("balances", "SELECT id, balance FROM accounts") == 0);
  CHECK(f.Differences("kept", "SELECT id, secret FROM secrets") == 0);
}
