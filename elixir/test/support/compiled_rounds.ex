defmodule Trellis.Test.CompiledRounds do
  @moduledoc false

  # The randomized rounds the compiled-statement differential tests share,
  # over JoinWorkload's tables (orders, customers, regions), each step
  # compared with a fresh run of every query: writers_round!/5 (4 writers,
  # then every order gone and back with NULL amounts; the writes must go
  # unit by unit, no rebuild after keep_off_rebuilds!), fleet_round!/5 (4
  # writers through a fleet of two handles, with the test's own checks
  # between the steps) and crash_round!/5 (the staging port killed -9).

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

  @doc """
  The fleet round of the compiled-statement differential tests: `transforms`
  (`{name, statement, columns, query}`) defined through the first of two
  handles (both staging), compared with a fresh run of every query, 4
  writers of 600 random writes (JoinWorkload.write_round!/2), compared
  again through the second handle, then every transform live with no page
  left. Options, each a function run at its step: `:defined` (given the
  first handle, after the first comparison: what a test checks of the
  defined stages), `:written` (given the second handle, after the
  comparison that follows the writes: further writes, each then compared),
  `:live` (given the first handle, once every transform is live).
  """
  @spec fleet_round!(String.t(), SimplePG.t(), integer, list, keyword) :: :ok
  def fleet_round!(url, pg, seed, transforms, opts \\ []) do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_compiled!(a, transforms)
    assert_compiled_equal(a, pg, transforms, seed)
    if defined = opts[:defined], do: defined.(a)

    JoinWorkload.write_round!(url, seed)
    assert_compiled_equal(b, pg, transforms, seed)
    if written = opts[:written], do: written.(b)

    assert_all_live!(b, transforms)
    if live = opts[:live], do: live.(a)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
    :ok
  end

  @doc """
  The crash round of the compiled-statement differential tests: `transforms`
  defined through the first of two staging handles, its port killed -9
  while the stages drain (JoinWorkload.staging_crash_round!/4), then every
  target compared with a fresh run of its query through the standby.
  With `keep_off_rebuilds: true`, every batch after the define is by keys
  or deltas (keep_off_rebuilds!/1), never a rebuild that would mend a loss.
  """
  @spec crash_round!(String.t(), SimplePG.t(), integer, list, keyword) :: :ok
  def crash_round!(url, pg, seed, transforms, opts \\ []) do
    b =
      JoinWorkload.staging_crash_round!(url, pg, seed, fn a ->
        define_compiled!(a, transforms)
        if opts[:keep_off_rebuilds], do: keep_off_rebuilds!(pg)
      end)

    assert_compiled_equal(b, pg, transforms, seed)
    Trellis.shutdown(b)
    :ok
  end

  @doc """
  Each transform a user named, with how many hidden stages it runs as:
  `[[name, count], ...]` in name order, as text.
  """
  @spec stage_counts(SimplePG.t()) :: [[String.t()]]
  def stage_counts(pg) do
    SimplePG.query!(pg, """
    SELECT u.target_name, count(s.id) FROM trellis.transforms u
    LEFT JOIN trellis.transforms s ON s.owner_id = u.id
    WHERE u.owner_id IS NULL GROUP BY 1 ORDER BY 1
    """)
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
