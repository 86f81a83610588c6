INSERT INTO "app"."order_rows" ("order_id", "line", "total", "customer")
SELECT "o"."order_id", "o"."line", (o.qty * o.price), ("C".name) FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email")
WHERE true AND ("C".name IS DISTINCT FROM 'x')
