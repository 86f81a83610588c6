WITH __trellis_dirty AS MATERIALIZED (
  SELECT * FROM (SELECT DISTINCT k.c1::integer AS __trellis_key_1, k.c2::text AS __trellis_key_2 FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 0) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 1) AS c2 FROM unnest(p.keys) WITH ORDINALITY AS u(v, ord) GROUP BY p.id, (u.ord - 1) / 2) AS k) AS d
), fresh AS (
  SELECT (o.customer_id) AS "customer_id", (lower(region)) AS "region", count(*) AS "n", sum((amount)) AS "total", coalesce(sum((amount)), 0) AS "__trellis_2_sum", count((amount)) AS "__trellis_2_n", avg((amount)) AS "mean", coalesce(sum((amount)), 0) AS "__trellis_3_sum", count((amount)) AS "__trellis_3_n", max((placed_at)) AS "last", count(*) AS "__trellis_rows"
  FROM (SELECT * FROM "public"."orders" AS "o" WHERE EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (o.customer_id) = __trellis_k.__trellis_key_1 AND (lower(region)) = __trellis_k.__trellis_key_2) OFFSET 0) AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id), (lower(region))
  UNION ALL
  SELECT (o.customer_id) AS "customer_id", (lower(region)) AS "region", count(*) AS "n", sum((amount)) AS "total", coalesce(sum((amount)), 0) AS "__trellis_2_sum", count((amount)) AS "__trellis_2_n", avg((amount)) AS "mean", coalesce(sum((amount)), 0) AS "__trellis_3_sum", count((amount)) AS "__trellis_3_n", max((placed_at)) AS "last", count(*) AS "__trellis_rows"
  FROM (SELECT * FROM "public"."orders" AS "o" WHERE ((o.customer_id) IS NULL OR (lower(region)) IS NULL) AND EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL OR __trellis_k.__trellis_key_2 IS NULL)) AND EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL OR __trellis_k.__trellis_key_2 IS NULL) AND ((o.customer_id) = __trellis_k.__trellis_key_1 OR ((o.customer_id) IS NULL AND __trellis_k.__trellis_key_1 IS NULL)) AND ((lower(region)) = __trellis_k.__trellis_key_2 OR ((lower(region)) IS NULL AND __trellis_k.__trellis_key_2 IS NULL))) OFFSET 0) AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id), (lower(region))
), gone AS (
  DELETE FROM "app"."order totals" AS __trellis_t USING __trellis_dirty AS __trellis_k
  WHERE __trellis_t."customer_id" = __trellis_k.__trellis_key_1 AND __trellis_t."region" = __trellis_k.__trellis_key_2
    AND NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE __trellis_t."customer_id" = __trellis_f."customer_id" AND __trellis_t."region" = __trellis_f."region")
  RETURNING 1
), gone_null AS (
  DELETE FROM "app"."order totals" AS __trellis_t USING __trellis_dirty AS __trellis_k
  WHERE EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL OR __trellis_k.__trellis_key_2 IS NULL)) AND (__trellis_t."customer_id" IS NULL OR __trellis_t."region" IS NULL) AND (__trellis_k.__trellis_key_1 IS NULL OR __trellis_k.__trellis_key_2 IS NULL) AND (__trellis_t."customer_id" = __trellis_k.__trellis_key_1 OR (__trellis_t."customer_id" IS NULL AND __trellis_k.__trellis_key_1 IS NULL)) AND (__trellis_t."region" = __trellis_k.__trellis_key_2 OR (__trellis_t."region" IS NULL AND __trellis_k.__trellis_key_2 IS NULL))
    AND NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE (__trellis_t."customer_id" = __trellis_f."customer_id" OR (__trellis_t."customer_id" IS NULL AND __trellis_f."customer_id" IS NULL)) AND (__trellis_t."region" = __trellis_f."region" OR (__trellis_t."region" IS NULL AND __trellis_f."region" IS NULL)))
  RETURNING 1
), written AS (
  INSERT INTO "app"."order totals" AS __trellis_t ("customer_id", "region", "n", "total", "__trellis_2_sum", "__trellis_2_n", "mean", "__trellis_3_sum", "__trellis_3_n", "last", "__trellis_rows") SELECT "customer_id", "region", "n", "total", "__trellis_2_sum", "__trellis_2_n", "mean", "__trellis_3_sum", "__trellis_3_n", "last", "__trellis_rows" FROM fresh
  ON CONFLICT ("customer_id", "region") DO UPDATE SET "n" = EXCLUDED."n", "total" = EXCLUDED."total", "__trellis_2_sum" = EXCLUDED."__trellis_2_sum", "__trellis_2_n" = EXCLUDED."__trellis_2_n", "mean" = EXCLUDED."mean", "__trellis_3_sum" = EXCLUDED."__trellis_3_sum", "__trellis_3_n" = EXCLUDED."__trellis_3_n", "last" = EXCLUDED."last", "__trellis_rows" = EXCLUDED."__trellis_rows"
  WHERE (__trellis_t."n", __trellis_t."total", __trellis_t."__trellis_2_sum", __trellis_t."__trellis_2_n", __trellis_t."mean", __trellis_t."__trellis_3_sum", __trellis_t."__trellis_3_n", __trellis_t."last", __trellis_t."__trellis_rows") IS DISTINCT FROM (EXCLUDED."n", EXCLUDED."total", EXCLUDED."__trellis_2_sum", EXCLUDED."__trellis_2_n", EXCLUDED."mean", EXCLUDED."__trellis_3_sum", EXCLUDED."__trellis_3_n", EXCLUDED."last", EXCLUDED."__trellis_rows")
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone) + (SELECT count(*) FROM gone_null)
