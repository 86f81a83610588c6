ALTER TABLE "app"."order totals" ADD UNIQUE NULLS NOT DISTINCT ("customer_id", "region")
