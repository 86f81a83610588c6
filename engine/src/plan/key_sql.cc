#include "plan/key_sql.h"

#include "sql/key_text.h"
#include "sql/quote.h"

namespace trellis::plan {

std::string KeyEquals(const std::vector<KeyColumn>& key, const std::vector<std::string>& lhs,
                      const std::vector<std::string>& rhs) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i].nullable) {
      parts.push_back("(" + lhs[i] + " = " + rhs[i] + " OR (" + lhs[i] + " IS NULL AND " + rhs[i] +
                      " IS NULL))");
    } else {
      parts.push_back(lhs[i] + " = " + rhs[i]);
    }
  }
  return sql::Join(parts, " AND ");
}

std::string OnConflictUpdate(const std::vector<KeyColumn>& key,
                             const std::vector<std::string>& update_columns,
                             const std::string& target_alias) {
  std::string out = "ON CONFLICT (" + sql::Join(KeyNames(key, ""), ", ") + ") DO ";
  if (update_columns.empty()) return out + "NOTHING";
  std::vector<std::string> sets;
  std::vector<std::string> mine;
  std::vector<std::string> theirs;
  for (const auto& c : update_columns) {
    sets.push_back(c + " = EXCLUDED." + c);
    mine.push_back(target_alias + "." + c);
    theirs.push_back("EXCLUDED." + c);
  }
  return out + "UPDATE SET " + sql::Join(sets, ", ") + "\n  WHERE ROW(" + sql::Join(mine, ", ") +
         ")::text IS DISTINCT FROM ROW(" + sql::Join(theirs, ", ") + ")::text";
}

std::vector<std::string> KeyNames(const std::vector<KeyColumn>& key, const std::string& qualifier) {
  std::vector<std::string> out;
  for (const auto& k : key) {
    out.push_back(qualifier.empty() ? sql::Ident(k.name) : qualifier + "." + sql::Ident(k.name));
  }
  return out;
}

std::vector<std::string> KeyExprs(const std::vector<KeyColumn>& key) {
  std::vector<std::string> out;
  for (const auto& k : key) out.push_back(k.expr);
  return out;
}

std::vector<std::string> KeyTypes(const std::vector<KeyColumn>& key) {
  std::vector<std::string> out;
  for (const auto& k : key) out.push_back(k.type);
  return out;
}

std::string KeyFromParam(const std::vector<KeyColumn>& key, int param) {
  return "ROW(" +
         sql::Join(sql::KeyValues("$" + std::to_string(param) + "::text[]", KeyTypes(key)), ", ") +
         ")";
}

std::string InRange(const std::vector<KeyColumn>& key, const std::vector<std::string>& exprs,
                    const KeyRange& range, pg::Params& params) {
  const std::string row = "ROW(" + sql::Join(exprs, ", ") + ")";
  std::vector<std::string> conditions;
  if (range.lo) {
    params.push_back(range.lo);
    conditions.push_back(row + " > " + KeyFromParam(key, static_cast<int>(params.size())));
  }
  if (range.hi) {
    params.push_back(range.hi);
    conditions.push_back(row + " <= " + KeyFromParam(key, static_cast<int>(params.size())));
  }
  if (conditions.empty()) return "true";
  return sql::Join(conditions, " AND ");
}

std::string RangeVariantName(const KeyRange& range) {
  if (range.lo && range.hi) return "lo_hi";
  if (range.lo) return "lo";
  if (range.hi) return "hi";
  return "all";
}

std::vector<KeyRange> RangeVariants() {
  const std::string bound = "{0}";
  return {KeyRange{bound, bound}, KeyRange{bound, std::nullopt}, KeyRange{std::nullopt, bound},
          KeyRange{}};
}

std::string TransformPlan::UnitCovers(const std::vector<std::string>& row,
                                      const std::vector<std::string>& unit) const {
  return KeyEquals(unit_key(), row, unit);
}

std::string TransformPlan::UnitsOverlap(const std::vector<std::string>& a,
                                        const std::vector<std::string>& b) const {
  return KeyEquals(unit_key(), a, b);
}

}  // namespace trellis::plan
