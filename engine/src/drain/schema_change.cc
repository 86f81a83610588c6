#include "drain/schema_change.h"

#include <array>

#include "catalog/address.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "log/component_log.h"
#include "sql/quote.h"

namespace trellis::drain {

bool IsSchemaChange(const Status& error) {
  static constexpr std::array<std::string_view, 6> kCodes = {
      "42703",  // undefined_column
      "42P01",  // undefined_table
      "42883",  // undefined_function
      "42804",  // datatype_mismatch
      "42846",  // cannot_coerce
      "42704",  // undefined_object (a type, say)
  };
  if (!error.sqlstate) return false;
  for (auto code : kCodes) {
    if (*error.sqlstate == code) return true;
  }
  return false;
}

Status PauseForSchemaChange(pg::Connection& conn, const std::string& schema,
                            const catalog::Transform& t, const Status& error) {
  static const auto logger = log::Component("trellis::drain");
  logger->warn("transform {} paused: its source or target no longer matches it ({})",
               catalog::LogNameOf(conn, schema, t).label, error.message());
  const std::string name = grammar::RenderName(t.name());
  return catalog::Pause(
      conn, schema, t.id, PauseKind::kSchemaChange,
      "the source or target no longer matches the definition: " + error.message() +
          ". Change the table back, or ALTER TRANSFORM " + name +
          " to match it; RESUME TRANSFORM " + name + " then rebuilds the target");
}

}  // namespace trellis::drain
