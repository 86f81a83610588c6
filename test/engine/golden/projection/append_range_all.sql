INSERT INTO "app"."order ""lines""" ("order_id", "line", "total", "sku")
SELECT "o"."order_id", "o"."line", (o.qty * o.price), (lower(o.sku)) FROM "public"."order_lines" AS "o"
WHERE true AND (o.qty > 0)
