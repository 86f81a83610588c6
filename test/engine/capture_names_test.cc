// Capture's generated names and quoting, without a database (capture/names.h,
// capture/functions.h): names fit PostgreSQL's 63 bytes and stay distinct,
// and no body text can end its own dollar quote.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "capture/functions.h"
#include "capture/names.h"
#include "engine_fixture.h"
#include "sql/quote.h"

using trellis::capture::DollarQuoted;
using trellis::capture::kEvents;
using trellis::capture::kMaxIdentifierBytes;
using trellis::capture::TriggerName;
using trellis::capture::Utf8Prefix;

namespace {

// True when `text` is well-formed UTF-8 (enough for the names made here:
// no overlong or surrogate checks are needed to see a cut character).
bool ValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : 4;
    if (i + len > text.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

std::string Repeat(std::string_view unit, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out += unit;
  return out;
}

}  // namespace

TEST_CASE("trigger names keep their readable form when it fits", "[capture][names]") {
  CHECK(TriggerName("trellis", "insert") == "trellis_trellis_capture_insert");
  CHECK(TriggerName("Odd Schema-1", "update") == "trellis_Odd Schema-1_capture_update");
  // 8 + 38 + 9 + 8 = 63 bytes: the longest schema the readable form takes.
  const std::string fits(38, 's');
  CHECK(TriggerName(fits, "truncate") == "trellis_" + fits + "_capture_truncate");
}

TEST_CASE("trigger names fit in 63 bytes and stay distinct at any schema length",
          "[capture][names]") {
  const std::string ascii63(63, 'a');
  // 31 two-byte characters and one byte: 63 bytes, a cut would split a char.
  const std::string multibyte63 = Repeat("é", 31) + "x";
  REQUIRE(multibyte63.size() == 63);
  const std::string three_byte63 = Repeat("語", 21);
  REQUIRE(three_byte63.size() == 63);
  std::set<std::string> all;
  size_t count = 0;
  for (const auto& schema : {ascii63, multibyte63, three_byte63, std::string(41, 'a'),
                             std::string(62, 'a'), ascii63.substr(0, 40) + "b"}) {
    std::set<std::string> per_schema;
    for (const char* event : kEvents) {
      const std::string name = TriggerName(schema, event);
      INFO(name);
      CHECK(name.size() <= kMaxIdentifierBytes);
      CHECK(ValidUtf8(name));
      CHECK(name.rfind("trellis_", 0) == 0);
      CHECK(name.find(std::string("_capture_") + event + "_") != std::string::npos);
      CHECK(TriggerName(schema, event) == name);  // stable
      per_schema.insert(name);
      all.insert(name);
      ++count;
    }
    CHECK(per_schema.size() == 4);
  }
  // Schemas sharing their first 40+ bytes still get names of their own.
  CHECK(all.size() == count);
}

TEST_CASE("a long name never equals the readable name of another schema", "[capture][names]") {
  const std::string long_schema(50, 'z');
  const std::string name = TriggerName(long_schema, "delete");
  // The schema that would spell the same text in the readable form.
  const std::string mimic = name.substr(8, name.size() - 8 - std::string("_capture_delete").size());
  CHECK(TriggerName(mimic, "delete") != name);
}

TEST_CASE("Utf8Prefix never cuts a character", "[capture][names]") {
  CHECK(Utf8Prefix("abc", 5) == "abc");
  CHECK(Utf8Prefix("abc", 2) == "ab");
  CHECK(Utf8Prefix("aé", 2) == "a");  // é is 2 bytes
  CHECK(Utf8Prefix("aé", 3) == "aé");
  CHECK(Utf8Prefix("語語", 4) == "語");
  CHECK(Utf8Prefix("語", 2).empty());
}

TEST_CASE("a dollar quote's tag occurs nowhere in its body", "[capture][quoting]") {
  CHECK(DollarQuoted("BEGIN END") == "$trellis$BEGIN END$trellis$");
  // The tag in the body, and the body's end completing the closing tag.
  for (const std::string body :
       {"x \"k$trellis$x\" y", "ends in $trellis", "$trellis$ $trellis1$ $trellis2", "$$ '\";--"}) {
    const std::string quoted = DollarQuoted(body);
    const size_t tag_end = quoted.find('$', 1) + 1;
    const std::string tag = quoted.substr(0, tag_end);
    INFO(quoted);
    CHECK(quoted.size() == 2 * tag.size() + body.size());
    CHECK(quoted.substr(tag.size(), body.size()) == body);
    // The first closing tag after the opening one is the last one.
    CHECK(quoted.find(tag, tag.size()) == quoted.size() - tag.size());
  }
}

// ---- Against PostgreSQL: a catalog schema as long as PostgreSQL allows. ----

namespace {

using trellis::test::EngineFixture;

// Runs the life of a transform under catalog `schema`: define, check its
// four triggers, write, converge, disrupt, and drop.
void CaptureUnderSchema(const std::string& schema) {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE widgets (id int PRIMARY KEY, price int);"
      "INSERT INTO widgets SELECT g, g FROM generate_series(1, 100) g;");
  auto s = f.OpenSession(true, schema);
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  const std::string quoted_schema = trellis::sql::Literal(schema);
  // Four distinct triggers, each under the name made for it, all ALWAYS.
  for (const char* event : kEvents) {
    CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass AND "
                   "tgenabled = 'A' AND tgname = " +
                   trellis::sql::Literal(TriggerName(schema, event))) == "1");
  }
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "4");

  // The disruption check finds nothing wrong, so it pauses nobody.
  auto intact = s->DetectCaptureDisruptions();
  REQUIRE(intact.ok());
  CHECK(intact->empty());
  CHECK(s->ReadStatus("a")->status != "paused");

  {
    auto workers = trellis::BackgroundWorkers::Start(f.Options(schema), true, 1);
    f.Sql(
        "UPDATE widgets SET price = price * 10 WHERE id <= 50;"
        "DELETE FROM widgets WHERE id > 90; INSERT INTO widgets VALUES (500, 5);");
    f.AwaitConverged(*s);
    CHECK(f.Differences("a", "SELECT id, price FROM widgets") == 0);
    // The staging worker checks capture every second: over 2.5 s of it the
    // transform goes live and is never paused.
    std::string status;
    for (int i = 0; i < 50; ++i) {
      status = s->ReadStatus("a")->status;
      REQUIRE(status != "paused");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(status == "live");
  }

  // A real disruption is still seen under the long names.
  f.Sql("ALTER TABLE widgets DISABLE TRIGGER " +
        trellis::sql::Ident(TriggerName(schema, "update")));
  auto found = s->DetectCaptureDisruptions();
  REQUIRE(found.ok());
  CHECK(*found == std::vector<std::string>{"public.widgets"});
  CHECK(s->ReadStatus("a")->paused_kind == "disruption");

  REQUIRE(s->Apply("DROP TRANSFORM a", false).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "0");
  CHECK(f.Scalar("SELECT count(*) FROM pg_proc WHERE pronamespace = (SELECT oid FROM "
                 "pg_namespace WHERE nspname = " +
                 quoted_schema + ") AND proname LIKE 'capture%'") == "0");
}

}  // namespace

