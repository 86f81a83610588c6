SELECT b FROM (
  SELECT ARRAY["c"."id"::text] AS b, row_number() OVER (ORDER BY "c"."id") AS n
  FROM "public"."customers" AS "c" TABLESAMPLE SYSTEM ($1::float8)
) s WHERE n % $2::bigint = 0 ORDER BY n LIMIT $3::bigint
