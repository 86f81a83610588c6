CREATE TABLE "app"."order totals" AS SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true
  GROUP BY (region)
WITH NO DATA
