#include "catalog/address.h"

#include <optional>
#include <utility>

#include "catalog/parts.h"
#include "grammar/address.h"
#include "grammar/ast.h"
#include "grammar/render.h"
#include "sql/quote.h"

namespace trellis::catalog {

Result<ResolvedAddress> ResolveAddress(pg::Connection& conn, const std::string& schema,
                                       const std::vector<std::string>& parts, bool lock) {
  for (const auto& reading : grammar::AddressReadings(parts)) {
    auto t = LoadTransform(conn, schema, reading.target.name, lock);
    if (!t.ok()) {
      if (t.status().code() == Code::kNotFound) continue;
      return t.status();
    }
    if (reading.target.schema && *reading.target.schema != t->target_schema) continue;
    TRELLIS_RETURN_IF_ERROR(RefuseHiddenPart(conn, schema, t.value()));
    if (reading.column) {
      bool found = false;
      // A group target's hidden state columns are the engine's, not the user's.
      for (const auto& c : t->columns) {
        found = found || (c.name == *reading.column && c.role != ColumnRole::kHidden);
      }
      if (!found) {
        return Status::NotFound("transform " + sql::Ident(t->name()) + " has no column " +
                                sql::Ident(*reading.column));
      }
    }
    return ResolvedAddress{std::move(t.value()), reading.column};
  }
  std::vector<std::string> shown;
  for (const auto& p : parts) shown.push_back(grammar::RenderName(p));
  return Status::NotFound("no transform named " + sql::Join(shown, "."));
}

Result<std::optional<ResolvedAddress>> ResolveStageColumn(pg::Connection& conn,
                                                          const std::string& schema,
                                                          const std::vector<std::string>& parts,
                                                          bool lock) {
  if (parts.size() < 2) return std::optional<ResolvedAddress>();
  const std::vector<std::string> owner_parts(parts.begin(), parts.end() - 1);
  const std::string& column = parts.back();
  auto owner = ResolveAddress(conn, schema, owner_parts, lock);
  if (!owner.ok()) {
    if (owner.status().code() == Code::kNotFound) return std::optional<ResolvedAddress>();
    return owner.status();
  }
  if (owner->column) return std::optional<ResolvedAddress>();
  // The first stage, in stage order, whose column of that name is in
  // quarantine, unless the owner's own column is.
  auto stage = conn.Query(sql::WithSchema(R"sql(
SELECT s.target_name FROM {schema}.transforms s
JOIN {schema}.transform_columns c ON c.transform_id = s.id
WHERE s.owner_id = $1::int AND c.name = $2 AND c.state = 'paused'
  AND c.paused_kind = 'quarantine'
  AND NOT EXISTS (SELECT 1 FROM {schema}.transform_columns o
                  WHERE o.transform_id = $1::int AND o.name = $2 AND o.state = 'paused'
                    AND o.paused_kind = 'quarantine')
ORDER BY s.stage_order LIMIT 1)sql",
                                          schema),
                          {std::to_string(owner->transform.id), column});
  if (!stage.ok()) return stage.status();
  if (stage->empty()) return std::optional<ResolvedAddress>();
  auto t = LoadTransform(conn, schema, stage->text(0, 0), lock);
  if (!t.ok()) return t.status();
  return std::optional<ResolvedAddress>(ResolvedAddress{std::move(t.value()), column});
}

Result<std::string> ShownName(pg::Connection& conn, const std::string& schema, const Transform& t) {
  if (!IsHiddenPart(t)) return t.name();
  return OwnerName(conn, schema, t.name());
}

std::string NamedByOwner(std::string text, const std::string& stage, const std::string& owner) {
  if (stage.empty() || stage == owner) return text;
  for (std::size_t at = text.find(stage); at != std::string::npos;
       at = text.find(stage, at + owner.size())) {
    text.replace(at, stage.size(), owner);
  }
  return text;
}

LogName LogNameFor(const std::string& name, const std::string& owner, int stage_order) {
  if (owner.empty() || owner == name) {
    const std::string shown = grammar::RenderTransformName(name);
    return LogName{shown, shown};
  }
  const std::string shown = grammar::RenderTransformName(owner);
  return LogName{shown, shown + " (its stage " + std::to_string(stage_order) + ", catalog name " +
                            grammar::RenderName(name) + ")"};
}

namespace {

// The name and stage order of the owner of transform `id`; nullopt for a
// transform that has none, or when they cannot be read.
std::optional<std::pair<std::string, int>> OwnerOf(pg::Connection& conn, const std::string& schema,
                                                   int id) {
  auto rows = conn.Query(sql::WithSchema(R"sql(
SELECT o.target_name, s.stage_order FROM {schema}.transforms s
JOIN {schema}.transforms o ON o.id = s.owner_id WHERE s.id = $1::int)sql",
                                         schema),
                         {std::to_string(id)});
  if (!rows.ok() || rows->empty()) return std::nullopt;
  return std::make_pair(rows->text(0, 0), std::stoi(rows->text(0, 1)));
}

}  // namespace

LogName LogNameOf(pg::Connection& conn, const std::string& schema, const Transform& t) {
  if (!IsHiddenPart(t)) return LogNameFor(t.name(), "", t.stage_order);
  auto owner = OwnerOf(conn, schema, t.id);
  if (!owner) return LogNameFor(t.name(), "", t.stage_order);
  return LogNameFor(t.name(), owner->first, t.stage_order);
}

LogName LogNameOf(pg::Connection& conn, const std::string& schema, int transform_id,
                  const std::string& name) {
  if (!name.starts_with(grammar::kReservedPrefix)) return LogNameFor(name, "", 1);
  auto owner = OwnerOf(conn, schema, transform_id);
  if (!owner) return LogNameFor(name, "", 1);
  return LogNameFor(name, owner->first, owner->second);
}

}  // namespace trellis::catalog
