SELECT ARRAY["o"."order_id"::text, "o"."line"::text] FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email")
WHERE true
ORDER BY "o"."order_id", "o"."line" OFFSET $1::bigint - 1 LIMIT 1
