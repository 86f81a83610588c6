SELECT ARRAY["o"."order_id"::text, "o"."line"::text] FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email")
WHERE ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer)
ORDER BY "o"."order_id", "o"."line" OFFSET $2::bigint - 1 LIMIT 1
