# scripts/test-ecto.sh runs one phase at a time (`mix test --only phase:NAME`)
# between the mix commands it drives; the application, with its Repo and its
# supervised Trellis handle, is started by `mix test` as in any Ecto app.
ExUnit.start(timeout: 120_000)
