WITH written AS (
  UPDATE "app"."order totals" SET ("n", "total", "__trellis_rows") = (SELECT count(*) AS "n", sum((amount)) AS "total", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), 0::bigint
