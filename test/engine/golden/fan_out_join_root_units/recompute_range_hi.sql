WITH written AS (
  INSERT INTO "public"."customer_orders" AS __trellis_t ("c.id", "order_id", "name", "amount")
  SELECT "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
  WHERE ROW("c"."id") <= ROW(($1::text[])[1]::integer)
  ON CONFLICT ("c.id", "order_id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."customer_orders" AS __trellis_t
  WHERE ROW(__trellis_t."c.id") <= ROW(($1::text[])[1]::integer)
    AND NOT EXISTS (SELECT 1 FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE "c"."id" = __trellis_t."c.id" AND ("o"."id" = __trellis_t."order_id" OR ("o"."id" IS NULL AND __trellis_t."order_id" IS NULL)))
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
