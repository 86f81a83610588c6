SELECT k FROM (
  SELECT ARRAY["c"."id"::text] AS k, row_number() OVER (ORDER BY "c"."id") AS n, count(*) OVER () AS c
  FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE true
) s WHERE c >= 2 AND n = c / 2
