ALTER TABLE "app"."order totals" ADD UNIQUE NULLS NOT DISTINCT ("region")
