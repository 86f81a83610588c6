WITH written AS (
  INSERT INTO "app"."order ""lines""" AS __trellis_t ("order_id", "line", "total", "sku")
  SELECT "o"."order_id", "o"."line", (o.qty * o.price), (lower(o.sku)) FROM "public"."order_lines" AS "o"
  WHERE true AND (o.qty > 0)
  ON CONFLICT ("order_id", "line") DO UPDATE SET "total" = EXCLUDED."total", "sku" = EXCLUDED."sku"
  WHERE ROW(__trellis_t."total", __trellis_t."sku")::text IS DISTINCT FROM ROW(EXCLUDED."total", EXCLUDED."sku")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "app"."order ""lines""" AS __trellis_t
  WHERE true
    AND NOT EXISTS (SELECT 1 FROM "public"."order_lines" AS "o" WHERE "o"."order_id" = __trellis_t."order_id" AND "o"."line" = __trellis_t."line" AND CASE WHEN "o"."order_id" = __trellis_t."order_id" AND "o"."line" = __trellis_t."line" THEN (o.qty > 0) ELSE false END)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
