#include "plan/subquery_stages_define.h"

#include "catalog/composite.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "grammar/subquery.h"
#include "plan/bind.h"
#include "plan/group_define_over_join.h"
#include "plan/subquery_stages.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// What hidden grouping `k` reads as in a refusal: the part of the statement
// it comes from.
std::string InUserWords(const grammar::WhereSubquery& sq) { return grammar::SubqueryWords(sq); }

// `status` with every hidden name replaced by the user's words for it.
Status InUserTerms(Status status, const grammar::TransformStmt& stmt,
                   const std::vector<grammar::QualifiedName>& hidden,
                   const std::vector<std::string>& words) {
  for (std::size_t k = 0; k < hidden.size() && k < words.size() && !status.ok(); ++k) {
    status = plan::InUserTerms(status, hidden[k], stmt.target.name, words[k]);
  }
  return status;
}

// A refusal of subquery `sq`'s own grouping: in the user's terms, saying
// which subquery it is (a column it names may not exist, its WHERE may not
// evaluate). Codes other than a refusal's pass unchanged.
Status InSubquery(Status status, const grammar::TransformStmt& stmt,
                  const std::vector<grammar::QualifiedName>& hidden,
                  const std::vector<std::string>& words, const grammar::WhereSubquery& sq) {
  status = InUserTerms(std::move(status), stmt, hidden, words);
  switch (status.code()) {
    case Code::kValidation:
    case Code::kNotFound:
    case Code::kUnsupported:
      return WithMessage(status, status.message() + " (in " + InUserWords(sq) + ")");
    default:
      return status;
  }
}

// The FROM table's columns, for its copy (subquery_stages.h): Trellis's
// own hidden columns (a transform's target read as FROM) left out, as no
// statement can name them.
Result<std::vector<std::string>> FromColumns(pg::Connection& conn,
                                             const grammar::TransformStmt& stmt,
                                             const DefineSteps& steps) {
  auto from = steps.resolve_input(stmt.source.table, "source table");
  if (!from.ok()) return from.status();
  auto rows = conn.Query(
      "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 "
      "AND NOT attisdropped AND attname NOT LIKE '\\_\\_trellis\\_%' ORDER BY attnum",
      {sql::Qualified(from->schema_name, from->table_name)});
  if (!rows.ok()) return rows.status();
  std::vector<std::string> out;
  for (std::size_t r = 0; r < rows->size(); ++r) out.push_back(rows->text(r, 0));
  return out;
}

}  // namespace

Status DefineSubqueryStages(pg::Connection& conn, const std::string& schema,
                            const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  std::vector<grammar::QualifiedName> hidden;
  const std::size_t groupings = HiddenPartsNeeded(stmt) - (NeedsFromCopy(stmt) ? 1 : 0);
  for (std::size_t k = 0; k < HiddenPartsNeeded(stmt); ++k) {
    auto name =
        HiddenName(conn, schema, k < groupings ? kHiddenSubqueryPrefix : kHiddenFromCopyPrefix);
    if (!name.ok()) return name.status();
    hidden.push_back(std::move(name.value()));
  }
  std::vector<std::string> from_columns;
  if (NeedsFromCopy(stmt)) {
    auto columns = FromColumns(conn, stmt, steps);
    if (!columns.ok()) return columns.status();
    from_columns = std::move(columns.value());
  }
  auto compiled = CompileSubqueryStages(stmt, hidden, from_columns);
  if (!compiled.ok()) return compiled.status();
  // What each hidden part reads as in a refusal.
  std::vector<std::string> words;
  for (std::size_t k : compiled->stage_subquery) words.push_back(InUserWords(stmt.subqueries[k]));
  if (compiled->from_copy) words.push_back("the copy of the FROM table");

  // Each subquery's groupings first, then the FROM table's copy: the
  // statement joins their targets.
  std::vector<int> stage_ids;
  for (std::size_t k = 0; k < compiled->stages.size(); ++k) {
    const grammar::TransformStmt& stage = compiled->stages[k];
    const grammar::WhereSubquery& sq = stmt.subqueries[compiled->stage_subquery[k]];
    auto inputs = steps.resolve_inputs(stage);
    if (!inputs.ok()) return InSubquery(inputs.status(), stmt, hidden, words, sq);
    auto id = steps.define_one(stage, inputs.value());
    if (!id.ok()) return InSubquery(id.status(), stmt, hidden, words, sq);
    stage_ids.push_back(id.value());
  }
  if (compiled->from_copy) {
    auto inputs = steps.resolve_inputs(*compiled->from_copy);
    if (!inputs.ok()) return InUserTerms(inputs.status(), stmt, hidden, words);
    auto id = steps.define_one(*compiled->from_copy, inputs.value());
    if (!id.ok()) return InUserTerms(id.status(), stmt, hidden, words);
    stage_ids.push_back(id.value());
  }
  // Then the statement over them, as any statement without subqueries is
  // defined (a join; grouped, a hidden join and the grouping over it). Its
  // name was checked where the user's statement came in; a hidden query's
  // (a subquery's own, plan/derived_stages.h) is Trellis's and passes.
  TRELLIS_RETURN_IF_ERROR(
      InUserTerms(DefineCompiled(conn, schema, compiled->owner, steps), stmt, hidden, words));

  auto owner = catalog::LoadTransform(conn, schema, stmt.target.name);
  if (!owner.ok()) return owner.status();
  const int owner_id = owner->id;
  auto whole = catalog::LoadComposite(conn, schema, std::move(owner.value()));
  if (!whole.ok()) return whole.status();
  std::vector<int> over_hidden{owner_id};
  for (const auto& stage : whole->stages) {
    stage_ids.push_back(stage.id);
    over_hidden.push_back(stage.id);
  }
  TRELLIS_RETURN_IF_ERROR(IndexHiddenInputs(conn, schema, over_hidden));
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, owner_id, grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, stage_ids, owner_id);
}

}  // namespace trellis::plan
