#include "capture/disruption.h"

#include "log/component_log.h"
#include "sql/quote.h"

namespace trellis::capture {
namespace {

// One row per disrupted source read by a transform: id, table, problem. A
// source is intact when each of its four triggers exists under Trellis's
// name, calls Trellis's function for that source and event, and is ENABLE
// ALWAYS ('A'). $1 is the catalog schema, which both names embed.
std::string FindSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
WITH expected AS (
  SELECT s.id, s.relid, s.schema_name, s.table_name, e.event, e.ord,
         'trellis_' || $1::text || '_capture_' || e.event AS tgname,
         to_regprocedure(format('%I.%I()', $1::text, 'capture_' || s.id || '_' || e.event)) AS fn
  FROM {schema}.sources s
  CROSS JOIN unnest(ARRAY['insert', 'update', 'delete', 'truncate'])
       WITH ORDINALITY AS e(event, ord)
  WHERE EXISTS (SELECT 1 FROM {schema}.transforms t WHERE t.source_id = s.id)
), checked AS (
  SELECT x.*, c.oid IS NOT NULL AS table_exists, tg.tgenabled, tg.tgfoid,
         CASE
           WHEN tg.tgfoid IS NULL THEN format('trigger %s is missing', x.tgname)
           WHEN x.fn IS NULL OR tg.tgfoid <> x.fn
             THEN format('trigger %s does not call Trellis''s capture function', x.tgname)
           WHEN tg.tgenabled = 'D' THEN format('trigger %s is disabled', x.tgname)
           WHEN tg.tgenabled = 'O' THEN format(
             'trigger %s fires only in origin sessions (ENABLE TRIGGER), not ALWAYS', x.tgname)
           WHEN tg.tgenabled = 'R' THEN format(
             'trigger %s fires only in replica sessions, not ALWAYS', x.tgname)
         END AS problem
  FROM expected x
  LEFT JOIN pg_class c ON c.oid = x.relid
  LEFT JOIN pg_trigger tg ON tg.tgrelid = x.relid AND tg.tgname = x.tgname
)
SELECT id, format('%I.%I', schema_name, table_name),
       CASE WHEN bool_and(table_exists) THEN string_agg(problem, '; ' ORDER BY ord)
            ELSE 'the table no longer exists' END
FROM checked
GROUP BY id, schema_name, table_name
HAVING NOT bool_and(table_exists) OR count(problem) > 0
ORDER BY id)sql",
                         schema);
}

}  // namespace

Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn,
                                                      const std::string& schema) {
  auto found = conn.Query(FindSql(schema), {schema});
  if (!found.ok()) return found.status();
  std::vector<Disruption> out;
  for (size_t r = 0; r < found->size(); ++r) {
    Disruption d{found->text(r, 1), found->text(r, 2)};
    auto paused = conn.Query(sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET
  capture_disrupted = true,
  paused_kind = CASE WHEN status = 'paused' THEN paused_kind ELSE 'disruption' END,
  paused_reason = CASE WHEN status = 'paused' THEN paused_reason ELSE
    format('capture of %s was changed outside Trellis (%s), so writes made since may be missing '
           'from the target; RESUME TRANSFORM %s reinstalls capture and rebuilds it',
           $2::text, $3::text, quote_ident(target_name)) END,
  paused_at = CASE WHEN status = 'paused' THEN paused_at ELSE now() END,
  status = 'paused'
WHERE source_id = $1::int AND NOT (status = 'paused' AND capture_disrupted)
RETURNING target_name)sql",
                                             schema),
                             {found->text(r, 0), d.table, d.problem});
    if (!paused.ok()) return paused.status();
    if (!paused->empty()) {
      static const auto logger = log::Component("trellis::capture");
      logger->warn(
          "capture of {} was changed outside Trellis ({}): {} transform(s) reading it paused, or "
          "marked to rebuild on RESUME",
          d.table, d.problem, paused->size());
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace trellis::capture
