CREATE TABLE "app"."order totals" WITH (fillfactor = 90) AS SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true
  GROUP BY (region)
WITH NO DATA
