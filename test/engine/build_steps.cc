#include "build_steps.h"

#include <catch2/catch.hpp>

#include "drain/build_job.h"
#include "drain/build_step.h"
#include "drain/charging.h"

namespace trellis::test {

std::unique_ptr<pg::Connection> ConnectBuilder(EngineFixture& f) {
  auto conn = pg::Connection::Open(f.url(), "builder");
  REQUIRE(conn.ok());
  return std::move(conn.value());
}

Result<bool> TryBuildStep(pg::Connection& conn, long range_rows) {
  drain::DrainFailureRecorder charging;
  drain::UnitExecutor executor(charging);
  auto ran = drain::RunOneBuildJob(conn, "trellis", executor);
  if (!ran.ok()) return ran.status();
  if (ran.value()) return true;
  return drain::AdvanceBuild(conn, "trellis", range_rows, executor);
}

bool BuildStep(pg::Connection& conn, long range_rows) {
  auto stepped = TryBuildStep(conn, range_rows);
  REQUIRE(stepped.ok());
  return stepped.value();
}

}  // namespace trellis::test
