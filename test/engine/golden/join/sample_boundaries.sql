SELECT b FROM (
  SELECT ARRAY["o"."order_id"::text, "o"."line"::text] AS b, row_number() OVER (ORDER BY "o"."order_id", "o"."line") AS n
  FROM "public"."order_lines" AS "o" TABLESAMPLE SYSTEM ($1::float8)
) s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint
