SELECT k FROM (
  SELECT ARRAY["o"."order_id"::text, "o"."line"::text] AS k, row_number() OVER (ORDER BY "o"."order_id", "o"."line") AS n, count(*) OVER () AS c
  FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email") WHERE ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer)
) s WHERE c >= 2 AND n = c / 2
