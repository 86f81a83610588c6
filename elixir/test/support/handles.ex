defmodule Trellis.Test.Handles do
  @moduledoc false

  # Handles a test opens and the test's own exit shuts down.

  import ExUnit.Callbacks, only: [on_exit: 1]

  @doc "Connects with a 10 s call budget; shut down when the test ends."
  @spec connect!(String.t(), keyword) :: Trellis.t()
  def connect!(url, opts \\ []) do
    {:ok, handle} = Trellis.connect([url: url, timeout_ms: 10_000] ++ opts)
    on_exit(fn -> Trellis.shutdown(handle) end)
    handle
  end
end
