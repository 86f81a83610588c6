#include "drain/follow_through.h"

#include "drain/page_claim.h"
#include "workers/wake_channel.h"

namespace trellis::drain {
namespace {

constexpr const char* kSavepoint = "trellis_follow";

enum class StepOutcome { kNone, kApplied, kLeft };

struct Step {
  StepOutcome outcome = StepOutcome::kNone;
  PageClaim claim;
  long staged = 0;
  bool staging_left = false;
};

// One followed claim under a new savepoint: claims the oldest page of a
// reader of `followed`, applies it, and stages its writes for its own
// readers. The savepoint and the claim go in one round trip.
Result<Step> FollowOnce(pg::Connection& conn, const std::string& schema,
                        const std::vector<int>& followed, UnitExecutor& executor,
                        const StageOwnWritesFn& stage_own_writes) {
  const ClaimScope scope{{}, followed};
  const std::string savepoint = std::string("SAVEPOINT ") + kSavepoint;
  const std::string claim_sql = ClaimSql(schema, scope);
  auto rows = conn.QueryPipelined(
      {{savepoint, {}, /*prepared=*/false}, {claim_sql, ClaimParams(schema, scope)}});
  if (!rows.ok()) return rows.status();
  auto claim = ReadClaim(rows.value()[1]);
  if (!claim.ok()) return claim.status();
  Step step;
  if (!claim->has_value()) return step;
  step.claim = std::move(**claim);
  step.outcome = StepOutcome::kLeft;
  if (!step.claim.free) return step;
  auto applied = ApplyClaim(conn, schema, step.claim, executor);
  if (!applied.ok()) return applied.status();
  if (applied->outcome != ClaimOutcome::kApplied) return step;
  step.outcome = StepOutcome::kApplied;
  if (step.claim.read_by_others) {
    auto staged = stage_own_writes(conn, schema, applied->transform);
    if (!staged.ok()) return staged.status();
    step.staged = staged.value();
    if (step.staged == 0) {
      // Left to the staging worker, as a drain that does not follow leaves
      // them (drain/drain_page.h): its wake is sent at the commit.
      TRELLIS_RETURN_IF_ERROR(conn.Exec(
          workers::kNotifySql, {workers::WakeChannel(schema, "staging"), workers::WakeSender()}));
      step.staging_left = true;
    }
  }
  return step;
}

}  // namespace

Result<Followed> FollowThrough(pg::Connection& conn, const std::string& schema, int drained_id,
                               UnitExecutor& executor, const StageOwnWritesFn& stage_own_writes) {
  Followed result;
  std::vector<int> followed = {drained_id};
  for (int claims = 0;; ++claims) {
    if (claims == kMaxFollowedClaims) {
      result.pages_left = true;  // perhaps: the next drains look
      return result;
    }
    auto step = FollowOnce(conn, schema, followed, executor, stage_own_writes);
    if (!step.ok() && conn.broken()) return step.status();
    if (!step.ok() || step->outcome == StepOutcome::kLeft) {
      // The pages stay for the next drain, which meets what stopped this.
      TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("ROLLBACK TO SAVEPOINT ") + kSavepoint));
      TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("RELEASE SAVEPOINT ") + kSavepoint));
      result.pages_left = true;
      return result;
    }
    // Nothing claimed: the savepoint goes with the commit, a round trip
    // saved at the end of every followed drain.
    if (step->outcome == StepOutcome::kNone) return result;
    TRELLIS_RETURN_IF_ERROR(conn.Exec(std::string("RELEASE SAVEPOINT ") + kSavepoint));
    result.claims += 1;
    result.pages += step->claim.pages;
    result.keys += step->claim.keys;
    result.staged_own_writes += step->staged;
    result.staging_left = result.staging_left || step->staging_left;
    followed.push_back(step->claim.transform_id);
    // Its writes' capture rows wait for the staging worker: a next drain
    // here would stage them for its own readers, which are not theirs
    // (staging::StageOwnWrites takes every capture row of the transaction).
    if (step->staging_left) return result;
  }
}

}  // namespace trellis::drain
