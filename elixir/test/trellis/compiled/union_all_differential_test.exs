defmodule Trellis.Compiled.UnionAllDifferentialTest do
  # Randomized differential tests of UNION ALL (spec/grammar.md section 13):
  # a hidden projection or join per branch, stacked by FULL JOINs that never
  # match, each branch's row its own unit. The writers of JoinWorkload put
  # NULLs in the compared and joined columns, move orders and customers in
  # and out of each branch's WHERE (amounts, regions), change keys and join
  # matches, delete and insert rows of all three tables. Two branches of
  # union_people read different tables; union_amounts reads orders in two
  # branches (one a join, one a LEFT join) and regions in two (joined, and
  # alone), three branches stacked twice. After await_converged each target
  # equals a fresh run of its query, and self-check finds it clean. Seeded:
  # replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"union_people",
     "TRANSFORM union_people FROM customers c " <>
       "SELECT c.name, c.email AS contact, c.region_id AS ref WHERE c.region_id % 2 = 0 " <>
       "UNION ALL FROM orders o SELECT o.note AS name, o.contact, o.customer_id AS ref " <>
       "WHERE o.amount > 50", "name, contact, ref",
     "SELECT * FROM (SELECT name, email, region_id FROM customers WHERE region_id % 2 = 0 " <>
       "UNION ALL SELECT note, contact, customer_id FROM orders WHERE amount > 50) q"},
    {"union_amounts",
     "TRANSFORM union_amounts FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.name, o.amount, c.region_id AS ref WHERE o.amount IS NOT NULL " <>
       "UNION ALL FROM orders o LEFT JOIN regions r ON o.customer_id = r.id " <>
       "SELECT o.contact AS name, r.vat AS amount, r.id AS ref WHERE o.amount < 30 " <>
       "UNION ALL FROM regions r SELECT r.label AS name, r.vat AS amount, r.id AS ref " <>
       "WITHOUT SOURCE INDEX", "name, amount, ref",
     "SELECT * FROM (SELECT c.name, o.amount, c.region_id FROM orders o " <>
       "JOIN customers c ON o.customer_id = c.id WHERE o.amount IS NOT NULL " <>
       "UNION ALL SELECT o.contact, r.vat, r.id FROM orders o " <>
       "LEFT JOIN regions r ON o.customer_id = r.id WHERE o.amount < 30 " <>
       "UNION ALL SELECT label, vat, id FROM regions) q"}
  ]

  setup do: JoinWorkload.seeded_database!("union_all_differential", "union all differential")

  defp define_every!(handle), do: define_compiled!(handle, @transforms)

  # Each transform's rebuild batches so far (the drains that followed the
  # stages' first builds may have been rebuilds, before keep_off_rebuilds!).
  defp rebuilds(handle) do
    for {name, _, _, _} <- @transforms, into: %{} do
      {:ok, %Trellis.Status{path_costs: costs}} = Trellis.status(handle, name)
      {name, costs |> Enum.filter(&(&1.path == :rebuild)) |> Enum.map(& &1.batches) |> Enum.sum()}
    end
  end

  defp assert_equal(handle, pg, seed),
    do: assert_compiled_equal(handle, pg, @transforms, seed)

  test "4 writers over 3 tables, NULLs, rows moving in and out of every branch",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_every!(a)
    assert_equal(a, pg, seed)
    keep_off_rebuilds!(pg)
    rebuilt = rebuilds(a)

    {:ok, definitions} = Trellis.definitions(a)

    for {name, _, _, _} <- @transforms do
      %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
      refute shown =~ "__trellis", "#{name} shows #{shown}"
      assert shown =~ " UNION ALL FROM ", "#{name} shows #{shown}"
    end

    committed =
      url |> JoinWorkload.writers(seed, 4, 600) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 1_800, "only #{committed} of 2400 writes committed"
    assert_equal(b, pg, seed)

    for {name, _, _, _} <- @transforms do
      {:ok, %Trellis.Status{path_costs: costs}} = Trellis.status(b, name)
      IO.puts("#{name} batch paths: #{inspect(Enum.map(costs, &{&1.path, &1.batches}))}")
    end

    # The writes went unit by unit: no rebuild since keep_off_rebuilds!.
    assert rebuilds(b) == rebuilt

    # Every order leaves, then comes back with NULL amounts for half of them.
    SimplePG.query!(pg, """
    CREATE TABLE parked AS SELECT * FROM orders;
    DELETE FROM orders;
    """)

    assert_equal(b, pg, seed)

    SimplePG.query!(pg, """
    INSERT INTO orders SELECT id, customer_id, contact, CASE WHEN id % 2 = 0 THEN NULL
      ELSE amount END, note FROM parked;
    UPDATE regions SET vat = NULL WHERE id % 3 = 0;
    """)

    assert_equal(b, pg, seed)

    assert_live_and_clean!(b, @transforms, seed)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while the branches drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    b =
      JoinWorkload.staging_crash_round!(url, pg, seed, fn a ->
        define_every!(a)
        keep_off_rebuilds!(pg)
      end)

    assert_equal(b, pg, seed)
    Trellis.shutdown(b)
  end
end
