SELECT DISTINCT 11 AS transform_id, ARRAY[(k.c1::integer)::text] AS key
FROM consumed s, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % s.width = 1) AS c1 FROM unnest(s.routing) WITH ORDINALITY AS u(v, ord) WHERE s.width >= 2 GROUP BY s.id, (u.ord - 1) / s.width) AS k
WHERE s.source_id = 4 AND s.op <> 'T'
