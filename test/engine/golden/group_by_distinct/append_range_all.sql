INSERT INTO "app"."order totals" ("region", "__trellis_rows")
SELECT (region) AS "region", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true
  GROUP BY (region)
