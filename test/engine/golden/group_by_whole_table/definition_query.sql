SELECT true AS "__trellis_all", (count(*)) AS "n", (sum(amount)) AS "total" FROM "public"."orders" AS "o" WHERE true
