SELECT DISTINCT 9 AS transform_id, __trellis_g.key
FROM consumed AS __trellis_s, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = 2) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % __trellis_s.width = 1) AS c2 FROM unnest(__trellis_s.routing) WITH ORDINALITY AS u(v, ord) WHERE __trellis_s.width >= 3 GROUP BY __trellis_s.id, (u.ord - 1) / __trellis_s.width) AS __trellis_r,
LATERAL (SELECT ARRAY[(o.customer_id)::text, (lower(region))::text] AS key
         FROM pg_catalog.json_populate_record(NULL::"public"."orders",
                pg_catalog.json_object(ARRAY['customer_id', 'region']::text[], ARRAY[__trellis_r.c1, __trellis_r.c2]::text[])) AS "o"
) AS __trellis_g
WHERE __trellis_s.source_id = 4 AND __trellis_s.op <> 'T'
