#include "reads/source_index_gaps.h"

#include "plan/bind.h"

namespace trellis::reads {

Result<std::vector<SourceIndexGapStatus>> ReadSourceIndexGaps(pg::Connection& conn,
                                                              const std::string& schema,
                                                              const catalog::Transform& t) {
  auto plan = plan::Bind(t, schema);
  if (!plan.ok()) return plan.status();
  const plan::CheckPlan& check = *plan.value();
  return check.SourceIndexGaps(conn, t);
}

}  // namespace trellis::reads
