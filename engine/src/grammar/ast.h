// The statement AST of Trellis's grammar (spec/grammar.md). Plain values:
// copyable, comparable, and safe to share between threads once built.
//
// Every name is held unquoted, exactly as PostgreSQL would store it (plain
// identifiers folded to lower case, quoted ones kept as written). Code that
// puts a name into SQL must quote it (grammar/quote.h). Expressions are held
// as the exact source text the user wrote; PostgreSQL validates them when the
// transform is defined.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace trellis::grammar {

// A table name, optionally schema-qualified: `schema.table` or `table`.
struct QualifiedName {
  std::optional<std::string> schema;
  std::string name;

  bool operator==(const QualifiedName&) const = default;
};

// A table in FROM or JOIN with the alias it was given, if any.
struct TableRef {
  QualifiedName table;
  std::optional<std::string> alias;

  // The name columns of this table are qualified with: the alias if there is
  // one, else the bare table name.
  const std::string& Qualifier() const { return alias ? *alias : table.name; }

  bool operator==(const TableRef&) const = default;
};

// INNER JOIN (the default), LEFT, RIGHT or FULL [OUTER] JOIN.
enum class JoinKind { kInner, kLeft, kRight, kFull };

// The join's keywords with a space either side: " JOIN ", " LEFT JOIN ",
// " RIGHT JOIN ", " FULL JOIN ".
inline const char* JoinKeyword(JoinKind kind) {
  switch (kind) {
    case JoinKind::kInner:
      return " JOIN ";
    case JoinKind::kLeft:
      return " LEFT JOIN ";
    case JoinKind::kRight:
      return " RIGHT JOIN ";
    case JoinKind::kFull:
      return " FULL JOIN ";
  }
  return " JOIN ";
}

// `[INNER | LEFT | RIGHT | FULL] JOIN table [AS alias] ON x.a = j.b AND ...`: the joined
// table matched to ONE earlier table of the statement (the FROM table or a
// table joined before it), whose qualifier is `to`. Each pair of `on` is
// (column of `to`, column of the joined table), whatever order the equality
// was written in.
struct JoinClause {
  JoinKind kind = JoinKind::kInner;
  TableRef table;
  std::string to;
  std::vector<std::pair<std::string, std::string>> on;

  bool operator==(const JoinClause&) const = default;
};

// The aggregate functions a GROUP BY transform maintains (spec/grammar.md,
// "Aggregates"). `every` is SQL's name for bool_and and reads as kBoolAnd.
// kRecomputed is any aggregate kept by recomputing its group
// (grammar/recomputed_aggregate.h: string_agg, bit_or, stddev, ...).
enum class AggregateFunction { kCount, kSum, kAvg, kMin, kMax, kBoolAnd, kBoolOr, kRecomputed };

// A SELECT item that is one aggregate call and nothing else, such as
// `sum(o.amount)`. `argument` is the exact text between the parentheses
// (without a leading ALL or DISTINCT); it is empty for `count(*)`.
// `distinct` is set for `count(DISTINCT x)`, `sum(DISTINCT x)` and
// `avg(DISTINCT x)`: a statement with one is compiled into stages
// (plan/distinct_aggregate_stages.h). For kRecomputed, `name` is the
// function's name ("string_agg") and `argument` all the text between the
// parentheses, a DISTINCT and an ORDER BY included, passed on as written
// (grammar/recomputed_aggregate.h); `distinct` stays false.
struct AggregateCall {
  AggregateFunction function = AggregateFunction::kCount;
  std::optional<std::string> argument;
  bool distinct = false;
  std::string name;

  bool operator==(const AggregateCall&) const = default;
};

// One aggregate call written inside an expression (a SELECT item or
// HAVING): the call, and the bytes [begin, end) it covers in the
// expression's text, from its name (or its qualifier, `pg_catalog.sum`) to
// its closing parenthesis. A statement that computes over aggregates is
// compiled into stages by rewriting these spans (plan/aggregate_stages.h).
struct AggregateUse {
  AggregateCall call;
  std::size_t begin = 0;
  std::size_t end = 0;

  bool operator==(const AggregateUse&) const = default;
};

// `expr AS alias`, or a bare column reference named after its column.
// `position` is the byte offset of the expression in the statement it was
// parsed from, for error messages at define time. `aggregate` is set when the
// expression is one aggregate call; `aggregate_uses` lists every aggregate
// call in it, in the order written (the one call, for such an item). Both
// are derived from `expr`.
struct SelectItem {
  std::string expr;
  std::string alias;
  std::size_t position = 0;
  std::optional<AggregateCall> aggregate;
  std::vector<AggregateUse> aggregate_uses;

  // An expression over aggregates (`sum(a) / count(*)`), not one call alone.
  bool ComputesOverAggregates() const { return !aggregate && !aggregate_uses.empty(); }

  // Equality compares the definition, not where it was written: the same item
  // parsed from two differently formatted statements is equal.
  bool operator==(const SelectItem& other) const {
    return expr == other.expr && alias == other.alias && aggregate == other.aggregate;
  }
};

// How a subquery is used in WHERE (spec/grammar.md, "Subqueries in WHERE").
enum class SubqueryUse { kExists, kNotExists, kIn, kNotIn, kCompare };

// One equality of a subquery's WHERE that ties it to the statement around
// it, `inner = q.outer_column` in either order, with q the subquery's
// `outer` table; or, for IN, the tested column and the value selected.
struct Correlation {
  std::string outer_column;  // a column of the statement's table `outer`
  std::string inner;         // the subquery's side, as written

  bool operator==(const Correlation&) const = default;
};

struct TransformStmt;

// The prefix of every name Trellis gives (a hidden stage's target, a hidden
// column, the engine's aliases). A definition may not use it, so no name a
// user gives starts with it.
inline constexpr std::string_view kReservedPrefix = "__trellis_";

// The alias a subquery with a query of its own (WhereSubquery::body) reads
// that query's hidden target by; the body's columns are `c<k>` (the
// correlations' inner sides), `v` (the value IN selects) and `a<k>` (the
// compared item's aggregate arguments). Not `__trellis_`, which a grouping
// refuses as its FROM table's alias; no user name can meet it, since it
// is the only table of the subquery's grouping.
inline constexpr const char* kSubqueryBodyAlias = "trellis_subquery";

// A statement with a subquery in HAVING (TransformStmt::having_query): the
// alias its grouping is read by, and the prefix of the columns the compared
// sides become (`trellis_having_1`, ...).
inline constexpr const char* kHavingQueryAlias = "trellis_grouped";
inline constexpr const char* kHavingColumnPrefix = "trellis_having_";

// A subquery in WHERE, one condition of the WHERE's top-level AND: `EXISTS
// (...)`, `NOT EXISTS (...)`, `q.c IN (...)`, `q.c NOT IN (...)` or `expr op
// (...)` (a scalar subquery over aggregates). The statement is compiled
// into stages (plan/subquery_stages.h): each subquery becomes a hidden
// grouping joined to the statement, its condition a predicate over it.
struct WhereSubquery {
  SubqueryUse use = SubqueryUse::kExists;
  // The condition's bytes [begin, end) in the WHERE's text, and the
  // statement byte offset of the subquery's "(" (for messages).
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t position = 0;
  TableRef from;                     // the subquery's FROM table
  std::optional<std::string> where;  // its WHERE without the correlations
  // The qualifier of the statement's table it is correlated with (empty:
  // none), and its equalities with that table, in the order written.
  std::string outer;
  std::vector<Correlation> correlations;
  // EXISTS and NOT EXISTS: at most one correlation by `<>` (or `!=`),
  // `inner <> q.outer_column`, beside any number of equalities (TPC-H Q21:
  // another lineitem of the same order from another supplier). The
  // engine counts the rows matching the equalities and subtracts those
  // also equal on this column (plan/subquery_stages.h).
  std::optional<Correlation> differs;
  // IN and NOT IN: the tested column (of `outer`) and the value selected.
  std::optional<Correlation> tested;
  // kCompare: the subquery's one SELECT item, the aggregate calls in it
  // (spans within `item`), the other side as written and the operator, as
  // `compared op (subquery)` reads (a subquery written first is turned round).
  std::string item;
  std::vector<AggregateUse> item_uses;
  std::string compared;
  std::string op;
  // A subquery whose FROM joins tables, or whose WHERE holds subqueries of
  // its own, reads a query of its own (one element): its FROM and joins,
  // its WHERE without the correlations, and SELECT the columns named above
  // (kSubqueryBodyAlias). The engine defines it as a hidden stage, which
  // `from` then names (plan/derived_stages.h); until then `from` is the
  // alias alone. The fields above are written over its columns.
  std::vector<TransformStmt> body;
  // How a message names it when not by `position` (SubqueryWords): a
  // subquery the parser moved out of HAVING into the WHERE of the
  // statement it reads HAVING as, whose position is in text the user never
  // wrote ("the subquery in HAVING").
  std::string named;

  bool operator==(const WhereSubquery&) const = default;
};

struct TransformStmt {
  QualifiedName target;
  TableRef source;
  std::vector<JoinClause> joins;  // in the order written
  bool distinct = false;          // SELECT DISTINCT
  // SELECT DISTINCT ON (expr, ...): the expressions as written (empty
  // otherwise), and the statement's ORDER BY items as written (with their
  // ASC/DESC, NULLS FIRST/LAST), which only a DISTINCT ON may have
  // (grammar/distinct_on.h).
  std::vector<std::string> distinct_on;
  std::vector<std::string> order_by;
  std::vector<SelectItem> select;  // never empty; aliases are distinct
  std::optional<std::string> where;
  // The subqueries in WHERE, in the order written (their spans are within
  // `where`): derived from `where` by the parser.
  std::vector<WhereSubquery> subqueries;
  std::vector<std::string> group_by;
  // HAVING's condition as written, and the aggregate calls in it (their
  // spans are within `having`).
  std::optional<std::string> having;
  std::vector<AggregateUse> having_uses;
  bool without_source_index = false;
  // WITHOUT ROW SECURITY: the define may read sources whose row-level
  // security the target will not follow (spec/engine.md "Row-level security").
  bool without_row_security = false;
  // GRANT SELECT TO role, ...: the roles given SELECT on the target, in the
  // order written, each once.
  std::vector<std::string> readers;
  // UNION ALL FROM ... SELECT ... [WHERE ...]: the branches after the
  // statement's own (its FROM, joins, SELECT list and WHERE are the first
  // branch), in the order written; each has no target, GROUP BY, HAVING,
  // DISTINCT or trailing clause of its own (spec/grammar.md section 13,
  // plan/union_all_stages.h).
  std::vector<TransformStmt> union_all;
  // WITH name AS (FROM ... SELECT ...), ...: each query as a statement whose
  // target is its name (no schema), in the order written; a table of the
  // statement (or of a later WITH query, or of a subquery in WHERE) that
  // names one unqualified reads it (spec/grammar.md section 14).
  std::vector<TransformStmt> with;
  // FROM (FROM ... SELECT ...) AS alias: the query (its target the alias),
  // at most one; `source` is then the alias as an unqualified table with
  // that alias (grammar/derived.h, plan/derived_stages.h).
  std::vector<TransformStmt> derived;
  // HAVING holding subqueries (TPC-H Q11's comparison to a total): the
  // statement it is read as (one element), its grouping a query in FROM
  // (alias kHavingQueryAlias; each compared side of a subquery one more
  // column, kHavingColumnPrefix<k>) and HAVING's subqueries in the WHERE
  // over it. Derived from `having` by the parser; the statement renders as
  // written (spec/grammar.md section 11).
  std::vector<TransformStmt> having_query;

  // True when the statement is a UNION ALL of branches, compiled into a
  // hidden projection or join per branch and FULL JOINs that never match
  // stacking them (plan/union_all_stages.h).
  bool HasUnionAll() const { return !union_all.empty(); }

  // True when the statement reads a query in FROM or a WITH query, each
  // compiled into a hidden stage the statement reads as a table
  // (plan/derived_stages.h).
  bool HasDerived() const {
    return !with.empty() || !derived.empty() || !having_query.empty() || HasSubqueryBodies();
  }

  // True when a subquery in WHERE reads a query of its own (a join, or
  // subqueries inside it), compiled into a hidden stage like a WITH query.
  bool HasSubqueryBodies() const;

  // True when the target has a row per group rather than per source row:
  // GROUP BY, SELECT DISTINCT, HAVING, or aggregates over the whole table.
  bool Groups() const {
    if (distinct || !distinct_on.empty() || !group_by.empty() || having) return true;
    for (const auto& item : select) {
      if (item.aggregate || !item.aggregate_uses.empty()) return true;
    }
    return false;
  }

  // True when one grouping transform cannot hold the statement: it has a
  // HAVING or an expression over aggregates, and is compiled into stages, a
  // hidden grouping and a projection over it (plan/aggregate_stages.h).
  bool CompilesToStages() const {
    if (having) return true;
    for (const auto& item : select) {
      if (item.ComputesOverAggregates()) return true;
    }
    return false;
  }

  // True when WHERE has subqueries: the statement is compiled into stages,
  // a hidden grouping per subquery joined to it (plan/subquery_stages.h).
  bool HasSubqueries() const { return !subqueries.empty(); }

  // True for SELECT DISTINCT ON: a grouping by the DISTINCT ON expressions
  // whose other columns are the first row's by the ORDER BY, each group
  // recomputed when a change touches it (grammar/distinct_on.h).
  bool HasDistinctOn() const { return !distinct_on.empty(); }

  // True when a SELECT item or HAVING calls an aggregate over DISTINCT
  // values: the statement is compiled into stages, a hidden grouping by
  // its groups and the distinct argument, grouped again
  // (plan/distinct_aggregate_stages.h).
  bool HasDistinctAggregates() const {
    for (const auto& item : select) {
      for (const auto& use : item.aggregate_uses) {
        if (use.call.distinct) return true;
      }
    }
    for (const auto& use : having_uses) {
      if (use.call.distinct) return true;
    }
    return false;
  }

  bool operator==(const TransformStmt&) const = default;
};

// PAUSE/RESUME TRANSFORM take an address of one to three raw name parts; the
// engine resolves it against the catalog (see grammar/address.h).
struct PauseStmt {
  std::vector<std::string> address;

  bool operator==(const PauseStmt&) const = default;
};

struct ResumeStmt {
  std::vector<std::string> address;

  bool operator==(const ResumeStmt&) const = default;
};

struct DropStmt {
  QualifiedName target;

  bool operator==(const DropStmt&) const = default;
};

// ALTER TRANSFORM target ADD COLUMN expr AS col
struct AlterAddColumnStmt {
  QualifiedName target;
  SelectItem column;

  bool operator==(const AlterAddColumnStmt&) const = default;
};

// ALTER TRANSFORM target DROP COLUMN col
struct AlterDropColumnStmt {
  QualifiedName target;
  std::string column;

  bool operator==(const AlterDropColumnStmt&) const = default;
};

// ALTER TRANSFORM target ALTER COLUMN col AS expr. `column.alias` is the
// column, `column.expr` its new expression.
struct AlterColumnStmt {
  QualifiedName target;
  SelectItem column;

  bool operator==(const AlterColumnStmt&) const = default;
};

inline bool TransformStmt::HasSubqueryBodies() const {
  for (const auto& sq : subqueries) {
    if (!sq.body.empty()) return true;
  }
  return false;
}

using Statement = std::variant<TransformStmt, PauseStmt, ResumeStmt, DropStmt, AlterAddColumnStmt,
                               AlterDropColumnStmt, AlterColumnStmt>;

}  // namespace trellis::grammar
