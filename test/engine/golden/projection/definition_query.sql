SELECT "o"."order_id" AS "order_id", "o"."line" AS "line", (o.qty * o.price) AS "total", (lower(o.sku)) AS "sku" FROM "public"."order_lines" AS "o" WHERE (o.qty > 0)
