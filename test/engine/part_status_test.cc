// How status/2 reads a grouped join's two parts as one transform
// (reads/part_status.h): the pair's state through a build of both halves,
// and whose progress and pause it shows.
#include <catch2/catch.hpp>

#include "reads/part_status.h"

namespace trellis::reads {
namespace {

constexpr const char* kJoinTarget = "trellis.__trellis_join_7";

TransformStatus Part(std::string state) {
  TransformStatus s;
  s.status = std::move(state);
  return s;
}

TEST_CASE("a pair's build reads waiting, backfilling through both halves, then live") {
  // Both asked to rebuild, no worker has started either.
  CHECK(PairState("waiting_to_backfill", "waiting_to_backfill", false) == "waiting_to_backfill");
  // The join's half runs.
  CHECK(PairState("waiting_to_backfill", "backfilling", true) == "backfilling");
  // The join's half is done; the group waits for it to be live, then starts:
  // still one build under way, never waiting again.
  CHECK(PairState("waiting_to_backfill", "catching_up", true) == "backfilling");
  CHECK(PairState("waiting_to_backfill", "live", true) == "backfilling");
  CHECK(PairState("backfilling", "live", false) == "backfilling");
  CHECK(PairState("catching_up", "live", false) == "catching_up");
  CHECK(PairState("live", "live", false) == "live");
}

TEST_CASE("without a build of the join for it, the pair reads the worse part") {
  // An ALTER of a column the join carries: only the group rebuilds.
  CHECK(PairState("waiting_to_backfill", "live", false) == "waiting_to_backfill");
  CHECK(PairState("live", "catching_up", false) == "catching_up");
  CHECK(PairState("live", "paused", false) == "paused");
  CHECK(PairState("paused", "backfilling", false) == "paused");
}

TEST_CASE("the join's half shows the join's rows and the group's columns, unfinished") {
  TransformStatus group = Part("waiting_to_backfill");
  group.backfill.columns = std::vector<std::string>{"gross"};
  TransformStatus join = Part("catching_up");
  join.backfill = BackfillProgress{2000, 2000, 10, 20, std::vector<std::string>{"regions.vat"}};
  join.backlog_pages = 3;
  FoldJoinPart(group, join, kJoinTarget, true);
  CHECK(group.status == "backfilling");
  CHECK(group.backfill.rows_done == 2000);
  CHECK(group.backfill.rows_total == 2000);
  CHECK(group.backfill.started_at_us == 10);
  CHECK_FALSE(group.backfill.finished_at_us);
  CHECK(group.backfill.columns == std::vector<std::string>{"gross"});
  CHECK(group.backlog_pages == 3);
}

TEST_CASE("the group's own half shows the group's progress") {
  TransformStatus group = Part("backfilling");
  group.backfill = BackfillProgress{5, 12, 30, std::nullopt, std::nullopt};
  TransformStatus join = Part("live");
  join.backfill = BackfillProgress{2000, 2000, 10, 20, std::nullopt};
  FoldJoinPart(group, join, kJoinTarget, false);
  CHECK(group.status == "backfilling");
  CHECK(group.backfill.rows_done == 5);
  CHECK(group.backfill.rows_total == 12);
}

TEST_CASE("a paused join pauses the pair with the join's reason") {
  TransformStatus group = Part("live");
  TransformStatus join = Part("paused");
  join.paused_kind = "disruption";
  join.paused_reason = "capture of customers was disabled";
  FoldJoinPart(group, join, kJoinTarget, false);
  CHECK(group.status == "paused");
  CHECK(group.paused_kind == "disruption");
  CHECK(group.paused_reason == "capture of customers was disabled");
}

TEST_CASE("a paused stage's reason names the user's transform, never the stage") {
  TransformStatus group = Part("live");
  group.name = "big_parts";
  TransformStatus join = Part("paused");
  join.name = "__trellis_join_7";
  join.paused_kind = "failure";
  join.paused_reason =
      "it holds 1000 keys whose rows cannot be written; fix the cause, then RESUME TRANSFORM "
      "__trellis_join_7 rebuilds it";
  FoldJoinPart(group, join, kJoinTarget, false);
  CHECK(group.status == "paused");
  CHECK(group.paused_reason ==
        "it holds 1000 keys whose rows cannot be written; fix the cause, then RESUME TRANSFORM "
        "big_parts rebuilds it");
}

}  // namespace
}  // namespace trellis::reads
