ALTER TABLE "app"."order_rows" ADD PRIMARY KEY ("order_id", "line")
