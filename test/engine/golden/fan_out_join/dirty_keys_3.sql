SELECT DISTINCT 11 AS transform_id, ARRAY[k.c1, NULL] AS key
FROM consumed s, LATERAL (SELECT u.v AS c1 FROM unnest(s.routing) WITH ORDINALITY AS u(v, ord) WHERE (u.ord - 1) % s.width = 0) AS k
WHERE s.source_id = 3 AND s.op <> 'T'
