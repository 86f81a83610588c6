SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c WHERE c.oid = '"public"."orders"'::regclass
