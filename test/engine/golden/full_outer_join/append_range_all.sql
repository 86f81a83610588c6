INSERT INTO "public"."pairs" ("c.id=o.customer_id", "c.id", "o.id", "name", "amount")
SELECT coalesce("c"."id", "o"."customer_id"), "c"."id", "o"."id", (c.name), (o.amount) FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE true
