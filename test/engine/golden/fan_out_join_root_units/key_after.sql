SELECT ARRAY["c"."id"::text] FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id")
WHERE ROW("c"."id") > ROW(($1::text[])[1]::integer)
ORDER BY "c"."id" OFFSET $2::bigint - 1 LIMIT 1
