#include "catalog/rebuild.h"

#include "sql/quote.h"

namespace trellis::catalog {

Status RequestRebuild(pg::Connection& conn, const std::string& schema, int id,
                      const std::optional<std::vector<std::string>>& columns) {
  // Lock the transform's row first: a backfill chunk holds it while it runs
  // (the appends of a first build hold it shared), so what follows sees
  // every row they appended. A first build still running has appended rows
  // without a key to catch a second copy: empty the target, drop its ranges
  // and start that build again, whole.
  auto unbuilt = conn.Query(
      sql::WithSchema("SELECT target_schema, target_name, key_indexed FROM {schema}.transforms "
                      "WHERE id = $1::int FOR UPDATE",
                      schema),
      {std::to_string(id)});
  if (!unbuilt.ok()) return unbuilt.status();
  std::optional<std::vector<std::string>> rebuild_columns = columns;
  if (!unbuilt->empty() && unbuilt->text(0, 2) == "f") {
    TRELLIS_RETURN_IF_ERROR(
        conn.Exec("DELETE FROM " + sql::Qualified(unbuilt->text(0, 0), unbuilt->text(0, 1))));
    TRELLIS_RETURN_IF_ERROR(conn.Exec(
        sql::WithSchema("DELETE FROM {schema}.build_ranges WHERE transform_id = $1::int", schema),
        {std::to_string(id)}));
    rebuild_columns.reset();
  }
  // A whole-row rebuild (NULL columns) absorbs any column rebuild; two column
  // rebuilds merge. backfill_finished_at NULL marks the rebuild as pending.
  return conn.Exec(sql::WithSchema(R"sql(
UPDATE {schema}.transforms SET
  backfill_columns = CASE
    WHEN $2::text[] IS NULL THEN NULL
    WHEN backfill_finished_at IS NULL AND backfill_started_at IS NOT NULL
         AND backfill_columns IS NULL THEN NULL
    WHEN backfill_finished_at IS NULL AND backfill_columns IS NOT NULL
      THEN ARRAY(SELECT DISTINCT unnest(backfill_columns || $2::text[]))
    ELSE $2::text[] END,
  backfill_cursor = NULL,
  backfill_done = 0,
  backfill_total = NULL,
  backfill_started_at = NULL,
  backfill_finished_at = NULL,
  catch_up_page = NULL,
  status = CASE WHEN status = 'paused' THEN 'paused' ELSE 'waiting_to_backfill' END
WHERE id = $1::int)sql",
                                   schema),
                   {std::to_string(id), rebuild_columns ? std::optional<std::string>(
                                                              sql::ArrayLiteral(*rebuild_columns))
                                                        : std::nullopt});
}

}  // namespace trellis::catalog
