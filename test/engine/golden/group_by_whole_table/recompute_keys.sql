WITH written AS (
  UPDATE "app"."order totals" SET ("n", "total", "__trellis_rows") = (SELECT count(*) AS "n", sum((amount)) AS "total", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE true)
  WHERE EXISTS (SELECT 1 FROM (SELECT 1 FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k) AS d)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), 0::bigint
