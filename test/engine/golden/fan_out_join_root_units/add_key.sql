ALTER TABLE "public"."customer_orders" ADD UNIQUE NULLS NOT DISTINCT ("c.id", "order_id")
