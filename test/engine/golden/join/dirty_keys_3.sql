SELECT DISTINCT 9 AS transform_id, ARRAY[k.c1, k.c2] AS key
FROM consumed s, LATERAL (SELECT max(u.v) FILTER (WHERE (u.ord - 1) % s.width = 0) AS c1, max(u.v) FILTER (WHERE (u.ord - 1) % s.width = 1) AS c2 FROM unnest(s.routing) WITH ORDINALITY AS u(v, ord) WHERE s.width >= 2 GROUP BY s.id, (u.ord - 1) / s.width) AS k
WHERE s.source_id = 3 AND s.op <> 'T'
