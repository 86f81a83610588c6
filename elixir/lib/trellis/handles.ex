defmodule Trellis.Handles do
  @moduledoc false

  # The live handles of this VM, for the work that concerns all of them:
  # Trellis.LogBridge.put_level/1 tells each its new log level. Each owner
  # registers its handle once connected; the entry goes when the owner exits.

  @registry Trellis.HandleRegistry

  @doc false
  def child_spec(_opts), do: Registry.child_spec(keys: :duplicate, name: @registry)

  @doc "Registers `handle` under the calling process (its owner)."
  @spec register(Trellis.t()) :: :ok
  def register(%Trellis{} = handle) do
    {:ok, _owner} = Registry.register(@registry, :handles, handle)
    :ok
  end

  @doc "Every live handle, in no particular order."
  @spec list() :: [Trellis.t()]
  def list, do: for({_owner, handle} <- Registry.lookup(@registry, :handles), do: handle)
end
