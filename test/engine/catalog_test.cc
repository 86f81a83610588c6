// The catalog: migrations.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "catalog/address.h"
#include "catalog/migrations.h"
#include "catalog/model.h"
#include "engine_fixture.h"
#include "sql/quote.h"
#include "trellis/states.h"
#include "widgets.h"

using trellis::Code;
using trellis::test::EngineFixture;
using trellis::test::kWidgets;

TEST_CASE("migrate is idempotent and two sessions can migrate at once", "[engine][catalog]") {
  EngineFixture f;
  auto a = f.OpenSession(false);
  auto b = f.OpenSession(false);
  trellis::Status sa, sb;
  std::thread ta([&] { sa = a->Migrate(); });
  std::thread tb([&] { sb = b->Migrate(); });
  ta.join();
  tb.join();
  CHECK(sa.ok());
  CHECK(sb.ok());
  CHECK(a->Migrate().ok());
  CHECK(f.Scalar("SELECT version FROM trellis.catalog_version") ==
        std::to_string(trellis::catalog::kCatalogVersion));
}

TEST_CASE("calls before migrate say to run migrate", "[engine][catalog]") {
  EngineFixture f;
  auto s = f.OpenSession(false);
  auto r = s->Apply("TRANSFORM t FROM x SELECT a AS b", false);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kNotMigrated);
  CHECK_THAT(r.status().message(), Catch::Contains("migrate"));
  CHECK(s->Definitions().status().code() == Code::kNotMigrated);
}

namespace {

// What a v1 engine left in its catalog for `widgets` read by two transforms:
// `a` (price) built and live, `b` (name) paused by an operator, with v1's
// capture functions and triggers. Written out literally: it is the released
// v1 layout, which later engines must keep upgrading.
constexpr const char* kV1Catalog = R"sql(
CREATE TABLE a AS SELECT id, price FROM widgets;
ALTER TABLE a ADD PRIMARY KEY (id);
CREATE TABLE b AS SELECT id, name FROM widgets;
ALTER TABLE b ADD PRIMARY KEY (id);
INSERT INTO trellis.sources (id, relid, schema_name, table_name, key_columns, key_types,
                             routing_columns)
VALUES (1, 'widgets'::regclass, 'public', 'widgets', '{id}', '{bigint}', '{id}');
INSERT INTO trellis.transforms (id, target_schema, target_name, source_id, source_alias, kind,
  definition, status, paused_kind, paused_reason, paused_at, backfill_done, backfill_total,
  backfill_started_at, backfill_finished_at, key_indexed, last_applied_at)
VALUES (1, 'public', 'a', 1, 'widgets', 'projection',
        'TRANSFORM a FROM widgets SELECT price AS price', 'live', NULL, NULL, NULL, 2000, 2000,
        now(), now(), true, now()),
       (2, 'public', 'b', 1, 'w', 'projection', 'TRANSFORM b FROM widgets AS w SELECT w.name AS name',
        'paused', 'operator', 'paused by PAUSE TRANSFORM', now(), 2000, 2000, now(), now(), true,
        now());
SELECT setval(pg_get_serial_sequence('trellis.sources', 'id'), 1);
SELECT setval(pg_get_serial_sequence('trellis.transforms', 'id'), 2);
INSERT INTO trellis.transform_columns (transform_id, ordinal, name, expr, sql_type)
VALUES (1, 1, 'price', 'price', 'numeric'), (2, 1, 'name', 'w.name', 'text');
CREATE FUNCTION trellis.capture_1_insert() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN
  INSERT INTO "trellis".capture (source_id, op, routing)
  VALUES (1, 'I', ARRAY(SELECT ARRAY[r."id"::text] FROM trellis_new r)); RETURN NULL; END $trellis$;
CREATE FUNCTION trellis.capture_1_update() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN
  INSERT INTO "trellis".capture (source_id, op, routing)
  VALUES (1, 'U', ARRAY(SELECT ARRAY[r."id"::text] FROM trellis_old r UNION ALL
                        SELECT ARRAY[r."id"::text] FROM trellis_new r)); RETURN NULL; END $trellis$;
CREATE FUNCTION trellis.capture_1_delete() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN
  INSERT INTO "trellis".capture (source_id, op, routing)
  VALUES (1, 'D', ARRAY(SELECT ARRAY[r."id"::text] FROM trellis_old r)); RETURN NULL; END $trellis$;
CREATE FUNCTION trellis.capture_1_truncate() RETURNS trigger LANGUAGE plpgsql AS $trellis$ BEGIN
  INSERT INTO "trellis".capture (source_id, op) VALUES (1, 'T'); RETURN NULL; END $trellis$;
CREATE TRIGGER trellis_trellis_capture_insert AFTER INSERT ON public.widgets
  REFERENCING NEW TABLE AS trellis_new FOR EACH STATEMENT EXECUTE FUNCTION trellis.capture_1_insert();
CREATE TRIGGER trellis_trellis_capture_update AFTER UPDATE ON public.widgets
  REFERENCING OLD TABLE AS trellis_old NEW TABLE AS trellis_new
  FOR EACH STATEMENT EXECUTE FUNCTION trellis.capture_1_update();
CREATE TRIGGER trellis_trellis_capture_delete AFTER DELETE ON public.widgets
  REFERENCING OLD TABLE AS trellis_old FOR EACH STATEMENT EXECUTE FUNCTION trellis.capture_1_delete();
CREATE TRIGGER trellis_trellis_capture_truncate AFTER TRUNCATE ON public.widgets
  FOR EACH STATEMENT EXECUTE FUNCTION trellis.capture_1_truncate();
ALTER TABLE public.widgets ENABLE ALWAYS TRIGGER trellis_trellis_capture_insert;
ALTER TABLE public.widgets ENABLE ALWAYS TRIGGER trellis_trellis_capture_update;
ALTER TABLE public.widgets ENABLE ALWAYS TRIGGER trellis_trellis_capture_delete;
ALTER TABLE public.widgets ENABLE ALWAYS TRIGGER trellis_trellis_capture_truncate;
)sql";

}  // namespace

