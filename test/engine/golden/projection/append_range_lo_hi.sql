INSERT INTO "app"."order ""lines""" ("order_id", "line", "total", "sku")
SELECT "o"."order_id", "o"."line", (o.qty * o.price), (lower(o.sku)) FROM "public"."order_lines" AS "o"
WHERE ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer) AND ROW("o"."order_id", "o"."line") <= ROW(($2::text[])[1]::bigint, ($2::text[])[2]::integer) AND CASE WHEN ROW("o"."order_id", "o"."line") > ROW(($1::text[])[1]::bigint, ($1::text[])[2]::integer) AND ROW("o"."order_id", "o"."line") <= ROW(($2::text[])[1]::bigint, ($2::text[])[2]::integer) THEN (o.qty > 0) ELSE false END
