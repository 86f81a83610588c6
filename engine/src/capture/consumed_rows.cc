#include "capture/consumed_rows.h"

#include "capture/relations.h"
#include "capture/routing.h"

namespace trellis::capture {

std::string ConsumedColumnsSql(const std::string& schema, const std::string& alias, bool member) {
  const std::string is_member =
      member ? CapturedUnderSourceSql(schema, alias) : std::string("NULL::boolean");
  return "ctid AS id, source_id, op, xid, routing, " + std::string(kRoutingWidthSql) +
         " AS width, " + std::string(kRoutingVersionsSql) + " AS versions, " + is_member +
         " AS member";
}

}  // namespace trellis::capture
