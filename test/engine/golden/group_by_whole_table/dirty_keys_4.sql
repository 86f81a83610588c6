SELECT DISTINCT 9 AS transform_id, ARRAY['true']::text[] AS key
FROM consumed AS __trellis_s
WHERE __trellis_s.source_id = 4 AND __trellis_s.op <> 'T'