TEST_CASE("a v1 catalog with live transforms upgrades to v2 in place", "[engine][catalog]") {
  EngineFixture f;
  f.Sql(kWidgets);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 1).ok());
  f.Sql(kV1Catalog);
  // Writes the v1 triggers capture before the upgrade, and one left open
  // across it.
  f.Sql("UPDATE widgets SET price = price + 1 WHERE id <= 100");
  f.Sql("INSERT INTO widgets (id, name, price) VALUES (5001, 'new', 7)");
  auto open = trellis::pg::Connection::Open(f.url(), "open_writer");
  REQUIRE(open.ok());
  REQUIRE(open.value()->Exec("BEGIN").ok());
  REQUIRE(open.value()->Exec("DELETE FROM widgets WHERE id = 3").ok());

  // It commits while the upgrade runs (or waits for it, if the upgrade
  // needs the capture buffer's lock).
  trellis::Status committed;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    committed = open.value()->Exec("COMMIT");
  });
  auto s = f.OpenSession();  // migrates to the current version
  writer.join();
  REQUIRE(committed.ok());
  CHECK(f.Scalar("SELECT version FROM trellis.catalog_version") ==
        std::to_string(trellis::catalog::kCatalogVersion));
  CHECK(f.Scalar("SELECT string_agg(format('%s:%s:%s', transform_id, alias, role), ',' "
                 "ORDER BY transform_id) FROM trellis.transform_inputs") ==
        "1:widgets:from,2:w:from");
  CHECK(f.Scalar("SELECT string_agg(format('%s:%s:%s:%s', transform_id, name, expr, sql_type), "
                 "',' ORDER BY transform_id) FROM trellis.target_key_columns") ==
        "1:id:widgets.id:bigint,2:id:w.id:bigint");
  CHECK(f.Scalar("SELECT count(*) FROM trellis.source_relations") == "1");

  auto a = s->ReadStatus("a");
  REQUIRE(a.ok());
  CHECK(a->status == "live");
  auto b = s->ReadStatus("b");
  REQUIRE(b.ok());
  CHECK(b->status == "paused");
  CHECK(b->paused_kind == "operator");
  auto defs = s->Definitions();
  REQUIRE(defs.ok());
  REQUIRE(defs->size() == 2);
  CHECK(defs->at(0).statement == "TRANSFORM a FROM widgets SELECT price AS price");

  // Writes keep flowing, through capture installed by v1, into the upgraded
  // catalog's pages.
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.Sql("UPDATE widgets SET price = price * 2 WHERE id BETWEEN 50 AND 150");
  f.Sql("DELETE FROM widgets WHERE id % 13 = 0");
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  auto none = s->DetectCaptureDisruptions();
  REQUIRE(none.ok());
  CHECK(none->empty());
  REQUIRE(s->Apply("RESUME TRANSFORM b", false).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("b", "SELECT id, name FROM widgets") == 0);
  // And the upgraded catalog takes new definitions.
  REQUIRE(s->Apply("TRANSFORM c FROM widgets SELECT name AS name", true).ok());
  f.AwaitConverged(*s);
  CHECK(f.Differences("c", "SELECT id, name FROM widgets") == 0);
}

