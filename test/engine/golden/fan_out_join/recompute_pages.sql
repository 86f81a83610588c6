WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT k.c1::integer AS "__k1" FROM "trellis".pages AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k WHERE p.id = ANY($1::bigint[])
), written AS (
  INSERT INTO "public"."customer_orders" AS __trellis_t ("c.id", "order_id", "name", "amount")
  SELECT "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") JOIN __trellis_units ON "c"."id" = __trellis_units."__k1"
  WHERE true
  ON CONFLICT ("c.id", "order_id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."customer_orders" AS __trellis_t USING __trellis_units
  WHERE __trellis_t."c.id" = __trellis_units."__k1"
    AND NOT EXISTS (SELECT 1 FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") JOIN __trellis_units ON "c"."id" = __trellis_units."__k1" WHERE "c"."id" = __trellis_t."c.id" AND ("o"."id" = __trellis_t."order_id" OR ("o"."id" IS NULL AND __trellis_t."order_id" IS NULL)) AND true)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
