// Joins of every shape in the plan room (spec/engine.md "Joins of every
// shape"): the tree's questions answered without a database (which inputs
// are preserved, the path between two inputs, the columns of an edge, the
// stored root), and the statements of a fan-out join and of a FULL JOIN
// against their golden texts. Which root define picks, with the server's
// answer on uniqueness, is tested through the port
// (elixir/test/trellis/joins/fan_out_differential_test.exs).
#include <catch2/catch.hpp>

#include "golden_files.h"
#include "grammar/parser.h"
#include "plan/bind.h"
#include "plan/fan_out_join_plan.h"
#include "plan/join_tree.h"

namespace trellis::test {
namespace {

using catalog::InputRole;
using catalog::Transform;

grammar::TransformStmt Statement(const std::string& text) {
  auto parsed = grammar::Parse(text);
  REQUIRE(std::holds_alternative<grammar::Statement>(parsed));
  return std::get<grammar::TransformStmt>(std::get<grammar::Statement>(parsed));
}

capture::ResolvedTable Table(const std::string& name) {
  return capture::ResolvedTable{"1", "public", name, {"id"}, {"integer"}, {}};
}

// The draft of `text` over tables named as in it, each keyed by id, with
// source ids from 3 and every join column routed.
Transform Draft(const std::string& text, const std::vector<std::string>& tables) {
  std::vector<capture::ResolvedTable> inputs;
  for (const auto& t : tables) inputs.push_back(Table(t));
  auto draft = plan::BindDefinition(Statement(text), inputs);
  REQUIRE(draft.ok());
  Transform t = draft.value();
  t.id = 11;
  t.target_schema = "public";
  int id = 3;
  for (auto& input : t.inputs) {
    input.source.id = id++;
    input.source.routing_columns = input.source.key_columns;
    for (const auto& c : input.join_columns) input.source.routing_columns.push_back(c);
    for (const auto& other : t.inputs) {
      if (other.joined_to != input.ordinal) continue;
      for (const auto& c : other.joined_columns) input.source.routing_columns.push_back(c);
    }
  }
  t.source = t.inputs[0].source;
  return t;
}

}  // namespace

TEST_CASE("the preserved inputs follow the roles: RIGHT keeps one, FULL none", "[plan][join]") {
  auto roles = [](std::vector<InputRole> list) {
    std::vector<catalog::Input> inputs;
    for (size_t i = 0; i < list.size(); ++i) {
      catalog::Input input;
      input.ordinal = static_cast<int>(i) + 1;
      input.role = list[i];
      if (i > 0) input.joined_to = 1;
      inputs.push_back(input);
    }
    return plan::PreservedInputs(inputs);
  };
  using V = std::vector<size_t>;
  CHECK(roles({InputRole::kFrom, InputRole::kInnerJoin, InputRole::kLeftJoin}) == V{0, 1});
  CHECK(roles({InputRole::kFrom, InputRole::kInnerJoin, InputRole::kRightJoin}) == V{2});
  CHECK(roles({InputRole::kFrom, InputRole::kRightJoin, InputRole::kInnerJoin}) == V{1, 2});
  CHECK(roles({InputRole::kFrom, InputRole::kFullJoin, InputRole::kLeftJoin}).empty());
  CHECK(roles({InputRole::kFrom, InputRole::kFullJoin, InputRole::kInnerJoin}) == V{2});
}

TEST_CASE("paths run through the tree between any two inputs; edges read from either side",
          "[plan][join]") {
  // r <- c <- o, and s joined to o: a tree rooted anywhere.
  const Transform t = Draft(
      "TRANSFORM t FROM regions r JOIN customers c ON c.region_id = r.id "
      "JOIN orders o ON o.customer_id = c.id LEFT JOIN shipments s ON s.order_id = o.id "
      "SELECT s.id AS shipment",
      {"regions", "customers", "orders", "shipments"});
  using V = std::vector<size_t>;
  CHECK(plan::PathBetween(t.inputs, 0, 3) == V{0, 1, 2, 3});
  CHECK(plan::PathBetween(t.inputs, 3, 0) == V{3, 2, 1, 0});
  CHECK(plan::PathBetween(t.inputs, 2, 2) == V{2});
  const plan::JoinEdge down = plan::EdgeBetween(t.inputs, 1, 2);  // customers -> orders
  CHECK(down.near_columns == std::vector<std::string>{"id"});
  CHECK(down.far_columns == std::vector<std::string>{"customer_id"});
  const plan::JoinEdge up = plan::EdgeBetween(t.inputs, 2, 1);  // orders -> customers
  CHECK(up.near_columns == std::vector<std::string>{"customer_id"});
  CHECK(up.far_columns == std::vector<std::string>{"id"});
  CHECK(plan::InnerPathFrom(t.inputs, {2, 1, 0}) ==
        "\"public\".\"orders\" AS \"o\" JOIN \"public\".\"customers\" AS \"c\" ON \"c\".\"id\" = "
        "\"o\".\"customer_id\" JOIN \"public\".\"regions\" AS \"r\" ON \"r\".\"id\" = "
        "\"c\".\"region_id\"");
}

TEST_CASE("a fan-out join: keyed by its root and what repeats, statements golden", "[plan][join]") {
  const std::string text =
      "TRANSFORM customer_orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
      "SELECT c.name, o.id AS order_id, o.amount";
  const Transform drafted = Draft(text, {"customers", "orders"});
  // Rooted at customers (a LEFT join keeps them), orders repeat.
  plan::JoinShape shape{0, {false, true}};
  auto fanned = plan::FanOutJoinPlan::Draft(Statement(text), drafted, shape);
  REQUIRE(fanned.ok());
  Transform t = fanned.value();
  REQUIRE(t.key.size() == 2);
  CHECK(t.key[0].name == "c.id");
  CHECK(t.key[1].name == "order_id");  // named by the SELECT item that is only it
  REQUIRE(t.columns.size() == 2);
  CHECK(t.columns[0].name == "name");
  CHECK(t.columns[1].name == "amount");
  CHECK(plan::StoredRoot(t.inputs, t.key) == 0);
  auto plan = plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->kind() == catalog::TransformKind::kFanOutJoin);
  // One input repeats: its rows are units of their own, (customer, order),
  // and builds cut the customer key into ranges. The order's key may be
  // NULL (a LEFT join).
  CHECK(t.side_units);
  REQUIRE(plan.value()->unit_key().size() == 2);
  CHECK(plan.value()->unit_key()[0].name == "c.id");
  CHECK(plan.value()->unit_key()[1].name == "order_id");
  CHECK_FALSE(plan.value()->target_key()[0].nullable);
  CHECK(plan.value()->target_key()[1].nullable);
  CHECK(plan.value()->Ranges() != nullptr);
  CheckGoldenStatements(plan.value()->Statements(), "fan_out_join");

