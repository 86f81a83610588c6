INSERT INTO "public"."customer_orders" ("c.id", "order_id", "name", "amount")
SELECT "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE ROW("c"."id") > ROW(($1::text[])[1]::integer) AND ROW("c"."id") <= ROW(($2::text[])[1]::integer)
