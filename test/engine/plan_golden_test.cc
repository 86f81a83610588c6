// Golden tests of the plan room (engine/src/plan/): every statement a
// fixture plan renders is compared with the checked-in text under
// golden/<kind>/<statement>.sql. No database. After an intended change,
// regenerate with TRELLIS_UPDATE_GOLDEN=1 and review the diff.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "grammar/parser.h"
#include "grammar/render.h"
#include "plan/bind.h"
#include "plan/group_over_join.h"
#include "plan/key_sql.h"
#include "plan/template.h"

namespace fs = std::filesystem;
using trellis::catalog::Column;
using trellis::catalog::Transform;

namespace {

// A live value column (the other fields keep their defaults).
Column ValueColumn(std::string name, std::string expr, std::string type) {
  Column c;
  c.name = std::move(name);
  c.expr = std::move(expr);
  c.sql_type = std::move(type);
  return c;
}

// A projection with everything that changes the statements: a composite
// key, names that need quoting, a WHERE, and a paused column (left out).
Transform FixtureProjection() {
  Transform t;
  t.id = 7;
  t.target_schema = "app";
  t.target_name = "order \"lines\"";
  t.kind = trellis::catalog::TransformKind::kProjection;
  t.source_alias = "o";
  t.where_sql = "o.qty > 0";
  t.source.id = 3;
  t.source.schema_name = "public";
  t.source.table_name = "order_lines";
  t.source.key_columns = {"order_id", "line"};
  t.source.key_types = {"bigint", "integer"};
  t.source.routing_columns = {"order_id", "line"};
  Column note = ValueColumn("note", "upper(o.note)", "text");
  note.state = trellis::ColumnState::kPaused;
  note.paused_kind = trellis::PauseKind::kOperator;
  t.columns = {ValueColumn("total", "o.qty * o.price", "numeric"), note,
               ValueColumn("sku", "lower(o.sku)", "text")};
  return t;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

// Compares every statement `plan` renders with golden/<kind>/<name>.sql.
static void CheckGolden(const trellis::plan::TransformPlan& plan, const std::string& kind) {
  const fs::path dir = fs::path(TRELLIS_GOLDEN_DIR) / kind;
  const bool update = std::getenv("TRELLIS_UPDATE_GOLDEN") != nullptr;
  auto statements = plan.Statements();
  REQUIRE(statements.size() > 10);
  for (const auto& s : statements) {
    const fs::path file = dir / (s.name + ".sql");
    if (update) {
      fs::create_directories(dir);
      std::ofstream(file) << s.text << "\n";
      continue;
    }
    INFO("statement " << s.name << " (regenerate with TRELLIS_UPDATE_GOLDEN=1)");
    REQUIRE(fs::exists(file));
    CHECK(ReadFile(file) == s.text + "\n");
  }
  // No golden file is left over from a statement the plan no longer renders.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().extension() == ".sql";
  CHECK(files == statements.size());
  // Every kind today has one target row per unit of work: its unit key is
  // its target key (spec/engine.md "Unit keys").
  const auto& unit = plan.unit_key();
  const auto& key = plan.target_key();
  REQUIRE(unit.size() == key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    CHECK(unit[i].name == key[i].name);
    CHECK(unit[i].type == key[i].type);
    CHECK(unit[i].expr == key[i].expr);
    CHECK(unit[i].nullable == key[i].nullable);
  }
}

TEST_CASE("every statement of a projection plan matches its golden text", "[plan]") {
  auto plan = trellis::plan::Bind(FixtureProjection(), "trellis");
  REQUIRE(plan.ok());
  CheckGolden(*plan.value(), "projection");
}

TEST_CASE("a paused column is left out of every write", "[plan]") {
  auto plan = trellis::plan::Bind(FixtureProjection(), "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->RecomputePagesSql().find("note") == std::string::npos);
  CHECK(plan.value()->DefinitionQuerySql().find("note") == std::string::npos);
}

TEST_CASE("a column in quarantine is written, NULL for its recorded keys only", "[plan]") {
  auto t = FixtureProjection();
  for (auto& c : t.columns) {
    if (c.name == "note") c.paused_kind = trellis::PauseKind::kQuarantine;
  }
  auto plan = trellis::plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  for (const std::string& sql : {plan.value()->RecomputePagesSql(),
                                 plan.value()->AppendRange(trellis::plan::KeyRange{}).text}) {
    CHECK(sql.find("IN (SELECT __trellis_q.key FROM \"trellis\".quarantined_rows") !=
          std::string::npos);
    CHECK(sql.find("__trellis_q.column_name = 'note'") != std::string::npos);
    CHECK(sql.find("THEN NULL ELSE (upper(o.note)) END") != std::string::npos);
  }
}

TEST_CASE("range statements take only the bounds they have", "[plan]") {
  auto plan = trellis::plan::Bind(FixtureProjection(), "trellis");
  REQUIRE(plan.ok());
  using trellis::plan::KeyRange;
  CHECK(plan.value()->RecomputeRange(KeyRange{}, std::nullopt).params.empty());
  CHECK(plan.value()->RecomputeRange(KeyRange{"{1,2}", {}}, std::nullopt).params.size() == 1);
  auto both = plan.value()->AppendRange(KeyRange{"{1,2}", "{3,4}"});
  REQUIRE(both.params.size() == 2);
  CHECK(both.params[0] == "{1,2}");
  CHECK(both.params[1] == "{3,4}");
  CHECK(both.text.find("$2::text[]") != std::string::npos);
}

TEST_CASE("key matching is NULL-safe and keeps '=' for keys that cannot be NULL", "[plan]") {
  using trellis::plan::KeyColumn;
  std::vector<KeyColumn> key{KeyColumn{"a", "int", "s.a", false},
                             KeyColumn{"b", "text", "s.b", true}};
  CHECK(trellis::plan::KeyEquals(key, {"s.a", "s.b"}, {"t.a", "t.b"}) ==
        "s.a = t.a AND (s.b = t.b OR (s.b IS NULL AND t.b IS NULL))");
}

TEST_CASE("templates fill named slots and refuse a missing one", "[plan]") {
  using trellis::plan::Render;
  CHECK(Render("SELECT {a} FROM {b_c} WHERE x = '{\"json\": 1}'", {{"a", "1"}, {"b_c", "t"}}) ==
        "SELECT 1 FROM t WHERE x = '{\"json\": 1}'");
  // A value is inserted as it is, never rendered again.
  CHECK(Render("{a}", {{"a", "{b}"}}) == "{b}");
  CHECK_THROWS_AS(Render("{missing}", {}), std::logic_error);
}

TEST_CASE("a transform kind has one catalog name and no other name is a kind", "[plan]") {
  using trellis::catalog::TransformKind;
  // The names transforms.kind holds (catalog step 1's, and the fan-out join
  // since catalog step 18), in enum order.
  const std::vector<std::string_view> stored = {"projection", "group_by", "join", "fan_out_join",
                                                "full_outer_join"};
  for (size_t i = 0; i < stored.size(); ++i) {
    const auto kind = static_cast<TransformKind>(i);
    CHECK(trellis::WireName(kind) == stored[i]);
    CHECK(trellis::FromWireName<TransformKind>(stored[i]) == kind);
  }
  CHECK(trellis::WireNames<TransformKind>::kNames.size() == stored.size());
  CHECK_FALSE(trellis::FromWireName<TransformKind>("pivot"));
  CHECK_FALSE(trellis::FromWireName<TransformKind>("GROUP_BY"));
}

namespace {

trellis::grammar::TransformStmt ParseTransform(const std::string& text) {
  auto parsed = trellis::grammar::Parse(text);
  REQUIRE(std::holds_alternative<trellis::grammar::Statement>(parsed));
  auto& statement = std::get<trellis::grammar::Statement>(parsed);
  REQUIRE(std::holds_alternative<trellis::grammar::TransformStmt>(statement));
  return std::get<trellis::grammar::TransformStmt>(statement);
}

trellis::capture::ResolvedTable OrderLines() {
  return trellis::capture::ResolvedTable{
      "16384", "public", "order_lines", {"order_id", "line"}, {"bigint", "integer"}, {}};
}

trellis::capture::ResolvedTable Orders() {
  return trellis::capture::ResolvedTable{"16385", "public", "orders", {"id"}, {"integer"}, {}};
}

trellis::capture::ResolvedTable Customers() {
  return trellis::capture::ResolvedTable{"16386", "public", "customers", {"id"}, {"integer"}, {}};
}

}  // namespace

TEST_CASE("define binds a projection's draft rows; the plan says how to create its target",
          "[plan][define]") {
  auto draft = trellis::plan::BindDefinition(
      ParseTransform("TRANSFORM app.\"order \"\"lines\"\"\" FROM order_lines AS o "
                     "SELECT o.order_id, o.qty * o.price AS total, lower(o.sku) AS sku "
                     "WHERE o.qty > 0"),
      {OrderLines()});
  REQUIRE(draft.ok());
  const Transform& t = draft.value();
  CHECK(t.kind == trellis::catalog::TransformKind::kProjection);
  CHECK(t.target_schema == "app");
  CHECK_FALSE(t.key_indexed);
  REQUIRE(t.inputs.size() == 1);
  CHECK(t.inputs[0].alias == "o");
  REQUIRE(t.key.size() == 2);
  CHECK(t.key[1].expr == "\"o\".\"line\"");
  // The item that repeats a key column is the key itself, not a column.
  REQUIRE(t.columns.size() == 2);
  CHECK(t.columns[0].name == "total");
  // The draft binds to the same plan the workers run, and the target it
  // creates is the one the golden statements write.
  auto plan = trellis::plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->CreateTargetSql() + "\n" ==
        ReadFile(fs::path(TRELLIS_GOLDEN_DIR) / "projection" / "create_target.sql"));
}

TEST_CASE("define-time refusals of a projection need no database", "[plan][define]") {
  using trellis::Code;
  auto keyless = OrderLines();
  keyless.key_columns.clear();
  keyless.key_types.clear();
  auto no_key = trellis::plan::BindDefinition(
      ParseTransform("TRANSFORM t FROM order_lines SELECT qty AS q"), {keyless});
  REQUIRE_FALSE(no_key.ok());
  CHECK(no_key.status().code() == Code::kValidation);
  CHECK(no_key.status().message().find("no primary key") != std::string::npos);

  auto computed_key = trellis::plan::BindDefinition(
      ParseTransform("TRANSFORM t FROM order_lines SELECT line + 1 AS line"), {OrderLines()});
  REQUIRE_FALSE(computed_key.ok());
  CHECK(computed_key.status().message().find("is the target's key") != std::string::npos);
}

TEST_CASE("a grouped join is a hidden join and a grouping over its target", "[plan][join]") {
  using trellis::plan::HiddenColumnName;
  using trellis::plan::JoinColumnRef;
  const auto stmt = ParseTransform(
      "TRANSFORM t FROM order_lines o JOIN orders r ON o.order_id = r.id "
      "SELECT lower(r.region) AS region, sum(o.qty * 2) AS n, count(*) AS c, "
      "max('r.region') AS s WHERE r.note <> 'x' GROUP BY lower(r.region)");
  const trellis::grammar::QualifiedName hidden{"trellis", "__trellis_join_7"};
  // The join carries the columns the grouping reads, the WHERE stays with it.
  CHECK(trellis::grammar::Render(trellis::plan::HiddenJoinStatement(stmt, hidden)) ==
        "TRANSFORM trellis.__trellis_join_7 FROM order_lines AS o JOIN orders AS r ON o.order_id "
        "= r.id SELECT \"r\".\"region\" AS \"r.region\", \"o\".\"qty\" AS \"o.qty\" WHERE r.note "
        "<> 'x'");
  // The grouping reads them under the FROM alias; strings are left alone.
  CHECK(trellis::grammar::Render(trellis::plan::GroupOverHidden(stmt, hidden)) ==
        "TRANSFORM t FROM trellis.__trellis_join_7 AS o SELECT lower(\"o\".\"r.region\") AS "
        "region, sum(\"o\".\"o.qty\" * 2) AS n, count(*) AS c, max('r.region') AS s GROUP BY "
        "lower(\"o\".\"r.region\")");
  // What self-check compares the target with: the grouping over the base join.
  CHECK(trellis::plan::DefinitionOverJoinSql(stmt, {"region", "n", "c"}, "__trellis_all") ==
        "SELECT (lower(r.region)) AS \"region\", (sum(o.qty * 2)) AS \"n\", (count(*)) AS \"c\" "
        "FROM \"order_lines\" AS \"o\" JOIN \"orders\" AS \"r\" ON \"o\".\"order_id\" = "
        "\"r\".\"id\" WHERE (r.note <> 'x') GROUP BY (lower(r.region))");
  // A function in a schema named like an alias is not a column.
  const auto call = ParseTransform(
      "TRANSFORM t FROM order_lines o JOIN orders r ON o.order_id = r.id "
      "SELECT r.f(o.qty) AS k, count(*) AS c GROUP BY r.f(o.qty)");
  CHECK(trellis::plan::GroupingColumnRefs(call) == std::vector<JoinColumnRef>{{"o", "qty"}});
  // Long names stay within 63 bytes and apart.
  const std::string long_name(60, 'x');
  const std::string a = HiddenColumnName({long_name, "a"});
  const std::string b = HiddenColumnName({long_name, "b"});
  CHECK(a.size() <= 63);
  CHECK(b.size() <= 63);
  CHECK(a != b);
  CHECK(HiddenColumnName({"o", "qty"}) == "o.qty");
  CHECK(HiddenColumnName({"a.b", "c"}) == HiddenColumnName({"a", "b.c"}));  // short: the same
}

namespace {

// order_lines o JOIN orders r (by its key) LEFT JOIN customers c (by a
// unique email, routed, through r) with a WHERE over c.
Transform FixtureJoin() {
  auto draft = trellis::plan::BindDefinition(
      ParseTransform("TRANSFORM app.order_rows FROM order_lines o "
                     "JOIN orders r ON o.order_id = r.id "
                     "LEFT JOIN customers AS \"C\" ON \"C\".email = r.contact "
                     "SELECT o.qty * o.price AS total, \"C\".name AS customer "
                     "WHERE \"C\".name IS DISTINCT FROM 'x'"),
      {OrderLines(), Orders(), Customers()});
  REQUIRE(draft.ok());
  Transform t = draft.value();
  t.id = 9;
  int id = 3;
  for (auto& input : t.inputs) {
    input.source.id = id++;
    input.source.routing_columns = input.source.key_columns;
  }
  t.inputs[2].source.routing_columns.push_back("email");
  t.inputs[2].routed_columns = {"email"};
  t.source = t.inputs[0].source;
  return t;
}

}  // namespace

TEST_CASE("define binds a join's draft: one input per join, each naming what it joins",
          "[plan][define]") {
  const Transform t = FixtureJoin();
  CHECK(t.kind == trellis::catalog::TransformKind::kJoin);
  REQUIRE(t.inputs.size() == 3);
  CHECK(t.inputs[1].role == trellis::catalog::InputRole::kInnerJoin);
  CHECK(t.inputs[1].joined_to == 1);
  CHECK(t.inputs[1].join_columns == std::vector<std::string>{"id"});
  CHECK(t.inputs[1].joined_columns == std::vector<std::string>{"order_id"});
  CHECK(t.inputs[2].role == trellis::catalog::InputRole::kLeftJoin);
  CHECK(t.inputs[2].alias == "C");
  CHECK(t.inputs[2].joined_to == 2);
  CHECK(t.inputs[2].join_columns == std::vector<std::string>{"email"});
  // Keyed by the FROM table's key.
  REQUIRE(t.key.size() == 2);
  CHECK(t.key[0].expr == "\"o\".\"order_id\"");
}

TEST_CASE("every statement of a join plan matches its golden text", "[plan]") {
  auto plan = trellis::plan::Bind(FixtureJoin(), "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->kind() == trellis::catalog::TransformKind::kJoin);
  CheckGolden(*plan.value(), "join");
  // One dirty-keys statement per input.
  CHECK(plan.value()->DirtyKeySql().size() == 3);
}
