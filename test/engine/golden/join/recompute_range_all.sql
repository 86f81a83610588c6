WITH written AS (
  INSERT INTO "app"."order_rows" AS __trellis_t ("order_id", "line", "total", "customer")
  SELECT "o"."order_id", "o"."line", (o.qty * o.price), ("C".name) FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email")
  WHERE true AND ("C".name IS DISTINCT FROM 'x')
  ON CONFLICT ("order_id", "line") DO UPDATE SET "total" = EXCLUDED."total", "customer" = EXCLUDED."customer"
  WHERE ROW(__trellis_t."total", __trellis_t."customer")::text IS DISTINCT FROM ROW(EXCLUDED."total", EXCLUDED."customer")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "app"."order_rows" AS __trellis_t
  WHERE true
    AND NOT EXISTS (SELECT 1 FROM ("public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" LEFT JOIN "public"."customers" AS "C" ON "r"."contact" = "C"."email") WHERE "o"."order_id" = __trellis_t."order_id" AND "o"."line" = __trellis_t."line" AND CASE WHEN "o"."order_id" = __trellis_t."order_id" AND "o"."line" = __trellis_t."line" THEN ("C".name IS DISTINCT FROM 'x') ELSE false END)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
