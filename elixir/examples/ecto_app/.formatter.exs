[
  import_deps: [:ecto, :ecto_sql, :trellis_pg],
  inputs: [
    "*.exs",
    "{config,lib,test}/**/*.{ex,exs}",
    "priv/*/migrations/*.exs",
    "priv/bad_migrations/*/*.exs"
  ]
]
