// The algebraic rules of the aggregates a group plan keeps (spec/engine.md,
// "Aggregates"): one small function per aggregate, each saying which columns
// the target keeps for it and how each is recomputed from a group's source
// rows, changed by a batch of changes, and set for a new group. Pure: they
// render SQL fragments and touch no database, so they are tested by their
// text (test/engine/group_rules_test.cc).
//
// The fragments name three relations, by aliases a definition cannot use
// (define refuses names starting with kHiddenPrefix), so that a user's
// expression inside a fragment never resolves to one of them:
//   ch  (kChangeAlias) one row per changed source row version that passes
//       the WHERE, with `sign` (+1 for a new version, -1 for an old one) and
//       the aggregate's argument evaluated on that version;
//   d   (kDeltaAlias) one row per group: the changes of `ch` folded by the
//       `delta` fragments, one column per state column that has one;
//   t   (kTargetAlias) the group's current target row.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ast.h"
#include "plan/template.h"

namespace trellis::plan::aggregates {

// How the target keeps an aggregate column as the source changes.
enum class Upkeep {
  // From the changes alone: count; sum and avg over exact types; bool_and,
  // bool_or (kept as counts).
  kDelta,
  // min and max: the value stays unless a change reaches the group's
  // extreme (or the group is new); then it is recomputed from the source.
  kExtreme,
  // Recomputed from the source for every group a change touches: sum and avg
  // over types whose sums are not exact (float, numeric without a scale).
  kRecompute,
};

// One column the target keeps for an aggregate: the visible column, or a
// hidden state column it is computed from. Its fragments are templates
// whose slots (`slots`: names, the user's argument) are filled in one pass
// when rendered, so no text a user wrote is ever scanned for slots.
struct StateColumn {
  std::string name;  // unquoted target column name
  Slots slots;
  std::string recompute_template;  // an aggregate over the group's source rows
  std::string delta_template;      // over `ch`, folded per group; empty when none
  std::string update_template;     // the new value, from `t` and `d`
  std::string insert_template;     // the value for a new group, from `d`
  // True for a count or running sum kept by deltas: 0 for a group with no
  // rows. A group is deleted only when its row count and every additive
  // column are 0, so that no state is lost while out-of-order changes
  // are in flight.
  bool additive = false;
  // For a column whose update may take its recomputed value: SQL over `t`
  // and `d`, true when it does (a min/max: a change reaches the extreme; a
  // recomputed column: always). Empty for a column kept by deltas alone.
  // ApplyDeltasSql recomputes exactly the groups for which some column's
  // condition holds, in one pass over them.
  std::string recompute_when_template;
  // A min or max: one index entry answers its recompute when an index leads
  // with the group's columns and then its argument (FlaggedGroupsSql).
  bool extreme = false;
  // How deltas of this column folded apart combine into the delta of all
  // their changes: an aggregate over `{x}`, the column in several folded
  // rows of one group (`sum({x})` for a count or running sum, element by
  // element for a count per display scale, `min({x})` / `max({x})` for a
  // min / max, whose delta is the most extreme changed value). It must
  // satisfy Delta(A and B) = Combine(Delta(A), Delta(B)) for any split of
  // a group's change rows into A and B: folded delta rows (plan/group_deltas.h) rely on
  // it. Empty for a column with no delta fragment; a plan folds its deltas
  // at staging only when every column with one has a combiner.
  std::string combine_template;
  // For an additive column that is not one number (a count per display
  // scale): SQL over `t` and `d`, true when the column plus the delta is
  // all zeros, and over `d`, true when the delta is. Empty: `= 0`.
  std::string zero_template;
  std::string delta_zero_template;