TEST_CASE("capture functions installed before catalog v7 get the text-form settings",
          "[engine][catalog]") {
  EngineFixture f;
  f.Sql(kWidgets);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 1).ok());
  f.Sql(kV1Catalog);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 6).ok());
  const std::string settings =
      "SELECT string_agg(p.proname || ':' || array_to_string(p.proconfig, ';'), ',' "
      "ORDER BY p.proname) FROM pg_proc p WHERE p.pronamespace = 'trellis'::regnamespace "
      "AND p.proname LIKE 'capture\\_%'";
  const std::string path = "search_path=pg_catalog, pg_temp";
  CHECK(f.Scalar(settings) == "capture_1_delete:" + path + ",capture_1_insert:" + path +
                                  ",capture_1_truncate:" + path + ",capture_1_update:" + path);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis").ok());
  const std::string pinned =
      path + ";DateStyle=ISO,MDY;IntervalStyle=postgres;extra_float_digits=1;bytea_output=hex";
  CHECK(f.Scalar(settings) == "capture_1_delete:" + pinned + ",capture_1_insert:" + pinned +
                                  ",capture_1_truncate:" + pinned + ",capture_1_update:" + pinned);
  // Writes still flow through them, and the writer keeps its own settings.
  f.Sql("SET DateStyle = 'German'");
  f.Sql("UPDATE widgets SET price = price + 1 WHERE id = 7");
  CHECK(f.Scalar("SELECT current_setting('DateStyle')") == "German, DMY");
  CHECK(f.Scalar("SELECT routing::text FROM trellis.capture WHERE op = 'U'") == "{{7},{7}}");
}

TEST_CASE("catalog v13 keeps autovacuum from truncating the capture table", "[engine][catalog]") {
  EngineFixture f;
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 12).ok());
  const std::string options =
      "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class "
      "WHERE oid = 'trellis.capture'::regclass";
  CHECK(f.Scalar(options).find("vacuum_truncate") == std::string::npos);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis").ok());
  // The table's early-vacuum settings stay; truncation is off.
  CHECK(f.Scalar(options) ==
        "autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=2000,"
        "autovacuum_vacuum_cost_delay=0,vacuum_truncate=false");
}

TEST_CASE("capture functions installed before catalog v10 record the relation they capture",
          "[engine][catalog]") {
  EngineFixture f;
  // A schema whose name holds the text the step's rewrite looks for.
  const std::string schema = "x\".\"capture\" (source_id, op, routing) VALUES (";
  const std::string q = trellis::sql::Ident(schema);
  f.Sql("CREATE TABLE parts (id int PRIMARY KEY)");
  REQUIRE(trellis::catalog::Migrate(f.conn(), schema, 9).ok());
  // The insert and truncate functions as capture/functions.cc made them
  // before step 10, with their triggers.
  const std::string head =
      "() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path "
      "= pg_catalog, pg_temp AS $trellis$BEGIN INSERT INTO " +
      q + ".\"capture\" ";
  f.Sql("CREATE FUNCTION " + q + ".capture_1_insert" + head +
        "(source_id, op, routing) VALUES (1, 'I', ARRAY(SELECT ARRAY[r.\"id\"::pg_catalog.text] "
        "FROM trellis_new r)); RETURN NULL; END$trellis$");
  f.Sql("CREATE FUNCTION " + q + ".capture_1_truncate" + head +
        "(source_id, op) VALUES (1, 'T'); RETURN NULL; END$trellis$");
  f.Sql(
      "CREATE TRIGGER c_i AFTER INSERT ON parts REFERENCING NEW TABLE AS trellis_new "
      "FOR EACH STATEMENT EXECUTE FUNCTION " +
      q + ".capture_1_insert()");
  f.Sql("CREATE TRIGGER c_t AFTER TRUNCATE ON parts FOR EACH STATEMENT EXECUTE FUNCTION " + q +
        ".capture_1_truncate()");
  REQUIRE(trellis::catalog::Migrate(f.conn(), schema).ok());
  f.Sql("INSERT INTO parts VALUES (4)");
  f.Sql("TRUNCATE parts");
  CHECK(f.Scalar("SELECT string_agg(op::text || ':' || (relid = 'parts'::regclass)::text || ':' || "
                 "coalesce(routing::text, '-'), ',' ORDER BY op) FROM " +
                 q + ".capture") == "I:true:{{4}},T:true:-");
  // Rewritten in place: still definer functions with their pinned path.
  CHECK(f.Scalar("SELECT string_agg(p.proname || ':' || p.prosecdef::text || ':' || "
                 "array_to_string(p.proconfig, ';'), ',' ORDER BY p.proname) FROM pg_proc p "
                 "WHERE p.pronamespace = " +
                 trellis::sql::Literal(q) + "::regnamespace") ==
        "capture_1_insert:true:search_path=pg_catalog, pg_temp,"
        "capture_1_truncate:true:search_path=pg_catalog, pg_temp");
}

