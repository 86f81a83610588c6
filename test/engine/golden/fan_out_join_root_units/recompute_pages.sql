WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT k.c1::integer AS "__k1" FROM "trellis".pages AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k WHERE p.id = ANY($1::bigint[])
), __trellis_fresh AS MATERIALIZED (
  SELECT "c"."id" AS "c.id", "o"."id" AS "order_id", (c.name) AS "name", (o.amount) AS "amount" FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") JOIN __trellis_units ON "c"."id" = __trellis_units."__k1"
  WHERE true
), written AS (
  INSERT INTO "public"."customer_orders" AS __trellis_t ("c.id", "order_id", "name", "amount")
  SELECT "c.id", "order_id", "name", "amount" FROM __trellis_fresh
  ON CONFLICT ("c.id", "order_id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."customer_orders" AS __trellis_t USING __trellis_units
  WHERE __trellis_t."c.id" = __trellis_units."__k1"
    AND ROW(__trellis_t."c.id", __trellis_t."order_id")::text NOT IN (SELECT ROW(__trellis_fresh."c.id", __trellis_fresh."order_id")::text FROM __trellis_fresh)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
