#include "partition_sources.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

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

void LeavePendingDetach(EngineFixture& f, const std::string& partition,
                        const std::string& reader_query) {
  auto reader = ConnectBuilder(f);
  REQUIRE(reader->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ").ok());
  REQUIRE(reader->Query(reader_query).ok());
  auto detacher = ConnectBuilder(f);
  Status detached;
  const std::string statement = "ALTER TABLE orders DETACH PARTITION " + partition;
  std::thread detach([&] { detached = detacher->Exec(statement + " CONCURRENTLY"); });
  const std::string pending = "SELECT count(*) FROM pg_inherits WHERE inhrelid = '" + partition +
                              "'::regclass AND inhdetachpending";
  for (int i = 0; i < 500 && f.Scalar(pending) != "1"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(f.Scalar(pending) == "1");
  f.Sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '" + statement +
        "%'");
  detach.join();
  CHECK_FALSE(detached.ok());
  REQUIRE(reader->Exec("COMMIT").ok());
  REQUIRE(f.Scalar(pending) == "1");
}

}  // namespace trellis::test