TEST_CASE("capture works under a 63-byte ASCII catalog schema", "[engine][capture][names]") {
  CaptureUnderSchema(std::string(63, 'c'));
}

TEST_CASE("capture works under a 63-byte multibyte catalog schema", "[engine][capture][names]") {
  CaptureUnderSchema(Repeat("é", 31) + "x");
}

TEST_CASE("two catalogs with long schemas sharing a prefix capture one table",
          "[engine][capture][names]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE widgets (id int PRIMARY KEY, price int);"
      "INSERT INTO widgets SELECT g, g FROM generate_series(1, 10) g;");
  const std::string one = std::string(60, 'k') + "one";
  const std::string two = std::string(60, 'k') + "two";
  auto s1 = f.OpenSession(true, one);
  auto s2 = f.OpenSession(true, two);
  REQUIRE(s1->Apply("TRANSFORM a1 FROM widgets SELECT price AS price", true).ok());
  REQUIRE(s2->Apply("TRANSFORM a2 FROM widgets SELECT price AS price", true).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "8");
  CHECK(s1->DetectCaptureDisruptions()->empty());
  CHECK(s2->DetectCaptureDisruptions()->empty());
  auto w1 = trellis::BackgroundWorkers::Start(f.Options(one), true, 1);
  auto w2 = trellis::BackgroundWorkers::Start(f.Options(two), true, 1);
  f.Sql("UPDATE widgets SET price = -price");
  f.AwaitConverged(*s1);
  f.AwaitConverged(*s2);
  CHECK(f.Differences("a1", "SELECT id, price FROM widgets") == 0);
  CHECK(f.Differences("a2", "SELECT id, price FROM widgets") == 0);
}

TEST_CASE(
    "a trigger under a name PostgreSQL cut short is replaced on RESUME and dropped with its "
    "source",
    "[engine][capture][names]") {
  EngineFixture f;
  f.Sql(
      "CREATE TABLE widgets (id int PRIMARY KEY, price int);"
      "INSERT INTO widgets SELECT g, g FROM generate_series(1, 10) g;");
  const std::string schema(50, 'v');
  auto s = f.OpenSession(true, schema);
  REQUIRE(s->Apply("TRANSFORM a FROM widgets SELECT price AS price", true).ok());
  // What engines before capture/names.h left: the four names cut to one
  // 63-byte name, which the last install (truncate) kept.
  const std::string cut = ("trellis_" + schema + "_capture_truncate").substr(0, 63);
  f.Sql("CREATE TRIGGER " + trellis::sql::Ident(cut) +
        " AFTER TRUNCATE ON widgets FOR EACH STATEMENT EXECUTE FUNCTION " +
        trellis::sql::Ident(schema) + ".capture_1_truncate()");
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "5");

  f.Sql("ALTER TABLE widgets DISABLE TRIGGER " +
        trellis::sql::Ident(TriggerName(schema, "insert")));
  REQUIRE(s->DetectCaptureDisruptions()->size() == 1);
  REQUIRE(s->Apply("RESUME TRANSFORM a", false).ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "4");
  CHECK(s->DetectCaptureDisruptions()->empty());

  f.Sql("CREATE TRIGGER " + trellis::sql::Ident(cut) +
        " AFTER TRUNCATE ON widgets FOR EACH STATEMENT EXECUTE FUNCTION " +
        trellis::sql::Ident(schema) + ".capture_1_truncate()");
  REQUIRE(s->Apply("PAUSE TRANSFORM a", false).ok());
  auto dropped = s->Apply("DROP TRANSFORM a", false);
  INFO((dropped.ok() ? "" : dropped.status().ToString()));
  REQUIRE(dropped.ok());
  CHECK(f.Scalar("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'widgets'::regclass") == "0");
}
