INSERT INTO "public"."pairs" ("c.id=o.customer_id", "c.id", "o.id", "name", "amount")
SELECT coalesce("c"."id", "o"."customer_id"), "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE ROW(coalesce("c"."id", "o"."customer_id")) > ROW(($1::text[])[1]::integer) AND ROW(coalesce("c"."id", "o"."customer_id")) <= ROW(($2::text[])[1]::integer)
