// Golden tests of the group plan (engine/src/plan/group_plan.*): every
// statement a fixture GROUP BY, whole-table and SELECT DISTINCT transform
// renders, compared with the checked-in text under golden/<fixture>/. No
// database; group_by/maintenance_test.exs runs them against PostgreSQL.
// After an intended change, regenerate with TRELLIS_UPDATE_GOLDEN=1 and
// review the diff.
#include <catch2/catch.hpp>

#include <variant>

#include "golden_files.h"
#include "grammar/parser.h"
#include "plan/bind.h"
#include "plan/group_plan.h"

using trellis::ColumnState;
using trellis::catalog::Column;
using trellis::catalog::ColumnRole;
using trellis::catalog::KeyColumn;
using trellis::catalog::Transform;

namespace {

Column Aggregate(std::string name, std::string expr, std::string type, int ordinal,
                 ColumnState state = ColumnState::kLive) {
  Column c;
  c.name = std::move(name);
  c.expr = std::move(expr);
  c.sql_type = std::move(type);
  c.state = state;
  c.role = ColumnRole::kAggregate;
  c.ordinal = ordinal;
  if (state == ColumnState::kPaused) c.paused_kind = trellis::PauseKind::kOperator;
  return c;
}

Column Hidden(std::string name, std::string type, int ordinal) {
  Column c;
  c.name = std::move(name);
  c.sql_type = std::move(type);
  c.role = ColumnRole::kHidden;
  c.ordinal = ordinal;
  return c;
}

Transform Base(std::string definition, std::vector<KeyColumn> key,
               std::vector<std::string> routed) {
  Transform t;
  t.id = 9;
  t.target_schema = "app";
  t.target_name = "order totals";
  t.kind = trellis::catalog::TransformKind::kGroupBy;
  t.definition = std::move(definition);
  t.source_alias = "o";
  t.source.id = 4;
  t.source.schema_name = "public";
  t.source.table_name = "orders";
  t.source.key_columns = {"id"};
  t.source.key_types = {"integer"};
  t.source.routing_columns = {"id", "region", "customer_id"};
  t.key = std::move(key);
  trellis::catalog::Input input;
  input.source = t.source;
  input.alias = "o";
  input.routed_columns = std::move(routed);
  t.inputs = {input};
  return t;
}

// Two group keys (one an expression), a WHERE, every kind of upkeep and a
// paused aggregate (left out of every write).
Transform Grouped() {
  Transform t = Base(
      "TRANSFORM \"order totals\" FROM orders o SELECT o.customer_id, lower(region) AS region, "
      "count(*) AS n, sum(amount) AS total, avg(amount) AS mean, max(placed_at) AS last, "
      "min(note) AS first_note WHERE o.status <> 'void' GROUP BY o.customer_id, lower(region)",
      {KeyColumn{"customer_id", "o.customer_id", "integer"},
       KeyColumn{"region", "lower(region)", "text"}},
      {"customer_id", "region"});
  t.where_sql = "o.status <> 'void'";
  t.columns = {Aggregate("n", "count(*)", "bigint", 1),
               Aggregate("total", "sum(amount)", "numeric", 2),
               Aggregate("mean", "avg(amount)", "numeric", 3),
               Aggregate("last", "max(placed_at)", "timestamp with time zone", 4),
               Aggregate("first_note", "min(note)", "text", 5, ColumnState::kPaused),
               Hidden("__trellis_2_sum", "numeric", 6),
               Hidden("__trellis_2_n", "bigint", 7),
               Hidden("__trellis_3_sum", "numeric", 8),
               Hidden("__trellis_3_n", "bigint", 9),
               Hidden("__trellis_rows", "bigint", 10)};
  return t;
}

Transform WholeTable() {
  Transform t = Base(
      "TRANSFORM \"order totals\" FROM orders o SELECT count(*) AS n, "
      "sum(amount) AS total",
      {KeyColumn{"__trellis_all", "true", "boolean"}}, {});
  t.columns = {Aggregate("n", "count(*)", "bigint", 1),
               Aggregate("total", "sum(amount)", "double precision", 2),
               Hidden("__trellis_rows", "bigint", 3)};
  return t;
}

Transform Distinct() {
  Transform t = Base("TRANSFORM \"order totals\" FROM orders o SELECT DISTINCT region",
                     {KeyColumn{"region", "region", "text"}}, {"region"});
  t.columns = {Hidden("__trellis_rows", "bigint", 1)};
  return t;
}

void CheckGolden(const Transform& t, const std::string& fixture) {
  auto plan = trellis::plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->kind() == trellis::catalog::TransformKind::kGroupBy);
  trellis::test::CheckGoldenStatements(plan.value()->Statements(), fixture);
  // A group is the unit of its maintenance: its unit key is its target key
  // (spec/engine.md "Unit keys").
  const auto& unit = plan.value()->unit_key();
  const auto& key = plan.value()->target_key();
  REQUIRE(unit.size() == key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    CHECK(unit[i].name == key[i].name);
    CHECK(unit[i].expr == key[i].expr);
    CHECK(unit[i].nullable == key[i].nullable);
  }
}

}  // namespace

