INSERT INTO "app"."order totals" ("n", "total", "__trellis_rows", "__trellis_all")
SELECT *, true FROM (SELECT count(*) AS "n", sum((amount)) AS "total", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true) AS f
