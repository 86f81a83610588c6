WITH fresh AS (
  SELECT (o.customer_id) AS "customer_id", (lower(region)) AS "region", count(*) AS "n", sum((amount)) AS "total", coalesce(sum((amount)), 0) AS "__trellis_2_sum", count((amount)) AS "__trellis_2_n", avg((amount)) AS "mean", coalesce(sum((amount)), 0) AS "__trellis_3_sum", count((amount)) AS "__trellis_3_n", max((placed_at)) AS "last", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id), (lower(region))
), gone AS (
  DELETE FROM "app"."order totals" AS __trellis_t
  WHERE NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE ARRAY[__trellis_f."customer_id"] = ARRAY[__trellis_t."customer_id"] AND ARRAY[__trellis_f."region"] = ARRAY[__trellis_t."region"])
  RETURNING 1
), written AS (
  INSERT INTO "app"."order totals" AS __trellis_t ("customer_id", "region", "n", "total", "__trellis_2_sum", "__trellis_2_n", "mean", "__trellis_3_sum", "__trellis_3_n", "last", "__trellis_rows") SELECT "customer_id", "region", "n", "total", "__trellis_2_sum", "__trellis_2_n", "mean", "__trellis_3_sum", "__trellis_3_n", "last", "__trellis_rows" FROM fresh
  ON CONFLICT ("customer_id", "region") DO UPDATE SET "n" = EXCLUDED."n", "total" = EXCLUDED."total", "__trellis_2_sum" = EXCLUDED."__trellis_2_sum", "__trellis_2_n" = EXCLUDED."__trellis_2_n", "mean" = EXCLUDED."mean", "__trellis_3_sum" = EXCLUDED."__trellis_3_sum", "__trellis_3_n" = EXCLUDED."__trellis_3_n", "last" = EXCLUDED."last", "__trellis_rows" = EXCLUDED."__trellis_rows"
  WHERE (__trellis_t."n", __trellis_t."total", __trellis_t."__trellis_2_sum", __trellis_t."__trellis_2_n", __trellis_t."mean", __trellis_t."__trellis_3_sum", __trellis_t."__trellis_3_n", __trellis_t."last", __trellis_t."__trellis_rows") IS DISTINCT FROM (EXCLUDED."n", EXCLUDED."total", EXCLUDED."__trellis_2_sum", EXCLUDED."__trellis_2_n", EXCLUDED."mean", EXCLUDED."__trellis_3_sum", EXCLUDED."__trellis_3_n", EXCLUDED."last", EXCLUDED."__trellis_rows")
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone)
