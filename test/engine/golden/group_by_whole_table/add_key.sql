ALTER TABLE "app"."order totals" ADD UNIQUE ("__trellis_all")
