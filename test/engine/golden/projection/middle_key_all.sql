SELECT k FROM (
  SELECT ARRAY["o"."order_id"::text, "o"."line"::text] AS k, row_number() OVER (ORDER BY "o"."order_id", "o"."line") AS n, count(*) OVER () AS c
  FROM "public"."order_lines" AS "o" WHERE true
) s WHERE c >= 2 AND n = c / 2
