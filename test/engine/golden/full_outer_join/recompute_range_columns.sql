WITH written AS (
  INSERT INTO "public"."pairs" AS __trellis_t ("c.id=o.customer_id", "c.id", "o.id", "name", "amount")
  SELECT coalesce("c"."id", "o"."customer_id"), "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
  WHERE ROW(coalesce("c"."id", "o"."customer_id")) > ROW(($1::text[])[1]::integer) AND ROW(coalesce("c"."id", "o"."customer_id")) <= ROW(($2::text[])[1]::integer)
  ON CONFLICT ("c.id=o.customer_id", "c.id", "o.id") DO UPDATE SET "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."pairs" AS __trellis_t
  WHERE ROW(__trellis_t."c.id=o.customer_id") > ROW(($1::text[])[1]::integer) AND ROW(__trellis_t."c.id=o.customer_id") <= ROW(($2::text[])[1]::integer)
    AND NOT EXISTS (SELECT 1 FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE ROW(coalesce("c"."id", "o"."customer_id"), "c"."id", "o"."id")::text = ROW(__trellis_t."c.id=o.customer_id", __trellis_t."c.id", __trellis_t."o.id")::text)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
