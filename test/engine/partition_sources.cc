#include "partition_sources.h"

#include <catch2/catch.hpp>

#include "build_steps.h"
#include "capture/relations.h"
#include "catalog/model.h"
#include "pipeline_steps.h"
#include "plan/bind.h"

namespace trellis::test {

std::unique_ptr<Session> BuiltTotals(EngineFixture& f, const char* setup) {
  auto s = DefineBuilt(f, setup, kTotals);
  REQUIRE(SelectDifferences(f, "SELECT g, n, total, top FROM totals", kTotalsQuery) == 0);
  auto conn = ConnectBuilder(f);
  REQUIRE_FALSE(TotalsPlan(*conn)->DeltaRowsSql().empty());  // on the delta path
  return s;
}

std::unique_ptr<plan::TransformPlan> TotalsPlan(pg::Connection& conn) {
  auto t = catalog::LoadTransform(conn, "trellis", "totals");
  REQUIRE(t.ok());
  auto plan = plan::Bind(t.value(), "trellis");
  REQUIRE(plan.ok());
  return std::move(plan.value());
}

std::string Changes(pg::Connection& conn) {
  auto changes = capture::FindRelationChanges(conn, "trellis");
  REQUIRE(changes.ok());
  std::string out;
  for (const auto& c : changes.value()) {
    out += (out.empty() ? "" : ",") + c.node + ":" + std::string(capture::ChangeName(c.change));
  }
  return out;
}

}  // namespace trellis::test