  // Defined before catalog step 19: the customer is the unit, as its pages
  // in flight say.
  t.side_units = false;
  auto rooted = plan::Bind(t, "trellis");
  REQUIRE(rooted.ok());
  REQUIRE(rooted.value()->unit_key().size() == 1);
  CHECK(rooted.value()->unit_key()[0].name == "c.id");
  CheckGoldenStatements(rooted.value()->Statements(), "fan_out_join_root_units");
}

TEST_CASE("a fan-out join with two repeating inputs keeps root units", "[plan][join]") {
  const std::string text =
      "TRANSFORM both FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
      "LEFT JOIN payments p ON p.customer_id = c.id SELECT o.amount, p.paid";
  const Transform drafted = Draft(text, {"customers", "orders", "payments"});
  plan::JoinShape shape{0, {false, true, true}};
  auto fanned = plan::FanOutJoinPlan::Draft(Statement(text), drafted, shape);
  REQUIRE(fanned.ok());
  CHECK_FALSE(fanned->side_units);
  auto plan = plan::Bind(fanned.value(), "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->unit_key().size() == 1);
}

TEST_CASE("a FULL JOIN: keyed by its join value, then each side's key; statements golden",
          "[plan][join]") {
  Transform t = Draft(
      "TRANSFORM pairs FROM customers c FULL JOIN orders o ON o.customer_id = c.id "
      "SELECT c.name, o.amount",
      {"customers", "orders"});
  t.kind = catalog::TransformKind::kFullOuterJoin;
  t.key = {{"c.id=o.customer_id", "coalesce(\"c\".\"id\", \"o\".\"customer_id\")", "integer"},
           {"c.id", "\"c\".\"id\"", "integer"},
           {"o.id", "\"o\".\"id\"", "integer"}};
  auto plan = plan::Bind(t, "trellis");
  REQUIRE(plan.ok());
  CHECK(plan.value()->kind() == catalog::TransformKind::kFullOuterJoin);
  REQUIRE(plan.value()->unit_key().size() == 1);
  CHECK(plan.value()->unit_key()[0].name == "c.id=o.customer_id");
  for (const auto& k : plan.value()->target_key()) CHECK(k.nullable);
  CHECK(plan.value()->Ranges() == nullptr);  // one build statement
  CHECK(plan.value()->KeyInputsSql().empty());
  CheckGoldenStatements(plan.value()->Statements(), "full_outer_join");
}

}  // namespace trellis::test
