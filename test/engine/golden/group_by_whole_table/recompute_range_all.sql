WITH written AS (
  INSERT INTO "app"."order totals" ("__trellis_all", "n", "total", "__trellis_rows")
  SELECT true, __trellis_f.* FROM (SELECT count(*) AS "n", sum((amount)) AS "total", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true) AS __trellis_f
  ON CONFLICT ("__trellis_all") DO UPDATE SET "n" = EXCLUDED."n", "total" = EXCLUDED."total", "__trellis_rows" = EXCLUDED."__trellis_rows"
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), 0::bigint
