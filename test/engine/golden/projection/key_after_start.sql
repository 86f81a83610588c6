SELECT ARRAY["o"."order_id"::text, "o"."line"::text] FROM "public"."order_lines" AS "o"
WHERE true
ORDER BY "o"."order_id", "o"."line" OFFSET $1::bigint - 1 LIMIT 1
