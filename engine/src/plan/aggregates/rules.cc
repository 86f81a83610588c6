#include "plan/aggregates/rules.h"

#include <regex>
#include <utility>

#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

// The slots of one aggregate's fragments: {t}, {d}, {ch} the relations'
// aliases, {v} the visible column, {arg} the argument over a source row,
// {ch_arg} the argument in `ch`, and the hidden columns {n} (non-NULL count)
// and {s} (sum), quoted.
Slots SlotsFor(const AggregateInput& input) {
  Slots slots = {
      {"t", std::string(kTargetAlias)},
      {"d", std::string(kDeltaAlias)},
      {"ch", std::string(kChangeAlias)},
  };
  if (input.column.empty()) return slots;  // the row count: no aggregate
  slots["v"] = sql::Ident(input.column);
  slots["arg"] = "(" + input.argument + ")";
  slots["ch_arg"] = input.change_argument;
  slots["n"] = sql::Ident(input.state_prefix + "n");
  slots["s"] = sql::Ident(input.state_prefix + "sum");
  return slots;
}

// A column whose own name is the slot {c}.
StateColumn Column(const AggregateInput& input, std::string name, std::string recompute,
                   std::string delta, std::string update, std::string insert) {
  Slots slots = SlotsFor(input);
  slots["c"] = sql::Ident(name);
  StateColumn column;
  column.name = std::move(name);
  column.slots = std::move(slots);
  column.recompute_template = std::move(recompute);
  column.delta_template = std::move(delta);
  column.update_template = std::move(update);
  column.insert_template = std::move(insert);
  return column;
}

// A signed count of the change rows for which `filter` holds (every change
// row when `filter` is empty). Counts are bigint, as count() gives them.
StateColumn Counter(const AggregateInput& input, std::string name, std::string recompute,
                    const std::string& filter) {
  StateColumn counter =
      Column(input, std::move(name), std::move(recompute),
             filter.empty() ? "sum({ch}.sign)::bigint"
                            : "coalesce(sum({ch}.sign) FILTER (WHERE " + filter + "), 0)::bigint",
             "{t}.{c} + {d}.{c}", "{d}.{c}");
  counter.additive = true;
  return counter;
}

// The count of non-NULL arguments: what says whether sum, avg, bool_and and
// bool_or are NULL (SQL: over no non-NULL value they are).
StateColumn NonNullCount(const AggregateInput& input) {
  return Counter(input, input.state_prefix + "n", "count({arg})", "{ch_arg} IS NOT NULL");
}

// The running sum of the arguments, kept by deltas. It is never NULL: the
// visible sum is NULL while the non-NULL count {n} is 0, but the state must
// keep adding up, since changes may arrive out of order and pass through
// states no real table had.
StateColumn RunningSum(const AggregateInput& input) {
  StateColumn sum = Column(input, input.state_prefix + "sum", "coalesce(sum({arg}), 0)",
                           "coalesce(sum({ch_arg}) FILTER (WHERE {ch}.sign > 0), 0) - "
                           "coalesce(sum({ch_arg}) FILTER (WHERE {ch}.sign < 0), 0)",
                           "{t}.{c} + {d}.{c}", "{d}.{c}");
  sum.additive = true;
  return sum;
}

// A column recomputed from the source for every group a change touches.
AggregateRule Recomputed(const AggregateInput& input, std::string recompute) {
  StateColumn column =
      Column(input, input.column, std::move(recompute), "", "{recomputed}", "{recomputed}");
  column.recompute_when_template = "true";
  return AggregateRule{Upkeep::kRecompute, {std::move(column)}};
}

std::string Fill(std::string_view text, const Slots& slots, std::string_view recomputed) {
  if (recomputed.empty()) return Render(text, slots);
  Slots with = slots;
  with["recomputed"] = std::string(recomputed);
  return Render(text, with);
}

}  // namespace

std::string StateColumn::Recompute() const { return Render(recompute_template, slots); }
std::string StateColumn::Delta() const { return Render(delta_template, slots); }
std::string StateColumn::Update(std::string_view recomputed) const {
  return Fill(update_template, slots, recomputed);
}
std::string StateColumn::Insert(std::string_view recomputed) const {
  return Fill(insert_template, slots, recomputed);
}
std::string StateColumn::RecomputeWhen() const {
  return recompute_when_template.empty() ? "" : Render(recompute_when_template, slots);
}

bool SumsExactly(std::string_view format_type) {
  static const std::regex kExact(R"((smallint|integer|bigint|numeric\(\d+,\d+\)))");
  return std::regex_match(format_type.begin(), format_type.end(), kExact);
}

