WITH __trellis_units AS MATERIALIZED (
  SELECT DISTINCT k.c1::integer AS "__k1", k.c2::integer AS "__k2" FROM (SELECT 1 AS id, $1::text[] AS keys) AS p, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 0) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % 2 = 1) AS c2 FROM unnest(p.keys) WITH ORDINALITY AS u(v, ord) GROUP BY p.id, (u.ord - 1) / 2) AS k
), __trellis_whole AS MATERIALIZED (
  SELECT DISTINCT "__k1" FROM __trellis_units WHERE __trellis_units."__k2" IS NULL
), __trellis_side AS MATERIALIZED (
  SELECT * FROM __trellis_units WHERE NOT (__trellis_units."__k2" IS NULL)
    AND NOT EXISTS (SELECT 1 FROM __trellis_whole WHERE __trellis_whole."__k1" = __trellis_units."__k1")
), __trellis_side_roots AS MATERIALIZED (
  SELECT DISTINCT "__k1" FROM __trellis_side
), __trellis_fresh AS MATERIALIZED (
  SELECT "c"."id" AS "c.id", "o"."id" AS "order_id", (c.name) AS "name", (o.amount) AS "amount" FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") JOIN __trellis_whole ON "c"."id" = __trellis_whole."__k1"
  WHERE true
  UNION ALL
  SELECT __trellis_x.* FROM __trellis_side, LATERAL (
    SELECT "c"."id" AS "c.id", "o"."id" AS "order_id", (c.name) AS "name", (o.amount) AS "amount" FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") WHERE "c"."id" = __trellis_side."__k1" AND "o"."id" = __trellis_side."__k2"
    OFFSET 0) AS __trellis_x
  UNION ALL
  SELECT "c"."id" AS "c.id", "o"."id" AS "order_id", (c.name) AS "name", (o.amount) AS "amount" FROM ("public"."customers" AS "c" LEFT JOIN "public"."orders" AS "o" ON "c"."id" = "o"."customer_id") JOIN __trellis_side_roots ON "c"."id" = __trellis_side_roots."__k1"
  WHERE "o"."customer_id" IS NULL
), __trellis_under AS MATERIALIZED (
  SELECT __trellis_t.ctid AS row_id, ROW(__trellis_t."c.id", __trellis_t."order_id")::text AS key
  FROM "public"."customer_orders" AS __trellis_t JOIN __trellis_whole ON __trellis_t."c.id" = __trellis_whole."__k1"
  UNION ALL
  SELECT __trellis_t.ctid, ROW(__trellis_t."c.id", __trellis_t."order_id")::text
  FROM "public"."customer_orders" AS __trellis_t JOIN __trellis_side ON __trellis_t."c.id" = __trellis_side."__k1" AND __trellis_t."order_id" = __trellis_side."__k2"
  UNION ALL
  SELECT __trellis_t.ctid, ROW(__trellis_t."c.id", __trellis_t."order_id")::text
  FROM "public"."customer_orders" AS __trellis_t JOIN __trellis_side_roots ON __trellis_t."c.id" = __trellis_side_roots."__k1"
  WHERE __trellis_t."order_id" IS NULL
), written AS (
  INSERT INTO "public"."customer_orders" AS __trellis_t ("c.id", "order_id", "name", "amount")
  SELECT "c.id", "order_id", "name", "amount" FROM __trellis_fresh
  ON CONFLICT ("c.id", "order_id") DO UPDATE SET "name" = EXCLUDED."name", "amount" = EXCLUDED."amount"
  WHERE ROW(__trellis_t."name", __trellis_t."amount")::text IS DISTINCT FROM ROW(EXCLUDED."name", EXCLUDED."amount")::text
  RETURNING 1
), deleted AS (
  DELETE FROM "public"."customer_orders" AS __trellis_t USING __trellis_under
  WHERE __trellis_t.ctid = __trellis_under.row_id
    AND __trellis_under.key NOT IN (SELECT ROW(__trellis_fresh."c.id", __trellis_fresh."order_id")::text FROM __trellis_fresh)
  RETURNING 1
)
SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM deleted)