TEST_CASE("the catalog accepts exactly the engine's state names", "[engine][catalog]") {
  EngineFixture f;
  f.Sql(kWidgets);
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  for (auto name : trellis::WireNames<trellis::TransformState>::kNames) {
    INFO(name);
    const std::string kind = name == "paused" ? "'operator'" : "NULL";
    f.Sql("UPDATE trellis.transforms SET status = '" + std::string(name) +
          "', paused_kind = " + kind);
  }
  for (auto kind : trellis::WireNames<trellis::PauseKind>::kNames) {
    INFO(kind);
    f.Sql("UPDATE trellis.transforms SET status = 'paused', paused_kind = '" + std::string(kind) +
          "'");
    f.Sql("UPDATE trellis.transform_columns SET state = 'paused', paused_kind = '" +
          std::string(kind) + "'");
  }
  for (auto state : trellis::WireNames<trellis::ColumnState>::kNames) {
    const std::string kind = state == "paused" ? "'operator'" : "NULL";
    f.Sql("UPDATE trellis.transform_columns SET state = '" + std::string(state) +
          "', paused_kind = " + kind);
  }
  auto refused = f.conn().Exec("UPDATE trellis.transforms SET status = 'sleeping'");
  CHECK_FALSE(refused.ok());
}

TEST_CASE("a column rebuild under way before catalog v4 becomes a job and finishes",
          "[engine][catalog][jobs]") {
  EngineFixture f;
  f.Sql(kWidgets);
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 1).ok());
  f.Sql(kV1Catalog);
  // `a` is half way through a column rebuild by the v1/v2 cursor, and its
  // target is wrong on both sides of the cursor.
  f.Sql(
      "UPDATE trellis.transforms SET status = 'backfilling', backfill_cursor = '{1000}', "
      "backfill_columns = '{price}', backfill_done = 1000, backfill_finished_at = NULL "
      "WHERE id = 1; UPDATE a SET price = -1 WHERE id % 100 = 0");
  REQUIRE(trellis::catalog::Migrate(f.conn(), "trellis", 2).ok());
  auto s = f.OpenSession();  // migrates to the current version
  CHECK(f.Scalar("SELECT format('%s:%s:%s:%s', transform_id, kind, columns, lo IS NULL) "
                 "FROM trellis.jobs") == "1:column_rebuild:{price}:t");
  CHECK(f.Scalar("SELECT status FROM trellis.transforms WHERE id = 1") == "waiting_to_backfill");
  CHECK(f.Scalar("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'trellis' "
                 "AND table_name = 'transforms' AND column_name LIKE 'backfill_%'") == "3");
  auto workers = trellis::BackgroundWorkers::Start(f.Options(), true, 2);
  f.AwaitConverged(*s);
  CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
  CHECK(f.Scalar("SELECT count(*) FROM trellis.jobs") == "0");
}

