WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT k.c1::integer AS "__k1" FROM "trellis".pages AS p, LATERAL (SELECT u.v AS c1 FROM unnest(p.keys) AS u(v)) AS k WHERE p.id = ANY($1::bigint[])
), written AS (
  INSERT INTO "public"."pairs" AS __trellis_t ("c.id=o.customer_id", "c.id", "o.id", "name", "amount")
  SELECT coalesce("c"."id", "o"."customer_id"), "c"."id", "o"."id", (c.name), (o.amount) FROM (SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "c"."id" IS NOT DISTINCT FROM __trellis_units."__k1")) AS "c" FULL JOIN (SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "o"."customer_id" IS NOT DISTINCT FROM __trellis_units."__k1")) AS "o" ON "c"."id" = "o"."customer_id"
  WHERE true
  ON CONFLICT ("c.id=o.customer_id", "c.id", "o.id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."pairs" AS __trellis_t USING __trellis_units
  WHERE (__trellis_t."c.id=o.customer_id" = __trellis_units."__k1" OR (__trellis_t."c.id=o.customer_id" IS NULL AND __trellis_units."__k1" IS NULL))
    AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."customers" AS "c"
  WHERE ("c"."id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "c"."id" IS NOT DISTINCT FROM __trellis_units."__k1")) AS "c" FULL JOIN (SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id") IN (SELECT __trellis_units."__k1" FROM __trellis_units)
  UNION ALL
  SELECT * FROM "public"."orders" AS "o"
  WHERE ("o"."customer_id" IS NULL) AND EXISTS (SELECT 1 FROM __trellis_units WHERE "o"."customer_id" IS NOT DISTINCT FROM __trellis_units."__k1")) AS "o" ON "c"."id" = "o"."customer_id" WHERE (coalesce("c"."id", "o"."customer_id") = __trellis_t."c.id=o.customer_id" OR (coalesce("c"."id", "o"."customer_id") IS NULL AND __trellis_t."c.id=o.customer_id" IS NULL)) AND ("c"."id" = __trellis_t."c.id" OR ("c"."id" IS NULL AND __trellis_t."c.id" IS NULL)) AND ("o"."id" = __trellis_t."o.id" OR ("o"."id" IS NULL AND __trellis_t."o.id" IS NULL)) AND true)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
