// A column ALTER TRANSFORM adds or changes gets the collation its
// expression has, as CREATE TABLE AS gives a defined target's column
// (spec/engine.md "Folded delta rows"): a min or a max over a column of
// another collation than the database's is combined, compared and
// recomputed in the argument's order, and the target sorts as a fresh
// define's does.
//
// The test cluster is initdb --locale=C, so the database's collation is C;
// the source's other collation is made by CREATE COLLATION over the ICU
// root locale (or libc's en_US.utf8 where ICU is not built in), under a
// schema and a name that are hostile to unquoted DDL. On the words used
// here the two orders disagree: in C every capital sorts before every
// small letter ("Banana" < "Zebra" < "apple" < "cherry"), in both others
// case comes after the letters ("apple" < "Banana" < "cherry" < "Zebra").
#include <catch2/catch.hpp>
#include <string>

#include "build_steps.h"
#include "engine_fixture.h"
#include "pipeline_steps.h"
#include "trellis/workers.h"

namespace trellis::test {
namespace {

constexpr const char* kCollation = R"("odd ""schema"""."we ""ird""; DROP TABLE words; --")";

// Makes kCollation with a provider whose order differs from C on the test's
// words; false (and says so) when this server has none.
bool MakeCollation(EngineFixture& f) {
  f.Sql(R"(CREATE SCHEMA "odd ""schema""")");
  if (f.Scalar("SELECT count(*) > 0 FROM pg_collation WHERE collprovider = 'i'") == "t") {
    f.Sql(std::string("CREATE COLLATION ") + kCollation + " (provider = icu, locale = 'und')");
  } else if (f.Scalar("SELECT count(*) > 0 FROM pg_collation WHERE collname = 'en_US.utf8'") ==
             "t") {
    f.Sql(std::string("CREATE COLLATION ") + kCollation +
          " (provider = libc, locale = 'en_US.utf8')");
  } else {
    WARN("no ICU and no en_US.utf8 collation on this server: not checked");
    return false;
  }
  return f.Scalar(std::string("SELECT 'apple' < 'Banana' COLLATE ") + kCollation + " AND " +
                  "'cherry' < 'Zebra' COLLATE " + kCollation + " AND 'Banana' < 'apple'") == "t";
}

std::string Words() {
  return std::string("CREATE TABLE words (id bigint PRIMARY KEY, g int NOT NULL, w text COLLATE ") +
         kCollation +
         ", plain text);\n"
         "INSERT INTO words VALUES (1, 1, 'Banana', 'Banana'), (2, 1, 'cherry', 'cherry'),\n"
         "  (3, 2, 'apple', 'apple'), (4, 2, 'Mango', 'Mango'), (5, 2, 'zoo', 'zoo'),\n"
         "  (6, 3, 'Kiwi', 'Kiwi');";
}

std::string Collation(EngineFixture& f, const std::string& table, const std::string& column) {
  return f.Scalar("SELECT attcollation::regcollation::text FROM pg_attribute WHERE attrelid = '" +
                  table + "'::regclass AND attname = '" + column + "'");
}

void Converge(EngineFixture& f, Session& s) {
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(s);
}

}  // namespace