TEST_CASE("catalog v15 records a grouped join's hidden join as the group's stage",
          "[engine][catalog]") {
  EngineFixture f;
  // A quote in the schema name: the step finds the catalog schema through
  // the transforms table's own namespace, never through a literal.
  const std::string schema = "stage's";
  const std::string q = trellis::sql::Ident(schema);
  f.Sql(
      "CREATE TABLE customers (id int PRIMARY KEY, region text); "
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int)");
  auto s = f.OpenSession(/*migrate=*/true, schema);
  REQUIRE(s->Apply("TRANSFORM by_region FROM orders JOIN customers ON orders.customer_id = "
                   "customers.id SELECT customers.region, sum(orders.amount) AS total "
                   "GROUP BY customers.region",
                   true)
              .ok());
  REQUIRE(s->Apply("TRANSFORM plain FROM orders SELECT amount AS amount", true).ok());
  // A chain reads another transform's target, and is no stage of it.
  REQUIRE(s->Apply("TRANSFORM chained FROM plain SELECT amount AS amount", true).ok());
  const std::string stages =
      "SELECT string_agg(regexp_replace(t.target_name, '[0-9]+', 'N') || ':' || "
      "coalesce(o.target_name, '-') || ':' || t.stage_order, ',' ORDER BY t.id) FROM " +
      q + ".transforms t LEFT JOIN " + q + ".transforms o ON o.id = t.owner_id";
  const std::string defined = f.Scalar(stages);
  CHECK(defined == "__trellis_join_N:by_region:1,by_region:-:2,plain:-:1,chained:-:1");

  // The same catalog as step 14 left it: the step finds the stage the way
  // the engine did before it (the group's FROM is a target in the catalog
  // schema) and records it.
  f.Sql("ALTER TABLE " + q + ".transforms DROP COLUMN owner_id, DROP COLUMN stage_order; " +
        "DROP TABLE " + q + ".pending_detaches; UPDATE " + q + ".catalog_version SET version = 14");
  REQUIRE(trellis::catalog::Migrate(f.conn(), schema).ok());
  CHECK(f.Scalar(stages) == defined);
  // Definitions still show the user one transform per statement.
  auto definitions = s->Definitions();
  REQUIRE(definitions.ok());
  REQUIRE(definitions->size() == 3);
  CHECK((*definitions)[0].name == "by_region");
}

TEST_CASE("a log line names a hidden stage by its user's transform, its stage and catalog name",
          "[engine][catalog]") {
  using trellis::catalog::LogNameFor;
  using trellis::catalog::LogNameOf;
  // A transform the user defined is its own name, rendered as statements
  // take it back.
  CHECK(LogNameFor("plain", "", 1).label == "plain");
  CHECK(LogNameFor("plain", "", 1).address == "plain");
  CHECK(LogNameFor("Mixed Case", "", 1).label == "\"Mixed Case\"");
  // A stage is its owner's: addressed by the owner's name, labelled with
  // its stage and catalog name.
  const auto stage = LogNameFor("__trellis_join_7", "By Region", 1);
  CHECK(stage.address == "\"By Region\"");
  CHECK(stage.label == "\"By Region\" (its stage 1, catalog name __trellis_join_7)");

  EngineFixture f;
  f.Sql(
      "CREATE TABLE customers (id int PRIMARY KEY, region text); "
      "CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int)");
  auto s = f.OpenSession();
  REQUIRE(s->Apply("TRANSFORM by_region FROM orders JOIN customers ON orders.customer_id = "
                   "customers.id SELECT customers.region, sum(orders.amount) AS total "
                   "GROUP BY customers.region",
                   true)
              .ok());
  REQUIRE(s->Apply("TRANSFORM plain FROM orders SELECT amount AS amount", true).ok());
  const std::string hidden =
      f.Scalar("SELECT target_name FROM trellis.transforms WHERE owner_id IS NOT NULL");
  auto join = trellis::catalog::LoadTransform(f.conn(), "trellis", hidden);
  REQUIRE(join.ok());
  const std::string expected = "by_region (its stage 1, catalog name " + hidden + ")";
  CHECK(LogNameOf(f.conn(), "trellis", join.value()).label == expected);
  CHECK(LogNameOf(f.conn(), "trellis", join.value()).address == "by_region");
  CHECK(LogNameOf(f.conn(), "trellis", join->id, hidden).label == expected);
  CHECK(LogNameOf(f.conn(), "trellis", join->id, hidden).address == "by_region");
  auto plain = trellis::catalog::LoadTransform(f.conn(), "trellis", "plain");
  REQUIRE(plain.ok());
  CHECK(LogNameOf(f.conn(), "trellis", plain.value()).label == "plain");
  auto group = trellis::catalog::LoadTransform(f.conn(), "trellis", "by_region");
  REQUIRE(group.ok());
  CHECK(LogNameOf(f.conn(), "trellis", group.value()).label == "by_region");
  CHECK(LogNameOf(f.conn(), "trellis", group->id, "by_region").label == "by_region");
  // An owner that cannot be read (an id no row has): the name as given,
  // and the connection still usable.
  CHECK(LogNameOf(f.conn(), "trellis", 999999, hidden).label == hidden);
  CHECK(f.Scalar("SELECT 1") == "1");
}
