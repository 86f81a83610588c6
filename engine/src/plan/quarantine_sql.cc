#include "plan/quarantine_sql.h"

#include "sql/quote.h"

namespace trellis::plan {

bool IsWritten(const catalog::Column& c) {
  if (c.state == ColumnState::kLive) return true;
  return c.paused_kind == PauseKind::kQuarantine;
}

std::string IsQuarantinedKey(const std::string& schema, int transform_id, const std::string& column,
                             const std::string& key_text) {
  // An uncorrelated IN: PostgreSQL reads the column's recorded keys once per
  // statement into a hash table (a hashed SubPlan), so each row costs a hash
  // probe, not an index lookup.
  return key_text + " IN (SELECT __trellis_q.key FROM " + sql::Ident(schema) +
         ".quarantined_rows __trellis_q WHERE __trellis_q.transform_id = " +
         std::to_string(transform_id) + " AND __trellis_q.column_name = " + sql::Literal(column) +
         ")";
}

std::string QuarantineGuarded(const std::string& schema, int transform_id,
                              const std::string& column, const std::string& key_text,
                              const std::string& expr) {
  return "CASE WHEN " + IsQuarantinedKey(schema, transform_id, column, key_text) +
         " THEN NULL ELSE " + expr + " END";
}

std::string QuarantineGuarded(const std::string& schema, int transform_id,
                              const std::string& column, const std::vector<std::string>& key_texts,
                              const std::string& expr) {
  if (key_texts.size() == 1)
    return QuarantineGuarded(schema, transform_id, column, key_texts[0], expr);
  std::vector<std::string> any;
  for (const auto& k : key_texts) any.push_back(IsQuarantinedKey(schema, transform_id, column, k));
  return "CASE WHEN " + sql::Join(any, " OR ") + " THEN NULL ELSE " + expr + " END";
}

}  // namespace trellis::plan
