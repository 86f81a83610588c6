SELECT b FROM (
  SELECT b, row_number() OVER (ORDER BY b) AS n FROM (
    SELECT DISTINCT ARRAY[(region)::text] AS b
    FROM "public"."orders" AS "o" TABLESAMPLE BERNOULLI ($1::float8)
    WHERE true
  ) AS k
) AS s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint
