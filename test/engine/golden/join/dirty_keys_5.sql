SELECT DISTINCT 9 AS transform_id, __trellis_k.key
FROM (SELECT DISTINCT __trellis_p."email"
      FROM consumed AS __trellis_s, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = 1) AS c1 FROM unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord) WHERE __trellis_s.width >= 2 GROUP BY __trellis_s.id, (u.ord - 1) / __trellis_s.width) AS __trellis_r,
      LATERAL pg_catalog.json_populate_record(NULL::"public"."customers",
                pg_catalog.json_object(ARRAY['email']::text[], ARRAY[__trellis_r.c1]::text[])) AS __trellis_p
      WHERE __trellis_s.source_id = 5 AND __trellis_s.op <> 'T') AS __trellis_j,
LATERAL (SELECT ARRAY["o"."order_id"::text, "o"."line"::text] AS key FROM "public"."order_lines" AS "o" JOIN "public"."orders" AS "r" ON "o"."order_id" = "r"."id" WHERE "r"."contact" = __trellis_j."email" OFFSET 0) AS __trellis_k
