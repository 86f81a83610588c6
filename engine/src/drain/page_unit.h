// Drain units: ledger pages of one transform, and the explicit key sets a
// failing page is cut into while the executor narrows a data error. Pages
// carry unit keys (plan::PlanTarget::unit_key) in the form of
// sql/key_text.h; recomputing a unit replaces every target row under it.
#pragma once

#include <string>
#include <vector>

#include "drain/unit.h"
#include "plan/transform_plan.h"

namespace trellis::drain {

class PagesUnit final : public Unit {
 public:
  // `page_ids`: a bigint[] literal. `statements`: what drains them, each
  // taking $1 only (plan/batch_paths.h PagesSql: the batch's path); the
  // plan's default drain (MaintainPlan::ApplyPagesSql) when empty.
  PagesUnit(const plan::TransformPlan& plan, std::string schema, std::string page_ids,
            std::vector<plan::PagesStatement> statements = {})
      : plan_(plan),
        schema_(std::move(schema)),
        page_ids_(std::move(page_ids)),
        statements_(statements.empty() ? plan.ApplyPagesSql() : std::move(statements)) {}

  std::string_view kind() const override { return "pages"; }
  std::string Describe() const override { return "pages " + page_ids_; }
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  Status Complete(pg::Connection& conn) override;
  Status Defer(pg::Connection& conn, const std::vector<const Unit*>& failed,
               const Status& error) override;
  // Found by Complete.
  std::vector<std::string> QuarantinedKeys() const override { return quarantined_; }

 private:
  const plan::TransformPlan& plan_;
  std::string schema_;
  std::string page_ids_;
  std::vector<plan::PagesStatement> statements_;
  std::vector<std::string> quarantined_;
};

// Unit keys given explicitly, each a key literal (sql::KeyLiteral).
class KeysUnit final : public Unit {
 public:
  KeysUnit(const plan::TransformPlan& plan, std::vector<std::string> keys)
      : plan_(plan), keys_(std::move(keys)) {}

  std::string_view kind() const override { return "pages"; }
  std::string Describe() const override;
  Result<long> Apply(pg::Connection& conn) override;
  Result<std::vector<std::unique_ptr<Unit>>> Split(pg::Connection& conn) override;
  // A part of a PagesUnit: the pages are its queue.
  Status Complete(pg::Connection&) override { return Status::OK(); }
  Status Defer(pg::Connection&, const std::vector<const Unit*>&, const Status&) override {
    return Status::OK();
  }
  Result<std::optional<std::string>> OneKey(pg::Connection&) const override;
  std::unique_ptr<Unit> Rebound(const plan::TransformPlan& plan) const override {
    return std::make_unique<KeysUnit>(plan, keys_);
  }

 private:
  const plan::TransformPlan& plan_;
  std::vector<std::string> keys_;
};

// Two halves of `keys`, as KeysUnits; empty for a single key.
std::vector<std::unique_ptr<Unit>> HalveKeys(const plan::TransformPlan& plan,
                                             const std::vector<std::string>& keys);

// The parts a unit over `keys` is cut into when it fails: their halves, or
// for one key that key alone, so the failure is charged to it; none for
// no key.
std::vector<std::unique_ptr<Unit>> CutIntoKeys(const plan::TransformPlan& plan,
                                               std::vector<std::string> keys);

}  // namespace trellis::drain
