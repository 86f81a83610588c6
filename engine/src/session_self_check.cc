// Session's self-check calls: start a job for a named target, read one back.
// The job table is drain/self_check_jobs; the runner that fills it runs in
// the drain workers (drain/self_check_runner.h).
#include "catalog/migrations.h"
#include "drain/self_check_jobs.h"
#include "grammar/address.h"
#include "pg/connection.h"
#include "reads/source_index_gaps.h"
#include "reads/status.h"
#include "trellis/engine.h"

namespace trellis {
namespace {

// Sample bounds: at least one key; at most what one settle step of a job
// re-checks many times over (a bigger sample is a full check).
constexpr int64_t kMaxSampleSize = 1'000'000;

Status ValidateRequest(const SelfCheckRequest& request) {
  if (request.mode == "full") {
    if (request.sample_size) {
      return Status::Validation(
          "sample_size applies to mode :sample only: drop it, or pass mode: :sample");
    }
    return Status::OK();
  }
  if (request.mode == "sample") {
    if (!request.sample_size) {
      return Status::Validation("mode :sample needs sample_size: the number of keys to check");
    }
    if (*request.sample_size < 1 || *request.sample_size > kMaxSampleSize) {
      return Status::Validation("sample_size must be between 1 and " +
                                std::to_string(kMaxSampleSize) +
                                "; for a larger check use mode :full");
    }
    return Status::OK();
  }
  return Status::Validation("mode must be :full or :sample");
}

// A check looks every key it compares up in the sources, as maintenance
// does: where maintenance lacks a source index, so does the check, and a
// full check would then scan the table once per key. Refused unless the
// transform was defined WITHOUT SOURCE INDEX (the owner chose the scans).
Status RefuseIndexGaps(pg::Connection& conn, const std::string& schema, const catalog::Transform& t,
                       const std::string& name) {
  auto gaps = reads::ReadSourceIndexGaps(conn, schema, t);
  if (!gaps.ok()) return gaps.status();
  for (const auto& gap : gaps.value()) {
    if (gap.opted_out) continue;
    return Status::Validation("self-check of " + name +
                              " needs the index its maintenance lacks on " + gap.table +
                              ": create it first (" + gap.fix +
                              "), or define the transform WITHOUT SOURCE INDEX to check it anyway");
  }
  return Status::OK();
}

}  // namespace

Result<SelfCheckJob> Session::StartSelfCheck(const std::string& transform,
                                             const SelfCheckRequest& request) {
  TRELLIS_RETURN_IF_ERROR(ValidateRequest(request));
  auto tx = pg::Transaction::Begin(*conn_);
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto t = reads::LoadNamedTransform(*conn_, options_.schema, transform);
  if (!t.ok()) return t.status();
  const std::string name = grammar::RenderTransformName(t->name());
  TRELLIS_RETURN_IF_ERROR(RefuseIndexGaps(*conn_, options_.schema, t.value(), name));
  auto job = drain::StartSelfCheckJob(*conn_, options_.schema, t->id, name, request);
  if (!job.ok()) return job.status();
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return job;
}

Result<std::optional<SelfCheckJob>> Session::ReadSelfCheckJob(int64_t id) {
  // One snapshot for the job row and its report.
  auto tx = pg::Transaction::Begin(*conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!tx.ok()) return tx.status();
  TRELLIS_RETURN_IF_ERROR(CheckMigrated());
  auto job = drain::ReadSelfCheckJob(*conn_, options_.schema, id);
  if (!job.ok()) return job.status();
  if (job.value()) job.value()->target = grammar::RenderTransformName(job.value()->target);
  TRELLIS_RETURN_IF_ERROR(tx.value()->Commit());
  return job;
}

}  // namespace trellis