TEST_CASE("ALTER ADD COLUMN gives a min and a max their argument's collation, as define does",
          "[engine][alter][group][fold]") {
  EngineFixture f;
  if (!MakeCollation(f)) return;
  const std::string words = Words();
  auto s = DefineBuilt(f, words.c_str(),
                       "TRANSFORM word_extremes FROM words SELECT g, count(*) AS n, "
                       "max(plain) AS top_plain GROUP BY g");
  REQUIRE(s->Apply("ALTER TRANSFORM word_extremes ADD COLUMN min(w) AS low", false).ok());
  REQUIRE(s->Apply("ALTER TRANSFORM word_extremes ADD COLUMN max(w) AS high", false).ok());
  REQUIRE(s->Apply("TRANSFORM fresh_extremes FROM words SELECT g, count(*) AS n, max(plain) AS "
                   "top_plain, min(w) AS low, max(w) AS high GROUP BY g",
                   true)
              .ok());
  Converge(f, *s);
  // The added columns are collated as the defined ones (and as the
  // argument); the plain max keeps the database's collation.
  const std::string collation = f.Scalar(
      "SELECT oid::regcollation::text FROM pg_collation WHERE collname = "
      "'we \"ird\"; DROP TABLE words; --'");
  for (const char* column : {"low", "high", "top_plain"}) {
    INFO(column);
    CHECK(Collation(f, "word_extremes", column) == Collation(f, "fresh_extremes", column));
  }
  CHECK(Collation(f, "word_extremes", "low") == collation);
  CHECK(Collation(f, "word_extremes", "high") == collation);
  CHECK(f.Scalar("SELECT to_regclass('words') IS NOT NULL") == "t");
  const std::string query = "SELECT g, count(*), max(plain), min(w), max(w) FROM words GROUP BY g";
  const std::string target = "SELECT g, n, top_plain, low, high FROM word_extremes";
  REQUIRE(SelectDifferences(f, target, query) == 0);
  CHECK(f.Scalar("SELECT string_agg(low, ',' ORDER BY low) FROM word_extremes") ==
        f.Scalar("SELECT string_agg(low, ',' ORDER BY low) FROM fresh_extremes"));

  // Two writers per group, in one batch, folded per writer and sign: group
  // 1 gets a new min ("apple", after "Banana" in C) from A and a new max
  // ("Zebra", before "cherry" in C) from B, which deletes the old max;
  // group 2 loses its min ("apple") to A and gets "Avocado" from B, which
  // in C is below every word there; group 3 gets "kiwi2" and "KIWI".
  auto conn = ConnectBuilder(f);
  KeepOffRebuilds(f);
  f.Sql(
      "BEGIN; INSERT INTO words VALUES (10, 1, 'apple', 'apple'), (12, 3, 'kiwi2', 'k'); "
      "DELETE FROM words WHERE id = 3; COMMIT");  // A
  f.Sql(
      "BEGIN; INSERT INTO words VALUES (11, 1, 'Zebra', 'Zebra'), (13, 2, 'Avocado', 'A'), "
      "(14, 3, 'KIWI', 'K'); DELETE FROM words WHERE id = 2; COMMIT");  // B
  StageStep(*conn);
  CHECK(f.Scalar("SELECT bool_and(folded) FROM trellis.delta_rows") == "t");
  CHECK(f.Scalar("SELECT count(DISTINCT xid) FROM trellis.delta_rows") == "2");
  DrainAllPages(*conn);
  CHECK(SelectDifferences(f, target, query) == 0);
  CHECK(SelectDifferences(f, "SELECT g, n, top_plain, low, high FROM fresh_extremes", query) == 0);
  CHECK(f.Scalar("SELECT low || ' ' || high FROM word_extremes WHERE g = 1") == "apple Zebra");

  // The extremes deleted again by one writer, beyond them inserted by
  // another.
  f.Sql("DELETE FROM words WHERE id IN (10, 11, 13)");
  f.Sql("INSERT INTO words VALUES (15, 1, 'aardvark', 'a'), (16, 2, 'Zulu', 'Z')");
  StageAndDrain(*conn);
  CHECK(SelectDifferences(f, target, query) == 0);
  CHECK(SelectDifferences(f, "SELECT g, n, top_plain, low, high FROM fresh_extremes", query) == 0);

  // A column an earlier engine's ALTER left in the database's collation is
  // mended by ALTER COLUMN to the same expression (spec/engine.md).
  f.Sql("ALTER TABLE word_extremes ALTER COLUMN low TYPE text COLLATE pg_catalog.\"default\"");
  REQUIRE(Collation(f, "word_extremes", "low") != collation);
  REQUIRE(s->Apply("ALTER TRANSFORM word_extremes ALTER COLUMN low AS min(w)", false).ok());
  Converge(f, *s);
  CHECK(Collation(f, "word_extremes", "low") == collation);
  CHECK(SelectDifferences(f, target, query) == 0);
}

