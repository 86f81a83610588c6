import Config

# scripts/test-ecto.sh points DATABASE_URL at a throwaway testkit cluster.
database_url = System.fetch_env!("DATABASE_URL")

config :ecto_app, EctoApp.Repo,
  url: database_url,
  pool_size: 5,
  # Trellis.Migration and mix trellis.dump connect their handles from here.
  trellis: [url: database_url]

# This node is the fleet's one worker: it runs the staging worker and drains.
config :ecto_app, EctoApp.Trellis,
  name: EctoApp.Trellis,
  url: database_url,
  staging: true,
  drain_threads: 2
