WITH __trellis_keys AS MATERIALIZED (
  SELECT __trellis_d."__k1", __trellis_d."__k2", CASE WHEN "o"."order_id" IS NULL THEN false ELSE coalesce((o.qty > 0), false) END AS __keep
  FROM (SELECT DISTINCT k.c1::bigint AS "__k1", k.c2::integer AS "__k2" FROM "trellis".pages AS p, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 0) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 1) AS c2 FROM unnest(p.keys) WITH ORDINALITY AS u(v, ord) GROUP BY p.id, (u.ord - 1) / 2) AS k WHERE p.id = ANY($1::bigint[])) AS __trellis_d
  LEFT JOIN "public"."order_lines" AS "o" ON "o"."order_id" = __trellis_d."__k1" AND "o"."line" = __trellis_d."__k2"
), written AS (
  INSERT INTO "app"."order ""lines""" AS __trellis_t ("order_id", "line", "total", "sku")
  SELECT "o"."order_id", "o"."line", (o.qty * o.price), (lower(o.sku)) FROM "public"."order_lines" AS "o"
  JOIN __trellis_keys ON "o"."order_id" = __trellis_keys."__k1" AND "o"."line" = __trellis_keys."__k2"
  WHERE __trellis_keys.__keep
  ON CONFLICT ("order_id", "line") DO UPDATE SET "total" = EXCLUDED."total", "sku" = EXCLUDED."sku"
  WHERE ROW(__trellis_t."total", __trellis_t."sku")::text IS DISTINCT FROM ROW(EXCLUDED."total", EXCLUDED."sku")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "app"."order ""lines""" AS __trellis_t USING __trellis_keys
  WHERE __trellis_t."order_id" = __trellis_keys."__k1" AND __trellis_t."line" = __trellis_keys."__k2" AND NOT __trellis_keys.__keep
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
