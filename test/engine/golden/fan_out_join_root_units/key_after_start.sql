SELECT ARRAY["c"."id"::text] FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE true
ORDER BY "c"."id" OFFSET $1::bigint - 1 LIMIT 1
