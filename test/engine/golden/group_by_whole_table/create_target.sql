CREATE TABLE "app"."order totals" WITH (fillfactor = 90) AS SELECT true AS "__trellis_all", f.* FROM (SELECT count(*) AS "n", sum((amount)) AS "total", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true) AS f
WITH NO DATA
