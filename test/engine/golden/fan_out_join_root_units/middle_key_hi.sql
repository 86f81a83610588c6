SELECT k FROM (
  SELECT ARRAY["c"."id"::text] AS k, row_number() OVER (ORDER BY "c"."id") AS n, count(*) OVER () AS c
  FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE ROW("c"."id") <= ROW(($1::text[])[1]::integer)
) s WHERE c >= 2 AND n = c / 2
