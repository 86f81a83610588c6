#include "capture/routing.h"

#include <algorithm>

#include "capture/functions.h"
#include "capture/publication.h"
#include "sql/quote.h"

namespace trellis::capture {

std::string RoutingRows(std::string_view rows, const std::vector<size_t>& positions,
                        std::string_view alias) {
  const std::string r(rows);
  const std::string width = r + ".width";
  if (positions == std::vector<size_t>{1}) {
    // The common case (a one-column key): the first value of each row
    // version, with no fold. Correct at any width, so a layout widened
    // between reading the catalog and consuming the rows does no harm.
    return "LATERAL (SELECT u.v AS c1 FROM unnest(" + r +
           ".routing) WITH ORDINALITY AS u(v, ord) WHERE (u.ord - 1) % " + width + " = 0) AS " +
           std::string(alias);
  }
  // unnest flattens row-major: element ord belongs to row (ord-1)/width,
  // column (ord-1)%width + 1. Fold each row back by the capture row's own
  // width; read with unnest, never subscripts, which rescan the array.
  std::vector<std::string> columns;
  for (size_t i = 0; i < positions.size(); ++i) {
    columns.push_back("max(u.v) FILTER (WHERE (u.ord - 1) % " + width + " = " +
                      std::to_string(positions[i] - 1) + ") AS c" + std::to_string(i + 1));
  }
  const size_t highest = *std::max_element(positions.begin(), positions.end());
  return "LATERAL (SELECT " + sql::Join(columns, ", ") + " FROM unnest(" + r +
         ".routing) WITH ORDINALITY AS u(v, ord) WHERE " + width +
         " >= " + std::to_string(highest) + " GROUP BY " + r + ".id, (u.ord - 1) / " + width +
         ") AS " + std::string(alias);
}

Result<std::vector<size_t>> EnsureRoutingColumns(pg::Connection& conn, const std::string& schema,
                                                 catalog::Source& source,
                                                 const std::vector<std::string>& columns) {
  const std::string id = std::to_string(source.id);
  auto current = conn.Query(sql::WithSchema(R"sql(
SELECT s.routing_columns, format('%I.%I', n.nspname, c.relname)
FROM {schema}.sources s
JOIN pg_class c ON c.oid = s.relid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE s.id = $1::int)sql",
                                            schema),
                            {id});
  if (!current.ok()) return current.status();
  if (current->empty()) return Status::NotFound("the source table no longer exists");
  std::vector<std::string> layout = sql::ParseTextArray(current->text(0, 0));
  const size_t before = layout.size();
  std::vector<size_t> positions;
  for (const auto& column : columns) {
    auto at = std::find(layout.begin(), layout.end(), column);
    if (at == layout.end()) at = layout.insert(layout.end(), column);
    positions.push_back(static_cast<size_t>(at - layout.begin()) + 1);
  }
  source.routing_columns = layout;
  if (layout.size() == before) return positions;
  // The lock CREATE TRIGGER takes: it waits for writers in flight (whose
  // narrower capture rows then commit before any new reader's first build
  // starts, so it covers them) and holds new writers until this commits,
  // when they fire the new functions. Taken before the catalog row below,
  // so no catalog lock is held while waiting on the table.
  TRELLIS_RETURN_IF_ERROR(
      conn.Exec("LOCK TABLE " + current->text(0, 1) + " IN SHARE ROW EXCLUSIVE MODE"));
  auto appended = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.sources SET routing_columns = $2::text[]
WHERE id = $1::int AND routing_columns = $3::text[] RETURNING 1)sql",
                                             schema),
                             {id, sql::ArrayLiteral(layout), current->text(0, 0)});
  if (!appended.ok()) return appended.status();
  if (appended->empty()) {
    // Another define changed the layout meanwhile: start from the new one.
    return EnsureRoutingColumns(conn, schema, source, columns);
  }
  TRELLIS_RETURN_IF_ERROR(InstallFunctions(conn, schema, source));
  // Logical capture: the new columns' old values must be sent too.
  auto publication = LogicalPublication(conn, schema);
  if (!publication.ok()) return publication.status();
  if (publication.value()) {
    TRELLIS_RETURN_IF_ERROR(PublishSource(conn, schema, *publication.value(), source));
  }
  return positions;
}

}  // namespace trellis::capture
