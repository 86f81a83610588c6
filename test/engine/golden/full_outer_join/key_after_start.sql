SELECT ARRAY[coalesce("c"."id", "o"."customer_id")::text] FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE true
ORDER BY coalesce("c"."id", "o"."customer_id") OFFSET $1::bigint - 1 LIMIT 1
