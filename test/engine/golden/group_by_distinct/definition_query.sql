SELECT region AS "region" FROM "public"."orders" AS "o" WHERE true GROUP BY (region)
