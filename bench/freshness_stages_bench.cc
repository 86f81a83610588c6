// Benchmark 7: freshness across stages (issue 25). The writes of benchmark 3
// reach a GROUP BY target through one stage, through a grouped join's two
// stages (a hidden join stage, then the grouping), and through three
// chained transforms; a drain commit of one stage wakes staging for the
// next (spec/engine.md, "A stage's commit wakes the next stage"), so each
// stage should add a drain round, not a polling interval. Each shape runs in
// its own database; rounds rotate which shape goes first, and each figure is
// the median over the rounds.
#include <spdlog/spdlog.h>

#include <map>
#include <vector>

#include "freshness_run.h"
#include "stats.h"

namespace trellis::bench {
namespace {

// The stage counts the target compares: (b) and (c) against one stage.
constexpr double kMaxStageRatio = 2.0;

const char* Tag(FreshShape shape) {
  switch (shape) {
    case FreshShape::kProjection:
      return "projection";
    case FreshShape::kGroup:
      return "group";
    case FreshShape::kGroupOverJoin:
      return "group_join";
    case FreshShape::kChain:
      return "chain";
    case FreshShape::kCompiled:
      return "compiled";
  }
  return "?";
}

struct Series {
  std::vector<double> p50, p99;
  long pending = 0;  // over every round: > 0 makes the figures lower bounds
  std::vector<std::string> notes;
};

}  // namespace

Section FreshnessAcrossStages(const test::ThrowawayCluster& cluster, const Config& config) {
  const std::vector<FreshShape> shapes = {FreshShape::kProjection, FreshShape::kGroup,
                                          FreshShape::kGroupOverJoin, FreshShape::kCompiled,
                                          FreshShape::kChain};
  Config c = config;
  c.fresh_groups = config.stage_groups;
  c.fresh_prefill = config.stage_prefill;
  std::map<FreshShape, Series> series;
  for (int round = 0; round < config.stage_rounds; ++round) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const FreshShape shape = shapes[(i + round) % shapes.size()];
      spdlog::warn("freshness across stages, round {}: {}", round + 1, Describe(shape));
      const FreshnessRun r =
          MeasureFreshness(cluster, c, shape,
                           std::string("bench_stages_") + Tag(shape) + "_" + std::to_string(round));
      Series& s = series[shape];
      s.p50.push_back(r.p50);
      s.p99.push_back(r.p99);
      s.pending += r.pending;
      s.notes.push_back("round " + std::to_string(round + 1) + ": p50 " + Fixed(r.p50, 1) +
                        " ms, p99 " + Fixed(r.p99, 1) + " ms, " + Fixed(r.pgbench.tps, 0) +
                        " writes/s, " + std::to_string(r.written) + " rows, " +
                        std::to_string(r.pending) + " not visible at the end, backlog at stop " +
                        std::to_string(r.at_stop.backlog_keys) + " keys + " +
                        std::to_string(r.at_stop.capture_backlog) + " capture rows");
    }
  }

  Section s;
  s.title = "7. Freshness across stages";
  s.method =
      "Benchmark 3's writer and measurement (pgbench `-R " + std::to_string(config.fresh_rate) +
      " -c 2 -T " + std::to_string(config.fresh_seconds) + "`, a deferred constraint trigger on " +
      "the last target) over four shapes, each in its own database with the same " +
      std::to_string(config.stage_prefill) + " prefilled rows in " +
      std::to_string(config.stage_groups) +
      " groups; a GROUP BY target counts a write visible once its group's max(written_at) "
      "reaches it. Shapes: (a) " +
      Describe(FreshShape::kProjection) + "; (a') " + Describe(FreshShape::kGroup) + "; (b) " +
      Describe(FreshShape::kGroupOverJoin) + "; (c) " + Describe(FreshShape::kChain) + "; (d) " +
      Describe(FreshShape::kCompiled) + ". " + std::to_string(config.stage_rounds) +
      " rounds, the order of the shapes rotating; medians over the rounds.";
  auto bound = [&](FreshShape shape) { return series[shape].pending > 0 ? ">= " : ""; };
  const std::map<FreshShape, std::string> label = {
      {FreshShape::kProjection, "(a) projection"},
      {FreshShape::kGroup, "(a') GROUP BY"},
      {FreshShape::kGroupOverJoin, "(b) grouped join"},
      {FreshShape::kCompiled, "(d) one transform of 3 stages"},
      {FreshShape::kChain, "(c) chain of 3"}};
  for (FreshShape shape : shapes) {
    const Series& one = series[shape];
    s.figures.push_back({label.at(shape) + " p50 / p99",
                         bound(shape) + Fixed(Median(one.p50), 1) + " / " + bound(shape) +
                             Fixed(Median(one.p99), 1) + " ms",
                         "", std::nullopt});
  }
  for (FreshShape base : {FreshShape::kProjection, FreshShape::kGroup}) {
    for (FreshShape staged :
         {FreshShape::kGroupOverJoin, FreshShape::kCompiled, FreshShape::kChain}) {
      const double ratio = Median(series[staged].p50) / Median(series[base].p50);
      s.figures.push_back({label.at(staged) + " p50 / " + label.at(base) + " p50",
                           Fixed(ratio, 2) + "x", "<= " + Fixed(kMaxStageRatio, 0) + "x",
                           ratio <= kMaxStageRatio});
    }
  }
  for (FreshShape shape : shapes) {
    for (const std::string& note : series[shape].notes)
      s.raw.push_back(label.at(shape) + " " + note);
  }
  return s;
}

}  // namespace trellis::bench
