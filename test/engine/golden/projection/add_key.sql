ALTER TABLE "app"."order ""lines""" ADD PRIMARY KEY ("order_id", "line")
