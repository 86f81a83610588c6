WITH fresh AS (
  SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true
  GROUP BY (region)
), gone AS (
  DELETE FROM "app"."order totals" AS __trellis_t
  WHERE NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE ARRAY[__trellis_f."region"] = ARRAY[__trellis_t."region"])
  RETURNING 1
), written AS (
  INSERT INTO "app"."order totals" AS __trellis_t ("region", "__trellis_rows") SELECT "region", "__trellis_rows" FROM fresh
  ON CONFLICT ("region") DO UPDATE SET "__trellis_rows" = EXCLUDED."__trellis_rows"
  WHERE (__trellis_t."__trellis_rows") IS DISTINCT FROM (EXCLUDED."__trellis_rows")
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone)
