defmodule Trellis.Application do
  @moduledoc false

  use Application

  @impl true
  def start(_type, _args) do
    children = [
      # The VM's metrics registry (Trellis.Metrics): before any handle.
      Trellis.Metrics.Store,
      # Live handles, for Trellis.LogBridge.
      Trellis.Handles,
      # Engine log lines to Logger; reads its configuration as it starts.
      Trellis.LogBridge,
      # Owners of the handles `Trellis.connect/1` opens (supervised handles,
      # `{Trellis, opts}`, live in the host's own tree instead).
      {DynamicSupervisor, name: Trellis.HandleSupervisor, strategy: :one_for_one}
    ]

    Supervisor.start_link(children, strategy: :one_for_one, name: Trellis.Supervisor)
  end
end
