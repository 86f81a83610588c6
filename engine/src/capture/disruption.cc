#include "capture/disruption.h"

#include "capture/names.h"
#include "catalog/states.h"
#include "log/component_log.h"
#include "sql/quote.h"
#include "sql/row_reader.h"

namespace trellis::capture {
namespace {

// The captured relations of every source a transform reads: (source id,
// relid). A source's own table is checked even when it is gone; a partition
// or child that is gone is not a disruption (its rows leaving the targets is
// a correction, not lost capture).
std::string CapturedSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
WITH read AS (
  SELECT s.id, s.relid FROM {schema}.sources s
  WHERE EXISTS (SELECT 1 FROM {schema}.transform_inputs i WHERE i.source_id = s.id)
)
SELECT id, relid FROM read
UNION
SELECT r.source_id, r.relid FROM {schema}.source_relations r
JOIN read ON read.id = r.source_id JOIN pg_class c ON c.oid = r.relid
ORDER BY 1, 2)sql",
                         schema);
}

// One row per disrupted relation: source id, table, problem. A relation is
// intact when each of its four triggers exists under Trellis's name, calls
// Trellis's function for that source and event, and is ENABLE ALWAYS ('A').
// The expected names come in as arrays, one element per (relation, event),
// made by capture/names.h: the SQL never builds a name itself.
std::string FindSql(const std::string& schema) {
  return sql::WithSchema(R"sql(
WITH expected AS (
  SELECT s.id, x.relid, x.event, x.ord, x.tgname, to_regprocedure(x.fn) AS fn,
         CASE WHEN x.relid = s.relid THEN format('%I.%I', s.schema_name, s.table_name)
              ELSE (SELECT format('%I.%I', n.nspname, c.relname)
                    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.oid = x.relid) END AS table_name
  FROM unnest($1::int[], $2::oid[], $3::text[], $4::text[], $5::text[])
       WITH ORDINALITY AS x(source_id, relid, event, tgname, fn, ord)
  JOIN {schema}.sources s ON s.id = x.source_id
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
SELECT id, table_name,
       CASE WHEN bool_and(table_exists) THEN string_agg(problem, '; ' ORDER BY ord)
            ELSE 'the table no longer exists' END
FROM checked
GROUP BY id, relid, table_name
HAVING NOT bool_and(table_exists) OR count(problem) > 0
ORDER BY id, min(ord))sql",
                         schema);
}

// The disrupted relations among those captured: (source id, table, problem).
Result<pg::Rows> FindDisrupted(pg::Connection& conn, const std::string& schema) {
  auto captured = conn.Query(CapturedSql(schema));
  if (!captured.ok()) return captured.status();
  std::vector<std::string> ids, relids, events, triggers, functions;
  for (size_t r = 0; r < captured->size(); ++r) {
    sql::RowReader row(captured.value(), r);
    const int id = row.Int(0);
    if (!row.status().ok()) return row.status();
    for (const char* event : kEvents) {
      ids.push_back(std::to_string(id));
      relids.push_back(captured->text(r, 1));
      events.push_back(event);
      triggers.push_back(TriggerName(schema, event));
      functions.push_back(QualifiedFunctionName(schema, id, event) + "()");
    }
  }
  return conn.Query(FindSql(schema),
                    {sql::ArrayLiteral(ids), sql::ArrayLiteral(relids), sql::ArrayLiteral(events),
                     sql::ArrayLiteral(triggers), sql::ArrayLiteral(functions)});
}

}  // namespace

Result<std::vector<Disruption>> PauseDisruptedReaders(pg::Connection& conn,
                                                      const std::string& schema) {
  auto found = FindDisrupted(conn, schema);
  if (!found.ok()) return found.status();
  std::vector<Disruption> out;
  for (size_t r = 0; r < found->size(); ++r) {
    sql::RowReader row(found.value(), r);
    const int source_id = row.Int(0);
    if (!row.status().ok()) return row.status();
    Disruption d{row.Text(1), row.Text(2)};
    auto paused = catalog::MarkCaptureDisrupted(conn, schema, source_id, d.table, d.problem);
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
