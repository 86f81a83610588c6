WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT k.c1::integer AS "__k1" FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k
), __trellis_fresh AS MATERIALIZED (
  SELECT coalesce("c"."id", "o"."customer_id") AS "c.id=o.customer_id", "c"."id" AS "c.id", "o"."id" AS "o.id", (c.name) AS "name", (o.amount) AS "amount" FROM (SELECT * FROM (SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "c"."id" IS NOT DISTINCT FROM __trellis_units."__k1"))
  AS __trellis_r OFFSET 0) AS "c" FULL JOIN (SELECT * FROM (SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "o"."customer_id" IS NOT DISTINCT FROM __trellis_units."__k1"))
  AS __trellis_r OFFSET 0) AS "o" ON "c"."id" = "o"."customer_id"
  WHERE true
), written AS (
  INSERT INTO "public"."pairs" AS __trellis_t ("c.id=o.customer_id", "c.id", "o.id", "name", "amount")
  SELECT "c.id=o.customer_id", "c.id", "o.id", "name", "amount" FROM __trellis_fresh
  ON CONFLICT ("c.id=o.customer_id", "c.id", "o.id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."pairs" AS __trellis_t USING __trellis_units
  WHERE (__trellis_t."c.id=o.customer_id" = __trellis_units."__k1" OR (__trellis_t."c.id=o.customer_id" IS NULL AND __trellis_units."__k1" IS NULL))
    AND ROW(__trellis_t."c.id=o.customer_id", __trellis_t."c.id", __trellis_t."o.id")::text NOT IN (SELECT ROW(__trellis_fresh."c.id=o.customer_id", __trellis_fresh."c.id", __trellis_fresh."o.id")::text FROM __trellis_fresh)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
