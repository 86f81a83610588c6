#include "pipeline_steps.h"

#include <catch2/catch.hpp>

#include "drain/charging.h"
#include "drain/drain_page.h"
#include "drain/unit_executor.h"
#include "staging/stage_batch.h"
#include "trellis/workers.h"

namespace trellis::test {

std::unique_ptr<Session> DefineBuilt(EngineFixture& f, const char* setup, const char* definition) {
  f.Sql(setup);
  auto s = f.OpenSession();
  REQUIRE(s->Apply(definition, true).ok());
  auto workers = BackgroundWorkers::Start(f.Options(), true, 1);
  f.AwaitConverged(*s);
  return s;
}

void KeepOffRebuilds(EngineFixture& f) {
  f.Sql(
      "INSERT INTO trellis.batch_paths (transform_id, path, factor, us_per_row, failed_at) "
      "SELECT id, 'rebuild', 1, 0, now() + interval '1 day' FROM trellis.transforms "
      "ON CONFLICT (transform_id, path) DO UPDATE SET failed_at = EXCLUDED.failed_at");
}

void StageStep(pg::Connection& conn) {
  auto staged = staging::StageBatch(conn, "trellis", 1000, 1000);
  REQUIRE(staged.ok());
}

void DrainAllPages(pg::Connection& conn) {
  auto hook = drain::MakeChargingHook();
  drain::UnitExecutor executor(*hook);
  for (;;) {
    auto drained = drain::DrainPages(conn, "trellis", {}, executor);
    REQUIRE(drained.ok());
    REQUIRE(drained->outcome != drain::PageOutcome::kFailed);
    if (drained->outcome == drain::PageOutcome::kNone) return;
  }
}

void StageAndDrain(pg::Connection& conn) {
  StageStep(conn);
  DrainAllPages(conn);
}

long SelectDifferences(EngineFixture& f, const std::string& target_sql,
                       const std::string& query_sql) {
  return std::stol(f.Scalar("SELECT count(*) FROM ((" + target_sql + " EXCEPT ALL " + query_sql +
                            ") UNION ALL (" + query_sql + " EXCEPT ALL " + target_sql + ")) d"));
}

}  // namespace trellis::test
