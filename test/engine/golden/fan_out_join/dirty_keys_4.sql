SELECT DISTINCT 11 AS transform_id, __trellis_k.key
FROM (SELECT DISTINCT __trellis_p."customer_id", (__trellis_r.c2::integer)::text AS __trellis_own1
      FROM consumed AS __trellis_s, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = 1) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = 0) AS c2 FROM unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord) WHERE __trellis_s.width >= 2 GROUP BY __trellis_s.id, (u.ord - 1) / __trellis_s.width) AS __trellis_r,
      LATERAL pg_catalog.json_populate_record(NULL::"public"."orders",
                pg_catalog.json_object(ARRAY['customer_id']::text[], ARRAY[__trellis_r.c1]::text[])) AS __trellis_p
      WHERE __trellis_s.source_id = 4 AND __trellis_s.op <> 'T') AS __trellis_j,
LATERAL (SELECT ARRAY["c"."id"::text, __trellis_j.__trellis_own1::text] AS key FROM "public"."customers" AS "c" WHERE "c"."id" = __trellis_j."customer_id" OFFSET 0) AS __trellis_k
