SELECT ARRAY[coalesce("c"."id", "o"."customer_id")::text] FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE ROW(coalesce("c"."id", "o"."customer_id")) > ROW(($1::text[])[1]::integer)
ORDER BY coalesce("c"."id", "o"."customer_id") OFFSET $2::bigint - 1 LIMIT 1
