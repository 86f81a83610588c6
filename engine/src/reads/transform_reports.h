// The transform reports (trellis/transform_reports.h): every transform's
// status/2, reduced to the numbers an operator alerts on, and the latest
// finished self-check of each.
#pragma once

#include <string>
#include <vector>

#include "pg/connection.h"
#include "trellis/status.h"
#include "trellis/transform_reports.h"

namespace trellis::reads {

// One report per transform a user defined (a grouped join's hidden part is
// folded into its group, as status/2 folds it), by name. Each transform is
// read as ReadStatus reads it, in a transaction of its own; one dropped
// meanwhile is left out. REQUIRES: `conn` is in no transaction.
Result<std::vector<TransformReport>> ReadTransformReports(pg::Connection& conn,
                                                          const std::string& schema);

// Reads the reports and publishes them (TransformReports::Get()), and makes
// every transform's failure counters exist (ChargingMetrics::Know).
Status PublishTransformReports(pg::Connection& conn, const std::string& schema);

}  // namespace trellis::reads
