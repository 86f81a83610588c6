import Config

config :ecto_app, ecto_repos: [EctoApp.Repo]

# Ecto's migration lines and Trellis.Migration's are :info; the engine's own
# log lines only from :warning up, to keep the test output short.
config :logger, level: :info
config :trellis_pg, log_level: :warning
