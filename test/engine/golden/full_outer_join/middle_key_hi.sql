SELECT k FROM (
  SELECT ARRAY[coalesce("c"."id", "o"."customer_id")::text] AS k, row_number() OVER (ORDER BY coalesce("c"."id", "o"."customer_id")) AS n, count(*) OVER () AS c
  FROM ("public"."customers" AS "c" FULL JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE ROW(coalesce("c"."id", "o"."customer_id")) <= ROW(($1::text[])[1]::integer)
) s WHERE c >= 2 AND n = c / 2
