INSERT INTO "app"."order_rows" ("order_id", "line", "total", "customer")
SELECT "o"."order_id", "o"."line", (o.qty * o.price), ("C".name) FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email")
WHERE ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer) AND CASE WHEN ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer) THEN ("C".name IS DISTINCT FROM 'x') ELSE false END
