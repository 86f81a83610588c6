#include "catalog/address.h"

#include "catalog/parts.h"
#include "grammar/address.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::catalog {

Result<ResolvedAddress> ResolveAddress(pg::Connection& conn, const std::string& schema,
                                       const std::vector<std::string>& parts, bool lock) {
  for (const auto& reading : grammar::AddressReadings(parts)) {
    auto t = LoadTransform(conn, schema, reading.target.name, lock);
    if (!t.ok()) {
      if (t.status().code() == Code::kNotFound) continue;
      return t.status();
    }
    if (reading.target.schema && *reading.target.schema != t->target_schema) continue;
    TRELLIS_RETURN_IF_ERROR(RefuseHiddenPart(conn, schema, t.value()));
    if (reading.column) {
      bool found = false;
      // A group target's hidden state columns are the engine's, not the user's.
      for (const auto& c : t->columns) {
        found = found || (c.name == *reading.column && c.role != ColumnRole::kHidden);
      }
      if (!found) {
        return Status::NotFound("transform " + sql::Ident(t->name()) + " has no column " +
                                sql::Ident(*reading.column));
      }
    }
    return ResolvedAddress{std::move(t.value()), reading.column};
  }
  std::vector<std::string> shown;
  for (const auto& p : parts) shown.push_back(grammar::RenderName(p));
  return Status::NotFound("no transform named " + sql::Join(shown, "."));
}

}  // namespace trellis::catalog
