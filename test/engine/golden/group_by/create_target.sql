CREATE TABLE "app"."order totals" WITH (fillfactor = 90) AS SELECT (o.customer_id) AS "customer_id", (lower(region)) AS "region", count(*) AS "n", sum((amount)) AS "total", coalesce(sum((amount)), 0) AS "__trellis_2_sum", count((amount)) AS "__trellis_2_n", avg((amount)) AS "mean", coalesce(sum((amount)), 0) AS "__trellis_3_sum", count((amount)) AS "__trellis_3_n", max((placed_at)) AS "last", count(*) AS "__trellis_rows"
  FROM "public"."orders" AS "o"
  WHERE (o.status <> 'void')
  GROUP BY (o.customer_id), (lower(region))
WITH NO DATA
