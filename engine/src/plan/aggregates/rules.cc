#include "plan/aggregates/rules.h"

#include <functional>
#include <regex>
#include <utility>

#include "plan/aggregates/recomputed_rule.h"
#include "sql/quote.h"

namespace trellis::plan::aggregates {
namespace {

// True (NULL for NaN and the infinities) when numeric {x} has a display
// scale a kScaled sum keeps by deltas.
std::string ScaleBelowLimit() { return "pg_catalog.scale({x}) < " + std::to_string(kScaleBuckets); }

// Element `i` (1-based) of a kScaled sum's counts plus the delta's (a
// target row's counts are NULL only before a rebuild fills them).
std::string MergedCount(int i) {
  const std::string at = "[" + std::to_string(i) + "]";
  return "coalesce({t}.{h}" + at + ", 0) + coalesce({d}.{h}" + at + ", 0)";
}

// A kScaled sum's counts per display scale plus the delta's, element by
// element. Plain expressions, no subquery: the apply statement evaluates
// it for every changed group, and an unnest of both arrays per group (with
// the display scale's own) cost 191 groups of a numeric sum and avg 15 ms
// of a 38 ms apply (bench/README.md "Batch paths").
std::string MergedScales() {
  std::vector<std::string> elements;
  for (int i = 1; i <= kScaleBuckets + 1; ++i) elements.push_back(MergedCount(i));
  return "ARRAY[" + sql::Join(elements, ", ") + "]::bigint[]";
}

// The display scale a kScaled sum's counts say it has: the largest scale
// with a value (NULL while none). `count(i)` renders element i (1-based:
// scale i - 1).
std::string DisplayScale(const std::function<std::string(int)>& count) {
  std::string out = "(CASE";
  for (int i = kScaleBuckets; i >= 1; --i) {
    out += " WHEN " + count(i) + " <> 0 THEN " + std::to_string(i - 1);
  }
  return out + " END)";
}

// The count of a kScaled sum's values kept apart (NaN, infinities, large
// scales) in `counts`.
std::string KeptApart(const std::string& counts) {
  return counts + "[" + std::to_string(kScaleBuckets + 1) + "]";
}

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
  slots["h"] = sql::Ident(input.state_prefix + std::string(kScalesSuffix));
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
  counter.combine_template = "sum({x})";
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
  // A numeric's running sum leaves out what its scale counts set apart
  // (NaN and the infinities, which no subtraction takes back, and large
  // scales): a group holding one is recomputed.
  const std::string kept =
      input.sum == SumKind::kScaled ? " AND " + Render(ScaleBelowLimit(), {{"x", "{arg}"}}) : "";
  const std::string kept_change =
      input.sum == SumKind::kScaled ? " AND " + Render(ScaleBelowLimit(), {{"x", "{ch_arg}"}}) : "";
  StateColumn sum = Column(input, input.state_prefix + "sum",
                           kept.empty() ? "coalesce(sum({arg}), 0)"
                                        : "coalesce(sum({arg}) FILTER (WHERE true" + kept + "), 0)",
                           "coalesce(sum({ch_arg}) FILTER (WHERE {ch}.sign > 0" + kept_change +
                               "), 0) - "
                               "coalesce(sum({ch_arg}) FILTER (WHERE {ch}.sign < 0" +
                               kept_change + "), 0)",
                           "{t}.{c} + {d}.{c}", "{d}.{c}");
  sum.additive = true;
  sum.combine_template = "sum({x})";
  return sum;
}

// The counts per display scale of a kScaled sum's non-NULL arguments
// (bigint[]: element i + 1 counts scale i, for i < kScaleBuckets; the last
// counts NaN, the infinities and larger scales). Additive element by
// element, so deltas in any order add up; zero when every element is.
StateColumn ScaleCounts(const AggregateInput& input) {
  std::vector<std::string> recompute, delta;
  for (int i = 0; i < kScaleBuckets; ++i) {
    const std::string is = " = " + std::to_string(i) + ")";
    // With a fixed scale the other counts are 0: a recompute reads a
    // group's every source row (a build, a rebuild), and sixteen filtered
    // counts per row made a rebuild 2.5x a REFRESH (bench/README.md "Bulk
    // writes").
    if (input.fixed_scale && *input.fixed_scale != i) {
      recompute.push_back("0");
    } else {
      recompute.push_back("count({arg}) FILTER (WHERE pg_catalog.scale({arg})" + is);
    }
    delta.push_back("coalesce(sum({ch}.sign) FILTER (WHERE pg_catalog.scale({ch_arg})" + is +
                    ", 0)");
  }
  recompute.push_back("count({arg}) FILTER (WHERE NOT coalesce(" +
                      Render(ScaleBelowLimit(), {{"x", "{arg}"}}) + ", false))");
  delta.push_back("coalesce(sum({ch}.sign) FILTER (WHERE {ch_arg} IS NOT NULL AND NOT coalesce(" +
                  Render(ScaleBelowLimit(), {{"x", "{ch_arg}"}}) + ", false)), 0)");
  StateColumn counts =
      Column(input, input.state_prefix + std::string(kScalesSuffix),
             "ARRAY[" + sql::Join(recompute, ", ") + "]::bigint[]",
             "ARRAY[" + sql::Join(delta, ", ") + "]::bigint[]", MergedScales(), "{d}.{c}");
  counts.additive = true;
  std::vector<std::string> combined;
  for (int i = 1; i <= kScaleBuckets + 1; ++i) {
    combined.push_back("coalesce(sum({x}[" + std::to_string(i) + "]), 0)");
  }
  counts.combine_template = "ARRAY[" + sql::Join(combined, ", ") + "]::bigint[]";
  counts.zero_template = "0 = ALL (" + MergedScales() + ")";
  counts.delta_zero_template = "0 = ALL ({d}.{c})";
  return counts;
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

std::string StateColumn::Combine(std::string_view folded) const {
  if (combine_template.empty()) return "";
  Slots with = slots;
  with["x"] = std::string(folded);
  return Render(combine_template, with);
}

std::string StateColumn::IsZero() const {
  return zero_template.empty() ? Render("{t}.{c} + {d}.{c} = 0", slots)
                               : Render(zero_template, slots);
}
std::string StateColumn::DeltaIsZero() const {
  return delta_zero_template.empty() ? Render("{d}.{c} = 0", slots)
                                     : Render(delta_zero_template, slots);
}

SumKind SumKindOf(std::string_view format_type) {
  static const std::regex kExact(R"(smallint|integer|bigint)");
  static const std::regex kScaled(R"(numeric(\(\d+,-?\d+\))?)");
  if (std::regex_match(format_type.begin(), format_type.end(), kExact)) return SumKind::kExact;
  if (std::regex_match(format_type.begin(), format_type.end(), kScaled)) return SumKind::kScaled;
  return SumKind::kRecomputed;
}

std::optional<int> FixedScaleOf(std::string_view format_type) {
  static const std::regex kFixed(R"(numeric\(\d+,(\d+)\))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(format_type.begin(), format_type.end(), m, kFixed)) return std::nullopt;
  const int scale = std::stoi(m[1].str());
  if (scale >= kScaleBuckets) return std::nullopt;
  return scale;
}

AggregateRule CountRule(const AggregateInput& input) {
  if (!input.call.argument) {
    return AggregateRule{Upkeep::kDelta, {Counter(input, input.column, "count(*)", "")}};
  }
  return AggregateRule{Upkeep::kDelta,
                       {Counter(input, input.column, "count({arg})", "{ch_arg} IS NOT NULL")}};
}

namespace {

// sum and avg over a running sum and the non-NULL count: `over` renders the
// visible value from the running sum and the count (slots {sum}, {count}).
// A kScaled sum is rounded to the display scale its counts say (lossless:
// no value has a larger one), and recomputed for a group holding a value
// its counts set apart.
AggregateRule Summed(const AggregateInput& input, const std::string& fn, const std::string& over) {
  std::string update_sum = "{t}.{s} + {d}.{s}";
  std::string insert_sum = "{d}.{s}";
  std::string update_apart, insert_apart;
  if (input.sum == SumKind::kScaled) {
    update_sum = "pg_catalog.round(" + update_sum + ", " + DisplayScale(MergedCount) + ")";
    insert_sum = "pg_catalog.round(" + insert_sum + ", " +
                 DisplayScale([](int i) { return "{d}.{h}[" + std::to_string(i) + "]"; }) + ")";
    update_apart = "coalesce(" + KeptApart("{t}.{h}") + ", 0) + " + KeptApart("{d}.{h}") + " <> 0";
    insert_apart = KeptApart("{d}.{h}") + " <> 0";
  }
  auto visible = [&](const std::string& count, const std::string& sum, const std::string& apart) {
    return "CASE " + (apart.empty() ? "" : "WHEN " + apart + " THEN {recomputed} ") + "WHEN " +
           count + " = 0 THEN NULL ELSE " + Render(over, {{"sum", sum}, {"count", count}}) + " END";
  };
  StateColumn column = Column(input, input.column, fn + "({arg})", "",
                              visible("{t}.{n} + {d}.{n}", update_sum, update_apart),
                              visible("{d}.{n}", insert_sum, insert_apart));
  column.recompute_when_template = update_apart;
  std::vector<StateColumn> columns{std::move(column), RunningSum(input), NonNullCount(input)};
  if (input.sum == SumKind::kScaled) columns.push_back(ScaleCounts(input));
  return AggregateRule{Upkeep::kDelta, std::move(columns)};
}

}  // namespace

AggregateRule SumRule(const AggregateInput& input) {
  if (input.sum == SumKind::kRecomputed) return Recomputed(input, "sum({arg})");
  return Summed(input, "sum", "{sum}");
}

AggregateRule AvgRule(const AggregateInput& input) {
  if (input.sum == SumKind::kRecomputed) return Recomputed(input, "avg({arg})");
  // avg(x) is numeric_div(sum(x), count(x)) in PostgreSQL, digit for digit,
  // for the types kept by deltas (a numeric's sum at its display scale).
  return Summed(input, "avg", "({sum})::numeric / ({count})");
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
  // The most extreme of several folds' most extreme values is the most
  // extreme of all their changes (min ignores a NULL, as the fragment
  // does), so `when` says the same over folded rows as over the row
  // versions they hold (spec/engine.md "Deltas", "Folded delta rows").
  column.combine_template = fn + "({x})";
  column.extreme = true;
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
    case grammar::AggregateFunction::kRecomputed:
      return RecomputedCallRule(input);
  }
  return CountRule(input);
}

StateColumn RowCountColumn() {
  return Counter(AggregateInput{}, std::string(kRowCountColumn), "count(*)", "");
}

}  // namespace trellis::plan::aggregates
