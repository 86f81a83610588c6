#include "plan/aggregates/recomputed_rule.h"

#include <string>

#include "grammar/aggregate.h"
#include "grammar/distinct_on.h"

namespace trellis::plan::aggregates {

AggregateRule RecomputedCallRule(const AggregateInput& input) {
  StateColumn column;
  column.name = input.column;
  // The call is a slot, so no text the user wrote is scanned for slots.
  column.slots = {
      {"call", grammar::CallName(input.call) + "(" + input.call.argument.value_or("") + ")"}};
  column.recompute_template = "{call}";
  if (!input.quarantined.empty()) {
    column.slots["skipped"] = input.quarantined;
    column.recompute_template = "{call} FILTER (WHERE NOT coalesce({skipped}, false))";
  }
  // A DISTINCT ON column: the first row's value by the ORDER BY, the
  // first element of an ordered array_agg (a FILTER goes on the aggregate).
  if (input.call.name == grammar::kFirstByOrder) {
    column.slots = {{"argument", input.call.argument.value_or("")}};
    column.recompute_template = grammar::FirstByOrderSql("{argument}");
    if (!input.quarantined.empty()) {
      column.slots["skipped"] = input.quarantined;
      column.recompute_template =
          grammar::FirstByOrderSql("{argument}", "FILTER (WHERE NOT coalesce({skipped}, false))");
    }
  }
  column.update_template = "{recomputed}";
  column.insert_template = "{recomputed}";
  column.recompute_when_template = "true";
  return AggregateRule{Upkeep::kRecompute, {std::move(column)}};
}

}  // namespace trellis::plan::aggregates
