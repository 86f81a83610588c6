SELECT DISTINCT 9 AS transform_id, __trellis_k.key
FROM (SELECT DISTINCT __trellis_p."id"
      FROM consumed AS __trellis_s, LATERAL (SELECT u.v AS c1 FROM unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord) WHERE (u.ord - 1) % __trellis_s.width = 0) AS __trellis_r,
      LATERAL pg_catalog.json_populate_record(NULL::"public"."orders",
                pg_catalog.json_object(ARRAY['id']::text[], ARRAY[__trellis_r.c1]::text[])) AS __trellis_p
      WHERE __trellis_s.source_id = 4 AND __trellis_s.op <> 'T') AS __trellis_j,
LATERAL (SELECT ARRAY["o"."order_id"::text, "o"."line"::text] AS key FROM "public"."order_lines" AS "o" WHERE "o"."order_id" = __trellis_j."id" OFFSET 0) AS __trellis_k
