ALTER TABLE "public"."pairs" ADD UNIQUE NULLS NOT DISTINCT ("c.id=o.customer_id", "c.id", "o.id")
