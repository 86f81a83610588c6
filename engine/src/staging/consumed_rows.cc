#include "staging/consumed_rows.h"

#include "capture/relations.h"
#include "capture/routing.h"

namespace trellis::staging {

std::string ConsumedColumnsSql(const std::string& schema, const std::string& alias, bool deltas) {
  const std::string member =
      deltas ? capture::CapturedUnderSourceSql(schema, alias) : std::string("NULL::boolean");
  return "ctid AS id, source_id, op, xid, routing, " + std::string(capture::kRoutingWidthSql) +
         " AS width, " + std::string(capture::kRoutingVersionsSql) + " AS versions, " + member +
         " AS member";
}

}  // namespace trellis::staging
