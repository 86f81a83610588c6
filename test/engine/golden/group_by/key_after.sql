SELECT NULL::text[] WHERE false
