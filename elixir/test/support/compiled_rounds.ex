defmodule Trellis.Test.CompiledRounds do
  @moduledoc false

  # The randomized round the compiled-statement differential tests share,
  # over JoinWorkload's tables (orders, customers, regions): statements
  # defined through one handle, 4 writers, then every order gone and back
  # with NULL amounts, each step compared with a fresh run of every query;
  # the writes must go unit by unit (no rebuild after keep_off_rebuilds!).

  import ExUnit.Assertions
  import Trellis.Test.Targets

  alias Trellis.Test.{Handles, JoinWorkload, SimplePG}

  @doc """
  Runs the round for `transforms` (`{name, statement, columns, query}`).
  Options: `:shown`, a pattern each definition as `definitions/1` gives it
  must match besides naming no hidden part; `:nulls`, SQL run after the
  orders come back that sets NULLs in another table.
  """
  @spec writers_round!(String.t(), SimplePG.t(), integer, list, keyword) :: :ok
  def writers_round!(url, pg, seed, transforms, opts \\ []) do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_compiled!(a, transforms)
    assert_compiled_equal(a, pg, transforms, seed)
    keep_off_rebuilds!(pg)
    rebuilt = rebuilds(a, transforms)
    assert_shown_as_written(a, transforms, Keyword.get(opts, :shown))

    committed =
      url |> JoinWorkload.writers(seed, 4, 600) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 1_800, "only #{committed} of 2400 writes committed"
    assert_compiled_equal(b, pg, transforms, seed)

    for {name, _, _, _} <- transforms do
      {:ok, %Trellis.Status{path_costs: costs}} = Trellis.status(b, name)
      IO.puts("#{name} batch paths: #{inspect(Enum.map(costs, &{&1.path, &1.batches}))}")
    end

    # The writes went unit by unit: no rebuild since keep_off_rebuilds!.
    assert rebuilds(b, transforms) == rebuilt

    # Every order leaves, then comes back with NULL amounts for half of them.
    SimplePG.query!(pg, """
    CREATE TABLE parked AS SELECT * FROM orders;
    DELETE FROM orders;
    """)

    assert_compiled_equal(b, pg, transforms, seed)

    SimplePG.query!(pg, """
    INSERT INTO orders SELECT id, customer_id, contact, CASE WHEN id % 2 = 0 THEN NULL
      ELSE amount END, note FROM parked;
    """)

    if nulls = Keyword.get(opts, :nulls), do: SimplePG.query!(pg, nulls)
    assert_compiled_equal(b, pg, transforms, seed)
    assert_live_and_clean!(b, transforms, seed)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
    :ok
  end

  # Each transform's rebuild batches so far (the drains that followed the
  # stages' first builds may have been rebuilds, before keep_off_rebuilds!).
  defp rebuilds(handle, transforms) do
    for {name, _, _, _} <- transforms, into: %{} do
      {:ok, %Trellis.Status{path_costs: costs}} = Trellis.status(handle, name)
      {name, costs |> Enum.filter(&(&1.path == :rebuild)) |> Enum.map(& &1.batches) |> Enum.sum()}
    end
  end

  defp assert_shown_as_written(handle, transforms, pattern) do
    {:ok, definitions} = Trellis.definitions(handle)

    for {name, _, _, _} <- transforms do
      %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
      refute shown =~ "__trellis", "#{name} shows #{shown}"
      if pattern, do: assert(shown =~ pattern, "#{name} shows #{shown}")
    end
  end
end
