WITH __trellis_dirty AS MATERIALIZED (
  SELECT * FROM (SELECT DISTINCT k.c1::text AS __trellis_key_1 FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k) AS d
), fresh AS (
  SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM (SELECT * FROM "public"."orders" AS "o" WHERE EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (region) = __trellis_k.__trellis_key_1) OFFSET 0) AS "o"
  WHERE true
  GROUP BY (region)
  UNION ALL
  SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM (SELECT * FROM "public"."orders" AS "o" WHERE ((region) IS NULL) AND EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL)) AND EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL) AND ((region) = __trellis_k.__trellis_key_1 OR ((region) IS NULL AND __trellis_k.__trellis_key_1 IS NULL))) OFFSET 0) AS "o"
  WHERE true
  GROUP BY (region)
), gone AS (
  DELETE FROM "app"."order totals" AS __trellis_t USING __trellis_dirty AS __trellis_k
  WHERE __trellis_t."region" = __trellis_k.__trellis_key_1
    AND NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE __trellis_t."region" = __trellis_f."region")
  RETURNING 1
), gone_null AS (
  DELETE FROM "app"."order totals" AS __trellis_t USING __trellis_dirty AS __trellis_k
  WHERE EXISTS (SELECT 1 FROM __trellis_dirty AS __trellis_k WHERE (__trellis_k.__trellis_key_1 IS NULL)) AND (__trellis_t."region" IS NULL) AND (__trellis_k.__trellis_key_1 IS NULL) AND (__trellis_t."region" = __trellis_k.__trellis_key_1 OR (__trellis_t."region" IS NULL AND __trellis_k.__trellis_key_1 IS NULL))
    AND NOT EXISTS (SELECT 1 FROM fresh AS __trellis_f WHERE (__trellis_t."region" = __trellis_f."region" OR (__trellis_t."region" IS NULL AND __trellis_f."region" IS NULL)))
  RETURNING 1
), written AS (
  INSERT INTO "app"."order totals" AS __trellis_t ("region", "__trellis_rows") SELECT "region", "__trellis_rows" FROM fresh
  ON CONFLICT ("region") DO UPDATE SET "__trellis_rows" = EXCLUDED."__trellis_rows"
  WHERE (__trellis_t."__trellis_rows") IS DISTINCT FROM (EXCLUDED."__trellis_rows")
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM gone) + (SELECT count(*) FROM gone_null)
