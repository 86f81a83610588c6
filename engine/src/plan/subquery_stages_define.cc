#include "plan/subquery_stages_define.h"

#include "catalog/composite.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "plan/group_define_over_join.h"
#include "plan/subquery_stages.h"

namespace trellis::plan {
namespace {

// What hidden grouping `k` reads as in a refusal: the part of the statement
// it comes from.
std::string InUserWords(const grammar::WhereSubquery& sq) {
  return "the subquery at position " + std::to_string(sq.position);
}

// `status` with every hidden name replaced by the user's words for it.
Status InUserTerms(Status status, const grammar::TransformStmt& stmt,
                   const std::vector<grammar::QualifiedName>& hidden) {
  for (std::size_t k = 0; k < hidden.size() && !status.ok(); ++k) {
    status =
        plan::InUserTerms(status, hidden[k], stmt.target.name, InUserWords(stmt.subqueries[k]));
  }
  return status;
}

// A refusal of subquery `sq`'s own grouping: in the user's terms, saying
// which subquery it is (a column it names may not exist, its WHERE may not
// evaluate). Codes other than a refusal's pass unchanged.
Status InSubquery(Status status, const grammar::TransformStmt& stmt,
                  const std::vector<grammar::QualifiedName>& hidden,
                  const grammar::WhereSubquery& sq) {
  status = InUserTerms(std::move(status), stmt, hidden);
  std::string message = status.message() + " (in " + InUserWords(sq) + ")";
  Status out;
  switch (status.code()) {
    case Code::kValidation:
      out = Status::Validation(std::move(message));
      break;
    case Code::kNotFound:
      out = Status::NotFound(std::move(message));
      break;
    case Code::kUnsupported:
      out = Status::Unsupported(std::move(message));
      break;
    default:
      return status;
  }
  out.sqlstate = status.sqlstate;
  out.detail = status.detail;
  out.hint = status.hint;
  return out;
}

}  // namespace

Status DefineSubqueryStages(pg::Connection& conn, const std::string& schema,
                            const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  std::vector<grammar::QualifiedName> hidden;
  for (std::size_t k = 0; k < stmt.subqueries.size(); ++k) {
    auto name = HiddenName(conn, schema, kHiddenSubqueryPrefix);
    if (!name.ok()) return name.status();
    hidden.push_back(std::move(name.value()));
  }
  auto compiled = CompileSubqueryStages(stmt, hidden);
  if (!compiled.ok()) return compiled.status();

  // Each subquery's grouping first: the statement joins their targets.
  std::vector<int> stage_ids;
  for (std::size_t k = 0; k < compiled->stages.size(); ++k) {
    const grammar::TransformStmt& stage = compiled->stages[k];
    auto inputs = steps.resolve_inputs(stage);
    if (!inputs.ok()) return InSubquery(inputs.status(), stmt, hidden, stmt.subqueries[k]);
    auto id = steps.define_one(stage, inputs.value());
    if (!id.ok()) return InSubquery(id.status(), stmt, hidden, stmt.subqueries[k]);
    stage_ids.push_back(id.value());
  }
  // Then the statement over them, as any statement without subqueries is
  // defined (a join; grouped, a hidden join and the grouping over it).
  TRELLIS_RETURN_IF_ERROR(
      InUserTerms(DefineStatement(conn, schema, compiled->owner, steps), stmt, hidden));

  auto owner = catalog::LoadTransform(conn, schema, stmt.target.name);
  if (!owner.ok()) return owner.status();
  const int owner_id = owner->id;
  auto whole = catalog::LoadComposite(conn, schema, std::move(owner.value()));
  if (!whole.ok()) return whole.status();
  for (const auto& stage : whole->stages) stage_ids.push_back(stage.id);
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, owner_id, grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, stage_ids, owner_id);
}

}  // namespace trellis::plan
