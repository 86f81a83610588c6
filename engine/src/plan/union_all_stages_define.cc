#include "plan/union_all_stages_define.h"

#include "capture/row_security.h"
#include "catalog/parts.h"
#include "catalog/states.h"
#include "grammar/quote.h"
#include "grammar/render.h"
#include "plan/bind.h"
#include "plan/group_define_over_join.h"
#include "plan/union_all_stages.h"
#include "sql/quote.h"

namespace trellis::plan {
namespace {

// What branch `b` (from 0) reads as in a message: its place and its FROM.
std::string BranchWords(const grammar::TransformStmt& stmt, std::size_t b) {
  const grammar::TransformStmt& branch = UnionBranch(stmt, b);
  return (b == 0 ? std::string("the first branch") : "UNION ALL branch " + std::to_string(b + 1)) +
         " (FROM " + grammar::RenderQualified(branch.source.table) + ")";
}

// `status` with every hidden name in the user's words: branch b's hidden
// target reads as that branch, an inner stack as "the UNION ALL".
Status InUnionTerms(Status status, const grammar::TransformStmt& stmt,
                    const std::vector<grammar::QualifiedName>& hidden) {
  const std::size_t n = UnionBranchCount(stmt);
  for (std::size_t k = 0; k < hidden.size() && !status.ok(); ++k) {
    status = plan::InUserTerms(status, hidden[k], stmt.target.name,
                               k < n ? BranchWords(stmt, k) : std::string("the UNION ALL"));
  }
  return status;
}

// Branch b's row key: the key columns of each of its inputs, qualified by
// the input's qualifier, in the order the branch names them. An input
// without a key is refused: its rows could not be told apart.
Result<std::vector<std::string>> BranchKey(const grammar::TransformStmt& stmt, std::size_t b,
                                           const std::vector<capture::ResolvedTable>& inputs) {
  const grammar::TransformStmt& branch = UnionBranch(stmt, b);
  std::vector<std::string> key;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& qualifier =
        i == 0 ? branch.source.Qualifier() : branch.joins[i - 1].table.Qualifier();
    if (inputs[i].key_columns.empty()) {
      return Status::Unsupported(
          "table " + grammar::RenderName(inputs[i].schema_name) + "." +
          grammar::RenderName(inputs[i].table_name) + ", read by " + BranchWords(stmt, b) +
          " of UNION ALL, has no primary key: the target keeps each branch's rows by their "
          "source's key; add a primary key to it");
    }
    for (const auto& column : inputs[i].key_columns) {
      key.push_back(grammar::QuoteIdent(qualifier) + "." + grammar::QuoteIdent(column));
    }
  }
  return key;
}

// The type of each column of hidden target `table`, by name.
Result<std::vector<std::pair<std::string, std::string>>> ColumnTypes(
    pg::Connection& conn, const grammar::QualifiedName& table,
    const std::vector<grammar::SelectItem>& items) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : items) {
    auto rows = conn.Query(
        "SELECT atttypid::text, pg_catalog.format_type(atttypid, NULL) FROM "
        "pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT "
        "attisdropped",
        {sql::Qualified(*table.schema, table.name), item.alias});
    if (!rows.ok()) return rows.status();
    if (rows->size() != 1) {
      return Status::Internal("the hidden target of a UNION ALL branch has no column " +
                              grammar::RenderName(item.alias));
    }
    out.emplace_back(rows->text(0, 0), rows->text(0, 1));
  }
  return out;
}

}  // namespace

Status DefineUnionAllStages(pg::Connection& conn, const std::string& schema,
                            const grammar::TransformStmt& stmt, const DefineSteps& steps) {
  const std::size_t n = UnionBranchCount(stmt);
  std::vector<grammar::QualifiedName> hidden;
  for (std::size_t k = 0; k < UnionPartsNeeded(stmt); ++k) {
    auto name = HiddenName(conn, schema, kHiddenUnionPrefix);
    if (!name.ok()) return name.status();
    hidden.push_back(std::move(name.value()));
  }
  std::vector<std::vector<std::string>> keys;
  for (std::size_t b = 0; b < n; ++b) {
    auto inputs = steps.resolve_inputs(UnionBranch(stmt, b));
    if (!inputs.ok()) return inputs.status();
    auto key = BranchKey(stmt, b, inputs.value());
    if (!key.ok()) return key.status();
    keys.push_back(std::move(key.value()));
  }
  auto compiled = CompileUnionAllStages(stmt, hidden, keys);
  if (!compiled.ok()) return compiled.status();

  // Each branch first, as any projection or join is defined.
  std::vector<int> stage_ids;
  for (std::size_t b = 0; b < n; ++b) {
    const grammar::TransformStmt& stage = compiled->branches[b];
    // Define checked the first branch's tables; a later branch's are read as
    // well, and their row-level security is refused alike.
    if (b > 0) TRELLIS_RETURN_IF_ERROR(capture::RefuseRowSecurity(conn, stage));
    auto inputs = steps.resolve_inputs(stage);
    if (!inputs.ok()) return InUnionTerms(inputs.status(), stmt, hidden);
    auto id = steps.define_one(stage, inputs.value());
    if (!id.ok()) return InUnionTerms(id.status(), stmt, hidden);
    stage_ids.push_back(id.value());
  }
  // Every branch's columns have the first branch's types: a target column
  // has one, and the stack reads each row's value from its own branch.
  auto first = ColumnTypes(conn, hidden[0], stmt.select);
  if (!first.ok()) return first.status();
  for (std::size_t b = 1; b < n; ++b) {
    auto types = ColumnTypes(conn, hidden[b], stmt.select);
    if (!types.ok()) return types.status();
    for (std::size_t i = 0; i < stmt.select.size(); ++i) {
      if ((*types)[i].first == (*first)[i].first) continue;
      const std::string column = grammar::RenderName(stmt.select[i].alias);
      const std::string& want = (*first)[i].second;
      return Status::Unsupported(
          "column " + column + " of transform " + grammar::RenderName(stmt.target.name) + " is " +
          want + " in the first branch and " + (*types)[i].second + " in " + BranchWords(stmt, b) +
          ": a target column has one type; cast it alike in every branch, as (" +
          UnionBranch(stmt, b).select[i].expr + ")::" + want + " AS " + column);
    }
  }
  // Then the stacks, each over the one before and the next branch.
  for (const auto& stack : compiled->stacks) {
    auto inputs = steps.resolve_inputs(stack);
    if (!inputs.ok()) return InUnionTerms(inputs.status(), stmt, hidden);
    auto id = steps.define_one(stack, inputs.value());
    if (!id.ok()) return InUnionTerms(id.status(), stmt, hidden);
    stage_ids.push_back(id.value());
  }
  auto inputs = steps.resolve_inputs(compiled->owner);
  if (!inputs.ok()) return InUnionTerms(inputs.status(), stmt, hidden);
  auto owner_id = steps.define_one(compiled->owner, inputs.value());
  if (!owner_id.ok()) return InUnionTerms(owner_id.status(), stmt, hidden);

  std::vector<int> stacks(stage_ids.begin() + static_cast<std::ptrdiff_t>(n), stage_ids.end());
  stacks.push_back(owner_id.value());
  TRELLIS_RETURN_IF_ERROR(IndexHiddenInputs(conn, schema, stacks));
  // The user's transform shows, and dumps, the statement as written.
  TRELLIS_RETURN_IF_ERROR(
      catalog::RecordDefinition(conn, schema, owner_id.value(), grammar::Render(stmt)));
  return catalog::RecordStages(conn, schema, stage_ids, owner_id.value());
}

}  // namespace trellis::plan
