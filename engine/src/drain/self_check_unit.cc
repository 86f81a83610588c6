#include "drain/self_check_unit.h"

#include "sql/key_text.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::drain {

std::string SelfCheckRangeUnit::Describe() const {
  return "key range (" + range_.lo.value_or("start") + ", " + range_.hi.value_or("end") + "]";
}

Result<long> SelfCheckRangeUnit::Apply(pg::Connection& conn) {
  const plan::Bound compare = statements_.CompareRange(range_);
  auto compared = conn.QueryPrepared(compare.text, compare.params);
  if (!compared.ok()) return compared.status();
  for (auto& key : sql::ParseKeyList(compared->text(0, 1))) {
    findings_.candidates.insert(std::move(key));
  }
  sql::RowReader row(compared.value(), 0);
  const long rows = row.Int64(0);
  if (!row.status().ok()) return row.status();
  return rows;
}

Result<std::vector<std::unique_ptr<Unit>>> SelfCheckRangeUnit::Split(pg::Connection& conn) {
  std::vector<std::unique_ptr<Unit>> out;
  const plan::RangePlan* ranges = plan_.Ranges();
  if (!ranges) return out;  // checked as one range: never cut
  const plan::Bound middle = ranges->MiddleKey(range_);
  auto found = conn.Query(middle.text, middle.params);
  if (!found.ok()) return found.status();
  if (found->empty()) return out;
  for (auto range :
       {plan::KeyRange{range_.lo, found->at(0, 0)}, plan::KeyRange{found->at(0, 0), range_.hi}}) {
    out.push_back(
        std::make_unique<SelfCheckRangeUnit>(plan_, statements_, std::move(range), findings_));
  }
  return out;
}

Status SelfCheckRangeUnit::Defer(pg::Connection&, const std::vector<const Unit*>& failed,
                                 const Status& error) {
  for (const Unit* part : failed) {
    findings_.failed_ranges.push_back(part->Describe() + ": " + error.message());
  }
  return Status::OK();
}

}  // namespace trellis::drain
