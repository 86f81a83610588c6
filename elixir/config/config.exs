import Config

if config_env() == :test do
  # Every handle the suite opens would otherwise forward its routine info
  # lines (connect, shutdown) to the console. Tests that look at lines raise
  # the level themselves with Trellis.LogBridge.put_level/1.
  config :trellis_pg, log_level: :warning
end
