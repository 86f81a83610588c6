// Unit keys apart from row keys (spec/engine.md "Unit keys"): every kind
// today has one target row per unit, so its unit key is its target key; and
// self-check, which speaks only of unit keys and the target key, compares
// every target row under a unit, so a kind whose unit selects many rows (a
// one-to-many join keyed by (c_id, o_id) whose unit is c_id) needs no
// change there. The second part runs self-check's statements for such a
// plan against the server.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "drain/self_check_compare.h"
#include "engine_fixture.h"
#include "sql/key_text.h"

namespace trellis::test {
namespace {

constexpr const char* kOrders = R"sql(
CREATE TABLE customers (id int PRIMARY KEY, name text);
CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, total int);
INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
INSERT INTO orders VALUES (10, 1, 100), (11, 1, 110), (12, 1, 120), (20, 2, 200);
CREATE TABLE customer_orders (c_id int, o_id int, total int, PRIMARY KEY (c_id, o_id));
)sql";

// A one-to-many join keyed by (c_id, o_id) whose unit is the customer: only
// what self-check asks of a plan is rendered (no kind has this shape yet;
// issue 25 item 4 builds it).
class CustomerOrdersPlan final : public plan::TransformPlan {
 public:
  CustomerOrdersPlan()
      : TransformPlan(424242, "customer_orders", "public.customer_orders",
                      {plan::KeyColumn{"c_id", "integer", "c.id"},
                       plan::KeyColumn{"o_id", "integer", "o.id"}},
                      std::vector<plan::KeyColumn>{plan::KeyColumn{"c_id", "integer", "c.id"}}) {}

  catalog::TransformKind kind() const override { return catalog::TransformKind::kJoin; }
  std::vector<plan::NamedStatement> Statements() const override { return {}; }
  std::string FromClause() const override {
    return "customers c JOIN orders o ON o.customer_id = c.id";
  }
  std::vector<plan::DirtyKeys> DirtyKeySql() const override { return {}; }
  std::string RecomputePagesSql() const override { return {}; }
  std::string RecomputeKeysSql() const override { return {}; }
  plan::Bound RecomputeRange(const plan::KeyRange&,
                             const std::optional<std::vector<std::string>>&) const override {
    return {};
  }
  plan::Bound AppendRange(const plan::KeyRange&) const override { return {}; }
  std::string AddKeySql() const override { return {}; }
  std::string EstimateKeysSql() const override { return {}; }
  plan::Bound SampleBoundaries(double, long, long) const override { return {}; }
  std::string DefinitionQuerySql() const override {
    return "SELECT c.id AS c_id, o.id AS o_id, o.total AS total FROM " + FromClause();
  }
  Status CheckDefinition(pg::Connection&, const plan::ExpressionCheck&) const override {
    return Status::OK();
  }
  std::string CreateTargetSql() const override { return {}; }
  Status AddColumn(pg::Connection&, const std::string&, const catalog::Transform&,
                   const grammar::SelectItem&) const override {
    return Status::OK();
  }
  Status DropColumn(pg::Connection&, const std::string&, const catalog::Transform&,
                    const std::string&) const override {
    return Status::OK();
  }
  Status AlterColumn(pg::Connection&, const std::string&, const catalog::Transform&,
                     const grammar::SelectItem&) const override {
    return Status::OK();
  }
};

std::string Key(std::initializer_list<std::optional<std::string>> values) {
  return sql::KeyLiteral(sql::KeyValueList(values));
}

}  // namespace

TEST_CASE("a unit spanning many target rows is compared row by row", "[unit_key]") {
  EngineFixture f;
  auto session = f.OpenSession();  // the catalog the statements read
  f.Sql(kOrders);
  // Customer 1: order 10 right, 11 with a wrong total, 12 missing, 13
  // extra. Customer 2: right. Customer 3: no rows on either side.
  f.Sql(
      "INSERT INTO customer_orders VALUES (1, 10, 100), (1, 11, 999), (1, 13, 130), "
      "(2, 20, 200)");
  CustomerOrdersPlan plan;
  drain::SelfCheckStatements statements(plan, {"total"}, "trellis");

  // Find: the candidates are unit keys, each once however many rows differ.
  const plan::Bound compare = statements.CompareRange(plan::KeyRange{});
  auto compared = f.conn().Query(compare.text, compare.params);
  REQUIRE(compared.ok());
  CHECK(compared->text(0, 0) == "5");  // rows of either side, paired: 10 11 12 13 20
  const auto found = sql::ParseKeyList(compared->text(0, 1));
  CHECK(std::set<std::string>(found.begin(), found.end()) == std::set<std::string>{Key({"1"})});

  // Settle: one row per target row under each unit, paired on the target
  // key; a unit with no rows on either side is one row with neither.
  auto rows = f.conn().Query(statements.RecheckKeysSql(),
                             {sql::KeyListLiteral({Key({"1"}), Key({"2"}), Key({"3"})})});
  REQUIRE(rows.ok());
  std::map<std::string, std::string> verdicts;  // row key -> target, definition, differs
  std::multiset<std::string> units;
  for (size_t r = 0; r < rows->size(); ++r) {
    units.insert(rows->text(r, 0));
    CHECK(rows->text(r, 4) == "f");  // not held
    const size_t at = drain::SelfCheckStatements::kRecheckLeading;
    verdicts[rows->text(r, 5)] = rows->text(r, 2) + rows->text(r, 3) + rows->text(r, at + 2);
  }
  CHECK(units == std::multiset<std::string>{Key({"1"}), Key({"1"}), Key({"1"}), Key({"1"}),
                                            Key({"2"}), Key({"3"})});
  CHECK(verdicts[Key({"1", "10"})] == "ttf");
  CHECK(verdicts[Key({"1", "11"})] == "ttt");
  CHECK(verdicts[Key({"1", "12"})] == "ftt");  // missing
  CHECK(verdicts[Key({"1", "13"})] == "tft");  // extra
  CHECK(verdicts[Key({"2", "20"})] == "ttf");
  CHECK(verdicts[Key({std::nullopt, std::nullopt})] == "fff");  // customer 3: neither side

  // A sample of the target yields unit keys.
  auto sampled = f.conn().Query(statements.SampleTargetKeysSql(), {"100", "100"});
  REQUIRE(sampled.ok());
  std::set<std::string> sampled_units;
  for (size_t r = 0; r < sampled->size(); ++r) sampled_units.insert(sampled->text(r, 0));
  CHECK(sampled_units == std::set<std::string>{Key({"1"}), Key({"2"})});
}

}  // namespace trellis::test
