#include "drain/schema_change.h"

#include <array>

#include "catalog/address.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "log/component_log.h"
#include "plan/aggregate_stages_define.h"
#include "sql/quote.h"

namespace trellis::drain {
namespace {

// What the pause's reason tells the user to do, about the transform they
// address: a hidden stage's owner, by the owner's name. ALTER is offered
// only where ALTER TRANSFORM accepts the transform; one compiled into
// stages is defined again instead. Never fails: an owner that cannot be
// read leaves the stage's own name and the advice without ALTER.
std::string Advice(pg::Connection& conn, const std::string& schema, const catalog::Transform& t) {
  std::string name = t.name();
  std::string definition = t.definition;
  bool known = true;
  if (catalog::IsHiddenPart(t)) {
    auto owner = catalog::LoadTransformById(conn, schema, *t.owner_id);
    known = owner.ok();
    if (known) {
      name = owner->name();
      definition = owner->definition;
    }
  }
  const std::string rendered = grammar::RenderName(name);
  if (known && plan::RefuseAlterOfStages(name, definition).ok()) {
    return "Change the table back, or ALTER TRANSFORM " + rendered +
           " to match it; RESUME TRANSFORM " + rendered + " then rebuilds the target";
  }
  return "Change the table back and RESUME TRANSFORM " + rendered +
         ", which rebuilds the target; or DROP TRANSFORM " + rendered +
         " and define it again to match the table (ALTER TRANSFORM does not change a "
         "transform compiled into stages)";
}

}  // namespace

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
  return catalog::Pause(conn, schema, t.id, PauseKind::kSchemaChange,
                        "the source or target no longer matches the definition: " +
                            error.message() + ". " + Advice(conn, schema, t));
}

}  // namespace trellis::drain
