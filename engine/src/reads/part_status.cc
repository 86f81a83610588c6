#include "reads/part_status.h"

#include <algorithm>

#include "catalog/address.h"

namespace trellis::reads {
namespace {

// How far from live a state is, as a user of the pair reads it: a part that
// builds makes the whole build, even while the group only waits for it.
int Badness(const std::string& status) {
  if (status == "paused") return 4;
  if (status == "backfilling") return 3;
  if (status == "waiting_to_backfill") return 2;
  if (status == "catching_up") return 1;
  return 0;
}

}  // namespace

std::string PairState(const std::string& group, const std::string& join, bool building) {
  if (building) return "backfilling";
  return Badness(join) > Badness(group) ? join : group;
}

void FoldJoinPart(TransformStatus& group, TransformStatus join, const std::string& join_target,
                  bool building) {
  const std::string state = PairState(group.status, join.status, building);
  if (state != group.status) {
    group.status = state;
    if (state == join.status && !group.paused_kind) {
      group.paused_kind = join.paused_kind;
      // The stage's reason names the stage's statements (RESUME TRANSFORM
      // __trellis_...), which refuse it: the owner's name reaches it.
      group.paused_reason = join.paused_reason;
      if (group.paused_reason && !join.name.empty() && !group.name.empty()) {
        group.paused_reason = catalog::NamedByOwner(*group.paused_reason, join.name, group.name);
      }
      group.paused_at_us = join.paused_at_us;
    }
    if (state == "backfilling") {
      // The join's half: its rows, the group's columns (the user's), not
      // finished while the group's half is still to come.
      std::optional<std::vector<std::string>> columns = std::move(group.backfill.columns);
      group.backfill = join.backfill;
      group.backfill.columns = std::move(columns);
      if (join.status != "backfilling") group.backfill.finished_at_us.reset();
    }
  }
  group.backlog_pages += join.backlog_pages;
  group.backlog_keys += join.backlog_keys;
  group.capture_backlog += join.capture_backlog;
  group.held_keys += join.held_keys;
  if (!group.drain_failure) group.drain_failure = std::move(join.drain_failure);
  if (!group.capture_failure) group.capture_failure = std::move(join.capture_failure);
  // The group's own gaps on the hidden target are closed by the index define
  // made on it; a gap listed there is not the user's to fix.
  std::erase_if(group.source_index_gaps,
                [&](const SourceIndexGapStatus& g) { return g.table == join_target; });
  group.source_index_gaps.insert(group.source_index_gaps.begin(), join.source_index_gaps.begin(),
                                 join.source_index_gaps.end());
  std::erase_if(group.paused_upstream_columns, [&](const std::string& c) {
    return c.rfind(join_target.substr(join_target.find('.') + 1) + ".", 0) == 0;
  });
  group.paused_upstream_columns.insert(group.paused_upstream_columns.end(),
                                       join.paused_upstream_columns.begin(),
                                       join.paused_upstream_columns.end());
  std::sort(group.paused_upstream_columns.begin(), group.paused_upstream_columns.end());
  group.correcting.insert(group.correcting.end(), join.correcting.begin(), join.correcting.end());
}

}  // namespace trellis::reads
