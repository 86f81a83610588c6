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

  @doc """
  Runs `fun` with a handle connected with `opts` (a 10 s call budget unless
  `opts` gives `:timeout_ms`) and shuts it down after, so a test can stop one set of workers before starting the
  next (what `connect!/2` leaves running until the test ends).
  """
  @spec with_handle(String.t(), keyword, (Trellis.t() -> result)) :: result when result: var
  def with_handle(url, opts, fun) do
    handle = Trellis.connect!(Keyword.merge([url: url, timeout_ms: 10_000], opts))

    try do
      fun.(handle)
    after
      Trellis.shutdown(handle)
    end
  end

  @doc """
  A fleet of two handles over one catalog, as a deploy starts it: migrated
  first from a handle that runs nothing (a staging handle cannot connect to an
  unmigrated catalog), then each handle connected with its own options. The
  caller shuts them down (crash tests kill their ports instead).
  """
  @spec fleet!(String.t(), keyword, keyword) :: {Trellis.t(), Trellis.t()}
  def fleet!(url, first, second) do
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    {Trellis.connect!([url: url] ++ first), Trellis.connect!([url: url] ++ second)}
  end
end
