// A claimed batch drained by rebuilding the whole target (plan/batch_paths.h
// RebuildTargetSql) in the drain's own transaction: the rebuild completes
// the claimed pages and every other page of the transform committed before
// its snapshot (their changes are all in what it read). A rebuild that
// fails falls back to the batch's pages: its one part (Split) is the pages
// unit of the claimed pages, which the executor narrows down to the failing
// keys as it narrows any batch (spec/engine.md "Batch paths"). A batch
// holding a whole page (staging/whole_pages.h) lists no keys to narrow to:
// its fallback queues a rebuild job instead, which the build narrows by key
// ranges as it narrows any build.
#pragma once

#include <string>
#include <vector>

#include "drain/unit.h"
#include "plan/transform_plan.h"

namespace trellis::drain {

class RebuildUnit final : public Unit {
 public:
  // `page_ids`: the claimed pages, a bigint[] literal. `fallback`: the
  // statements that drain them if the rebuild fails (plan::PagesSql).
  // `whole`: a claimed page is whole, so the fallback is a rebuild job.
  // REQUIRES: the caller holds the transform's lock exclusively, so no
  // other drain of the transform writes its target meanwhile.
  RebuildUnit(const plan::TransformPlan& plan, std::string schema, std::string page_ids,
              std::vector<plan::PagesStatement> fallback, bool whole)
      : plan_(plan),
        schema_(std::move(schema)),
        page_ids_(std::move(page_ids)),
        fallback_(std::move(fallback)),
        whole_(whole) {}

  // Failures are the claimed pages', as for any batch.
  std::string_view kind() const override { return "pages"; }
  std::string Describe() const override { return "rebuild for pages " + page_ids_; }
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  Status Complete(pg::Connection& conn) override;
  Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
               const Status& error) override;
  std::vector<std::string> QuarantinedKeys() const override { return quarantined_; }

  // Whether the rebuild itself was applied (else the batch went by its
  // pages, or failed).
  bool rebuilt() const { return rebuilt_; }
  // The pages the rebuild completed (a bigint[] literal): the claimed ones
  // and those it swept. Set once rebuilt().
  const std::string& swept() const { return swept_; }

 private:
  const plan::TransformPlan& plan_;
  std::string schema_;
  std::string page_ids_;
  std::vector<plan::PagesStatement> fallback_;
  bool whole_;
  bool rebuilt_ = false;
  std::string swept_;
  std::vector<std::string> quarantined_;
};

}  // namespace trellis::drain