AggregateRule CountRule(const AggregateInput& input) {
  if (!input.call.argument) {
    return AggregateRule{Upkeep::kDelta, {Counter(input, input.column, "count(*)", "")}};
  }
  return AggregateRule{Upkeep::kDelta,
                       {Counter(input, input.column, "count({arg})", "{ch_arg} IS NOT NULL")}};
}

AggregateRule SumRule(const AggregateInput& input) {
  if (!input.sums_exactly) return Recomputed(input, "sum({arg})");
  StateColumn visible =
      Column(input, input.column, "sum({arg})", "",
             "CASE WHEN {t}.{n} + {d}.{n} = 0 THEN NULL ELSE {t}.{s} + {d}.{s} END",
             "CASE WHEN {d}.{n} = 0 THEN NULL ELSE {d}.{s} END");
  return AggregateRule{Upkeep::kDelta,
                       {std::move(visible), RunningSum(input), NonNullCount(input)}};
}

AggregateRule AvgRule(const AggregateInput& input) {
  if (!input.sums_exactly) return Recomputed(input, "avg({arg})");
  // avg(x) is sum(x)::numeric / count(x) in PostgreSQL, digit for digit, for
  // the types SumsExactly accepts.
  StateColumn visible =
      Column(input, input.column, "avg({arg})", "",
             "CASE WHEN {t}.{n} + {d}.{n} = 0 THEN NULL "
             "ELSE ({t}.{s} + {d}.{s})::numeric / ({t}.{n} + {d}.{n}) END",
             "CASE WHEN {d}.{n} = 0 THEN NULL ELSE {d}.{s}::numeric / {d}.{n} END");
  return AggregateRule{Upkeep::kDelta,
                       {std::move(visible), RunningSum(input), NonNullCount(input)}};
}

AggregateRule ExtremeRule(const AggregateInput& input) {
  const bool min = input.call.function == grammar::AggregateFunction::kMin;
  const std::string fn = min ? "min" : "max";
  const std::string reaches = min ? " <= " : " >= ";
  // d.v is the most extreme argument among the changes, old and new
  // versions alike. The changes of one group may be applied in any order
  // (staging batches them as they come), so a change is applied by looking
  // at the source again whenever it could move the extreme: an old version
  // at or beyond it may have been the extreme; a new one beyond it may be
  // the new extreme, or may already be gone again.
  const std::string when =
      "{d}.{v} IS NOT NULL AND ({t}.{v} IS NULL OR {d}.{v}" + reaches + "{t}.{v})";
  StateColumn column =
      Column(input, input.column, fn + "({arg})", fn + "({ch_arg})",
             "CASE WHEN " + when + " THEN {recomputed} ELSE {t}.{v} END", "{recomputed}");
  column.recompute_when_template = when;
  return AggregateRule{Upkeep::kExtreme, {std::move(column)}};
}

AggregateRule BoolRule(const AggregateInput& input) {
  const bool all = input.call.function == grammar::AggregateFunction::kBoolAnd;
  // bool_and is "no false among the non-NULL values", bool_or "some true":
  // both are kept as a count of the deciding value, {w}.
  const std::string truth = all ? "FALSE" : "TRUE";
  const std::string test = all ? " = 0" : " > 0";
  StateColumn counted =
      Counter(input, input.state_prefix + (all ? "false" : "true"),
              "count(*) FILTER (WHERE {arg} IS " + truth + ")", "{ch_arg} IS " + truth);
  StateColumn visible =
      Column(input, input.column, std::string(all ? "bool_and" : "bool_or") + "({arg})", "",
             "CASE WHEN {t}.{n} + {d}.{n} = 0 THEN NULL ELSE {t}.{w} + {d}.{w}" + test + " END",
             "CASE WHEN {d}.{n} = 0 THEN NULL ELSE {d}.{w}" + test + " END");
  visible.slots["w"] = sql::Ident(counted.name);
  return AggregateRule{Upkeep::kDelta,
                       {std::move(visible), std::move(counted), NonNullCount(input)}};
}

AggregateRule RuleFor(const AggregateInput& input) {
  switch (input.call.function) {
    case grammar::AggregateFunction::kCount:
      return CountRule(input);
    case grammar::AggregateFunction::kSum:
      return SumRule(input);
    case grammar::AggregateFunction::kAvg:
      return AvgRule(input);
    case grammar::AggregateFunction::kMin:
    case grammar::AggregateFunction::kMax:
      return ExtremeRule(input);
    case grammar::AggregateFunction::kBoolAnd:
    case grammar::AggregateFunction::kBoolOr:
      return BoolRule(input);
  }
  return CountRule(input);
}

StateColumn RowCountColumn() {
  return Counter(AggregateInput{}, std::string(kRowCountColumn), "count(*)", "");
}

}  // namespace trellis::plan::aggregates