  // The rendered fragments. `recomputed` is the column's recompute as a
  // scalar subquery over the group's source rows (kExtreme and kRecompute
  // columns use it).
  std::string Recompute() const;
  std::string Delta() const;
  std::string Update(std::string_view recomputed) const;
  std::string Insert(std::string_view recomputed) const;
  std::string RecomputeWhen() const;  // "" when the column is never recomputed
  // The combiner over `folded` (SQL: the column of folded rows); "" when
  // the column's deltas do not fold.
  std::string Combine(std::string_view folded) const;
  // For an additive column: SQL true when the target's value plus the
  // delta's is zero, and when the delta's is (a group all of whose additive
  // columns reach zero is deleted; one whose deltas are all zero is not new).
  std::string IsZero() const;
  std::string DeltaIsZero() const;
};

// How a sum or avg keeps its running sum, from its argument's type
// (spec/engine.md "Deltas", "Exact sums").
enum class SumKind {
  // Recomputed per changed group: floats, whose sums depend on the order of
  // additions, and every type not below.
  kRecomputed,
  // smallint, integer, bigint: a running sum, exact as it stands (bigint's
  // is numeric with scale 0, as sum(bigint) is).
  kExact,
  // numeric, any typmod: a running sum of the finite values and a count of
  // values per display scale. sum(numeric) shows the largest display scale
  // of the group's values, which a subtraction cannot take back; the
  // counts say what it is now, and the sum is rounded to it (losslessly:
  // every value has at most that scale). NaN, the infinities and scales of
  // kScaleBuckets or more are counted apart, and a group holding one is
  // recomputed.
  kScaled,
};
inline constexpr int kScaleBuckets = 16;

struct AggregateRule {
  Upkeep upkeep = Upkeep::kDelta;
  std::vector<StateColumn> columns;  // the visible column first, then hidden state
};

// What a rule needs to know about one aggregate column.
struct AggregateInput {
  grammar::AggregateCall call;
  std::string column;             // visible target column, unquoted
  std::string state_prefix;       // prefix of its hidden columns, unquoted ("__trellis_3_")
  std::string argument;           // the argument over a source row (`call.argument`)
  std::string change_argument;    // the argument in `ch` (`ch."a3"`)
  SumKind sum = SumKind::kExact;  // for sum and avg: how their running sum is kept
  // For a column in quarantine (spec/engine.md "Charging a failure"): SQL
  // true for the groups recorded for it, over a source row and over a group
  // alike (the group's key as text[] IN the recorded keys). `argument` is
  // then already guarded by it, so no recorded group evaluates it, and the
  // visible column is NULL for those groups. Empty when the column is live.
  std::string quarantined;
  // For a kScaled sum whose argument's type fixes its scale (numeric(p,s)):
  // s. Every finite value then has display scale s, so a recompute counts
  // only that scale and the last bucket (FixedScaleOf).
  std::optional<int> fixed_scale;
};

// The SumKind of a sum or avg over an argument of type `format_type`
// (PostgreSQL's format_type() text: "integer", "numeric(12,2)").
SumKind SumKindOf(std::string_view format_type);

// The display scale every finite value of type `format_type` has, when the
// type fixes one below kScaleBuckets ("numeric(12,2)": 2); nullopt for any
// other type. PostgreSQL rounds every value to a numeric's declared scale
// and reports a typmod for an expression only when its values conform.
std::optional<int> FixedScaleOf(std::string_view format_type);

// The name of the hidden count per display scale of a kScaled sum.
inline constexpr std::string_view kScalesSuffix = "scales";

// The rule for `input.call.function`.
AggregateRule RuleFor(const AggregateInput& input);

// One function per aggregate; RuleFor picks among them.
AggregateRule CountRule(const AggregateInput& input);
AggregateRule SumRule(const AggregateInput& input);
AggregateRule AvgRule(const AggregateInput& input);
AggregateRule ExtremeRule(const AggregateInput& input);  // min, max
AggregateRule BoolRule(const AggregateInput& input);     // bool_and, bool_or

// The hidden count of source rows in each group: a group whose count
// reaches 0 has lost its last row and is deleted (unless the transform has
// no GROUP BY). Also the hidden count a SELECT DISTINCT keeps.
StateColumn RowCountColumn();

// The name of the hidden row count column.
inline constexpr std::string_view kRowCountColumn = "__trellis_rows";

// Hidden columns and the engine's aliases start with this; a definition may
// not name a column or alias so.
inline constexpr std::string_view kHiddenPrefix = grammar::kReservedPrefix;
inline constexpr std::string_view kTargetAlias = "__trellis_t";
inline constexpr std::string_view kDeltaAlias = "__trellis_d";
inline constexpr std::string_view kChangeAlias = "__trellis_ch";

}  // namespace trellis::plan::aggregates
