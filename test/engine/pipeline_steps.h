// The pipeline driven one step at a time, as the workers run it (a staging
// batch, then drains until no page is left), for tests that look at what
// each step left behind (delta rows, pages, recorded snapshots).
#pragma once

#include <memory>
#include <string>

#include "engine_fixture.h"

namespace trellis::test {

// Runs `setup` (SQL), defines `definition` and waits, with workers, until
// its target has converged; returns the session with no worker running.
std::unique_ptr<Session> DefineBuilt(EngineFixture& f, const char* setup, const char* definition);

// Keeps the drain's chooser off rebuilds of every transform defined so far
// (a rebuild that failed a moment ago, as batch_paths records it: see
// spec/engine.md "Batch paths"), for a test of what the delta and
// recompute paths do with a large batch (a claim's pages, two drains side
// by side, a delta's exactly-once), which a rebuild would do instead.
void KeepOffRebuilds(EngineFixture& f);

// One staging batch of the "trellis" catalog; fails the test on an error.
void StageStep(pg::Connection& conn);

// Drains every page there is; fails the test on an error or a failed page.
void DrainAllPages(pg::Connection& conn);

// StageStep, then DrainAllPages: what is committed so far reaches the targets.
void StageAndDrain(pg::Connection& conn);

// Rows of `target_sql` that differ from `query_sql` (both SELECTs), either
// way, counting duplicates.
long SelectDifferences(EngineFixture& f, const std::string& target_sql,
                       const std::string& query_sql);

}  // namespace trellis::test
