#include "capture/attachment.h"

namespace trellis::capture {

std::string AttachmentSql(const std::string& link) {
  // f: the latest xid below xmax whose low 32 bits are the row's xmin (the
  // double modulo keeps it non-negative when xmax is below 2^32). A value
  // below 0 names no transaction and is its own identity.
  return "(SELECT CASE WHEN a.f >= 0 AND pg_catalog.pg_xact_status(a.f::text::pg_catalog.xid8) "
         "= 'in progress' THEN a.f - 4294967296 ELSE a.f END FROM (SELECT x.m - 1 - "
         "((x.m - 1 - " +
         link +
         ".xmin::text::bigint) % 4294967296 + 4294967296) % 4294967296 AS f FROM (SELECT "
         "pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint AS m) x) "
         "a)";
}

}  // namespace trellis::capture