TEST_CASE("ALTER ADD and ALTER COLUMN of a projection collate as a define does",
          "[engine][alter]") {
  EngineFixture f;
  if (!MakeCollation(f)) return;
  const std::string words = Words();
  auto s = DefineBuilt(f, words.c_str(), "TRANSFORM word_rows FROM words SELECT plain");
  REQUIRE(s->Apply("ALTER TRANSFORM word_rows ADD COLUMN upper(w) AS shout", false).ok());
  REQUIRE(s->Apply("TRANSFORM fresh_rows FROM words SELECT plain, upper(w) AS shout", true).ok());
  Converge(f, *s);
  CHECK(Collation(f, "word_rows", "shout") == Collation(f, "fresh_rows", "shout"));
  CHECK(Collation(f, "word_rows", "shout") != Collation(f, "word_rows", "plain"));
  CHECK(f.Scalar("SELECT string_agg(shout, ',' ORDER BY shout) FROM word_rows") ==
        f.Scalar("SELECT string_agg(shout, ',' ORDER BY shout) FROM fresh_rows"));
  // Changed to an expression of the database's collation, and back.
  REQUIRE(s->Apply("ALTER TRANSFORM word_rows ALTER COLUMN shout AS upper(plain)", false).ok());
  Converge(f, *s);
  CHECK(Collation(f, "word_rows", "shout") == Collation(f, "word_rows", "plain"));
  CHECK(f.Differences("word_rows", "SELECT id, plain, upper(plain) FROM words") == 0);
  REQUIRE(s->Apply("ALTER TRANSFORM word_rows ALTER COLUMN shout AS lower(w)", false).ok());
  Converge(f, *s);
  CHECK(Collation(f, "word_rows", "shout") == Collation(f, "fresh_rows", "shout"));
  CHECK(f.Differences("word_rows", "SELECT id, plain, lower(w) FROM words") == 0);
}

TEST_CASE("ALTER ADD COLUMN of a grouped join carries a join column in its collation",
          "[engine][alter][group]") {
  EngineFixture f;
  if (!MakeCollation(f)) return;
  const std::string setup = Words() +
                            "\nCREATE TABLE labels (g int PRIMARY KEY, label text NOT NULL);\n"
                            "INSERT INTO labels VALUES (1, 'one'), (2, 'two'), (3, 'three');";
  auto s = DefineBuilt(f, setup.c_str(),
                       "TRANSFORM word_labels FROM words JOIN labels ON words.g = labels.g "
                       "SELECT labels.label, count(*) AS n GROUP BY labels.label");
  // The join carries words.w only from this ALTER on (a hidden join column
  // the ALTER adds): it must keep w's collation for the min and max over it.
  REQUIRE(s->Apply("ALTER TRANSFORM word_labels ADD COLUMN min(words.w) AS low", false).ok());
  REQUIRE(s->Apply("ALTER TRANSFORM word_labels ADD COLUMN max(words.w) AS high", false).ok());
  REQUIRE(s->Apply("TRANSFORM fresh_labels FROM words JOIN labels ON words.g = labels.g SELECT "
                   "labels.label, count(*) AS n, min(words.w) AS low, max(words.w) AS high "
                   "GROUP BY labels.label",
                   true)
              .ok());
  Converge(f, *s);
  for (const char* column : {"low", "high"}) {
    INFO(column);
    CHECK(Collation(f, "word_labels", column) == Collation(f, "fresh_labels", column));
  }
  const std::string query =
      "SELECT l.label, count(*), min(w.w), max(w.w) FROM words w JOIN labels l ON w.g = l.g "
      "GROUP BY l.label";
  CHECK(SelectDifferences(f, "SELECT label, n, low, high FROM word_labels", query) == 0);
  f.Sql("INSERT INTO words VALUES (10, 1, 'apple', 'apple'), (11, 2, 'Zebra', 'Zebra')");
  f.Sql("DELETE FROM words WHERE id IN (3, 5)");
  Converge(f, *s);
  CHECK(SelectDifferences(f, "SELECT label, n, low, high FROM word_labels", query) == 0);
  CHECK(SelectDifferences(f, "SELECT label, n, low, high FROM fresh_labels", query) == 0);
}

}  // namespace trellis::test
