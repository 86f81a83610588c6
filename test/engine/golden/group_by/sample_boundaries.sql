SELECT b FROM (
  SELECT b, row_number() OVER (ORDER BY b) AS n FROM (
    SELECT DISTINCT ARRAY[(o.customer_id)::text, (lower(region))::text] AS b
    FROM "public"."orders" AS "o" TABLESAMPLE BERNOULLI ($1::float8)
    WHERE (o.status <> 'void')
  ) AS k
) AS s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint
