#include "plan/derived_stages_define.h"

#include "capture/row_security.h"
#include "catalog/composite.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/render.h"
#include "plan/derived_stages.h"
#include "plan/group_define_over_join.h"

namespace trellis::plan {
namespace {

// `status` with every hidden name in the user's words; a refusal of hidden
// query `k` also says which query it comes from.
Status InDerivedTerms(Status status, const grammar::TransformStmt& stmt,
                      const std::vector<grammar::QualifiedName>& hidden,
                      const std::vector<std::string>& words, std::optional<std::size_t> k) {
  for (std::size_t i = 0; i < hidden.size() && !status.ok(); ++i) {
    status = plan::InUserTerms(status, hidden[i], stmt.target.name, words[i]);
  }
  if (!k || status.ok()) return status;
  switch (status.code()) {
    case Code::kValidation:
    case Code::kNotFound:
    case Code::kUnsupported:
      return WithMessage(status, status.message() + " (in " + words[*k] + ")");
    default:
      return status;
  }
}

// The ids of transform `name`'s stages, in order, then its own.
Status AppendStages(pg::Connection& conn, const std::string& schema, const std::string& name,
                    std::vector<int>& ids) {
  auto t = catalog::LoadTransform(conn, schema, name);
  if (!t.ok()) return t.status();
  const int id = t->id;
  auto whole = catalog::LoadComposite(conn, schema, std::move(t.value()));
  if (!whole.ok()) return whole.status();
  for (const auto& stage : whole->stages) ids.push_back(stage.id);
  ids.push_back(id);
  return Status::OK();
}

// Defines `stmt` (its WITH queries and query in FROM, then the statement
// over them). `grouping_words`, when set, is what the query in FROM reads as
// in a message: the grouping of a statement with a subquery in HAVING,
// which the user wrote as no query in FROM (its alias is the parser's).
Status DefineParts(pg::Connection& conn, const std::string& schema,
                   const grammar::TransformStmt& stmt, const DefineSteps& steps,
                   const std::optional<std::string>& grouping_words);

}  // namespace

// What the grouping of a statement with a subquery in HAVING reads as in a
// message (spec/grammar.md section 11, "A subquery in HAVING"): the part of
// the statement the user wrote, never the alias the parser gave it.
const char* const kHavingGroupingWords =
    "the statement's grouping (its FROM, WHERE, GROUP BY and SELECT list, which HAVING's "
    "subquery compares)";

Status DefineDerivedStages(pg::Connection& conn, const std::string& schema,
                           const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  if (!stmt.having_query.empty()) {
    // A subquery in HAVING: the statement it is read as (its grouping a
    // query in FROM, the subqueries in the WHERE over it) is defined, as
    // any statement is, under the user's name; the user's transform shows,
    // and dumps, the statement as written.
    const grammar::TransformStmt& read = stmt.having_query.front();
    // Its subqueries are named as the subqueries in HAVING they are
    // (grammar::WhereSubquery::named), its grouping by kHavingGroupingWords.
    TRELLIS_RETURN_IF_ERROR(DefineParts(conn, schema, read, steps, kHavingGroupingWords));
    auto owner = catalog::LoadTransform(conn, schema, stmt.target.name);
    if (!owner.ok()) return owner.status();
    return catalog::RecordDefinition(conn, schema, owner->id, grammar::Render(stmt));
  }
  return DefineParts(conn, schema, stmt, steps, std::nullopt);
}

namespace {

Status DefineParts(pg::Connection& conn, const std::string& schema,
                   const grammar::TransformStmt& stmt, const DefineSteps& steps,
                   const std::optional<std::string>& grouping_words) {
  std::vector<grammar::QualifiedName> hidden;
  for (std::size_t k = 0; k < DerivedPartsNeeded(stmt); ++k) {
    auto name = HiddenName(conn, schema, kHiddenDerivedPrefix);
    if (!name.ok()) return name.status();
    hidden.push_back(std::move(name.value()));
  }
  DerivedStages compiled = CompileDerivedStages(stmt, hidden);
  if (grouping_words && !stmt.derived.empty()) compiled.words[stmt.with.size()] = *grouping_words;

  // Each query first, in order (a WITH query reads the ones before it),
  // compiled as any statement is: its own stages, then itself.
  std::vector<int> stage_ids;
  for (std::size_t k = 0; k < compiled.queries.size(); ++k) {
    const grammar::TransformStmt& query = compiled.queries[k];
    // Define checked the statement's own tables; a query's are read as
    // well, and their row-level security is refused alike.
    Status defined = capture::RefuseRowSecurity(conn, query);
    if (defined.ok()) defined = DefineCompiled(conn, schema, query, steps);
    TRELLIS_RETURN_IF_ERROR(InDerivedTerms(defined, stmt, hidden, compiled.words, k));
    TRELLIS_RETURN_IF_ERROR(AppendStages(conn, schema, query.target.name, stage_ids));
  }
  // Then the statement over their targets, as any statement is defined.
  TRELLIS_RETURN_IF_ERROR(InDerivedTerms(DefineCompiled(conn, schema, compiled.owner, steps), stmt,
                                         hidden, compiled.words, std::nullopt));
  std::vector<int> owner_parts;
  TRELLIS_RETURN_IF_ERROR(AppendStages(conn, schema, stmt.target.name, owner_parts));
  const int owner_id = owner_parts.back();
  stage_ids.insert(stage_ids.end(), owner_parts.begin(), owner_parts.end() - 1);
  // The hidden targets are looked up by what the stages reading them join on.
  std::vector<int> readers(owner_parts.begin(), owner_parts.end());
  readers.insert(readers.end(), stage_ids.begin(), stage_ids.end());
  TRELLIS_RETURN_IF_ERROR(IndexHiddenInputs(conn, schema, readers));
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(catalog::RecordDefinition(conn, schema, owner_id, grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, stage_ids, owner_id);
}

}  // namespace

}  // namespace trellis::plan