TEST_CASE("every statement of a GROUP BY plan matches its golden text", "[plan][group]") {
  CheckGolden(Grouped(), "group_by");
}

TEST_CASE("every statement of a whole-table aggregate plan matches its golden text",
          "[plan][group]") {
  CheckGolden(WholeTable(), "group_by_whole_table");
}

TEST_CASE("every statement of a SELECT DISTINCT plan matches its golden text", "[plan][group]") {
  CheckGolden(Distinct(), "group_by_distinct");
}

TEST_CASE("a paused aggregate is left out of every write of a group plan", "[plan][group]") {
  auto plan = trellis::plan::Bind(Grouped(), "trellis");
  REQUIRE(plan.ok());
  for (const auto& s : plan.value()->Statements()) {
    INFO(s.name);
    CHECK(s.text.find("first_note") == std::string::npos);
  }
}

TEST_CASE("a group plan whose routed column left the layout is not bound", "[plan][group]") {
  Transform t = Grouped();
  t.inputs.front().routed_columns = {"customer_id", "gone"};
  auto plan = trellis::plan::Bind(t, "trellis");
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == trellis::Code::kInternal);
}

namespace {

trellis::grammar::TransformStmt ParseGroup(const std::string& text) {
  auto parsed = trellis::grammar::Parse(text);
  REQUIRE(std::holds_alternative<trellis::grammar::Statement>(parsed));
  auto& statement = std::get<trellis::grammar::Statement>(parsed);
  REQUIRE(std::holds_alternative<trellis::grammar::TransformStmt>(statement));
  return std::get<trellis::grammar::TransformStmt>(statement);
}

trellis::capture::ResolvedTable Orders() {
  return trellis::capture::ResolvedTable{"16384", "public", "orders", {"id"}, {"integer"}, {}};
}

}  // namespace

TEST_CASE("define binds a GROUP BY's draft rows: keys, aggregates, then hidden state",
          "[plan][group][define]") {
  auto draft = trellis::plan::BindDefinition(
      ParseGroup("TRANSFORM totals FROM orders o SELECT count(*) AS n, o.customer_id, "
                 "avg(amount) AS mean GROUP BY o.customer_id WITHOUT SOURCE INDEX"),
      {Orders()});
  REQUIRE(draft.ok());
  const Transform& t = draft.value();
  CHECK(t.kind == trellis::catalog::TransformKind::kGroupBy);
  CHECK(t.source_index_optional);
  REQUIRE(t.key.size() == 1);
  CHECK(t.key[0].name == "customer_id");
  CHECK(t.key[0].expr == "o.customer_id");
  std::vector<std::string> names;
  std::vector<int> ordinals;
  for (const auto& c : t.columns) {
    names.push_back(c.name);
    ordinals.push_back(c.ordinal);
  }
  CHECK(names == std::vector<std::string>{"n", "mean", "__trellis_2_sum", "__trellis_2_n",
                                          "__trellis_rows"});
  CHECK(ordinals == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(t.columns[2].role == ColumnRole::kHidden);
  // The draft binds (its routed columns are found later, with the database).
  auto plan = trellis::plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->CreateTargetSql().find("WITH NO DATA") != std::string::npos);
}

TEST_CASE("define-time refusals of a group transform need no database", "[plan][group][define]") {
  using trellis::Code;
  // A source without a primary key is fine: groups are keyed by their values.
  auto keyless = Orders();
  keyless.key_columns.clear();
  keyless.key_types.clear();
  CHECK(trellis::plan::BindDefinition(
            ParseGroup("TRANSFORM t FROM orders SELECT region, count(*) AS n GROUP BY region"),
            {keyless})
            .ok());
  for (const char* refused :
       {"TRANSFORM t FROM orders SELECT region AS __trellis_x, count(*) AS n GROUP BY region",
        "TRANSFORM t FROM orders AS __trellis_o SELECT count(*) AS n",
        "TRANSFORM t FROM orders SELECT region, count(*) AS n"}) {
    INFO(refused);
    auto draft = trellis::plan::BindDefinition(ParseGroup(refused), {Orders()});
    REQUIRE_FALSE(draft.ok());
    CHECK(draft.status().code() == Code::kValidation);
  }
}
