defmodule Trellis.Compiled.DistinctOnDifferentialTest do
  # Randomized differential tests of SELECT DISTINCT ON (spec/grammar.md
  # section 12): one row per key, the first source row of the key by the
  # ORDER BY, kept by recomputing the key's row whenever a change touches
  # the key. The writers of JoinWorkload put NULLs in the key columns
  # (orders.customer_id, contact) and the ordered ones (amount), write ties
  # (amount 0, repeated amounts and notes) that the ORDER BY breaks by the
  # primary key, move orders between keys and delete and insert them, so
  # keys empty and fill again and the row kept moves from one order to
  # another. After await_converged each target equals a fresh run of its
  # query, and self-check finds it clean. Seeded: replay with
  # TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal
  # (a DISTINCT ON query in a subquery, so its ORDER BY is its own).
  @transforms [
    {"latest_by_customer",
     "TRANSFORM latest_by_customer FROM orders o SELECT DISTINCT ON (o.customer_id) " <>
       "o.customer_id, o.id, o.amount, o.contact, o.note " <>
       "ORDER BY o.customer_id, o.amount DESC NULLS LAST, o.id",
     "customer_id, id, amount, contact, note",
     "SELECT * FROM (SELECT DISTINCT ON (customer_id) customer_id, id, amount, contact, note " <>
       "FROM orders ORDER BY customer_id, amount DESC NULLS LAST, id) q"},
    {"first_contact",
     "TRANSFORM first_contact FROM orders o " <>
       "SELECT DISTINCT ON (lower(o.contact), o.customer_id % 3) lower(o.contact) AS contact, " <>
       "o.customer_id % 3 AS bucket, o.amount, o.id, o.amount * 2 AS doubled " <>
       "WHERE o.note <> 'n7' " <>
       "ORDER BY o.customer_id % 3, lower(o.contact), o.amount NULLS FIRST, o.id DESC " <>
       "WITHOUT SOURCE INDEX", "contact, bucket, amount, id, doubled",
     "SELECT * FROM (SELECT DISTINCT ON (lower(contact), customer_id % 3) " <>
       "lower(contact), customer_id % 3, amount, id, amount * 2 FROM orders " <>
       "WHERE note <> 'n7' " <>
       "ORDER BY customer_id % 3, lower(contact), amount NULLS FIRST, id DESC) q"},
    {"note_first",
     "TRANSFORM note_first FROM orders SELECT DISTINCT ON (note) note, id, customer_id " <>
       "ORDER BY note, customer_id DESC, id WITHOUT SOURCE INDEX", "note, id, customer_id",
     "SELECT * FROM (SELECT DISTINCT ON (note) note, id, customer_id FROM orders " <>
       "ORDER BY note, customer_id DESC, id) q"}
  ]

  setup do: JoinWorkload.seeded_database!("distinct_on_differential", "distinct on differential")

  defp define_every!(handle), do: define_compiled!(handle, @transforms)

  defp assert_equal(handle, pg, seed),
    do: assert_compiled_equal(handle, pg, @transforms, seed)

  test "4 writers, NULLs in the key and ordered columns, ties broken by the key",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_every!(a)
    assert_equal(a, pg, seed)
    keep_off_rebuilds!(pg)

    {:ok, definitions} = Trellis.definitions(a)

    for {name, statement, _, _} <- @transforms do
      %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
      refute shown =~ "__trellis", "#{name} shows #{shown}"
      [order_by | _] = Regex.run(~r/ORDER BY .*$/, statement)
      assert String.ends_with?(shown, order_by), "#{name} shows #{shown}"
      assert shown =~ "SELECT DISTINCT ON (", "#{name} shows #{shown}"
    end

    committed =
      url |> JoinWorkload.writers(seed, 4, 600) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 1_800, "only #{committed} of 2400 writes committed"
    assert_equal(b, pg, seed)

    for {name, _, _, _} <- @transforms do
      {:ok, %Trellis.Status{path_costs: costs}} = Trellis.status(b, name)
      paths = Enum.map(costs, &{&1.path, &1.batches})
      IO.puts("#{name} batch paths: #{inspect(paths)}")
      assert Enum.all?(paths, fn {path, n} -> path != :rebuild or n == 0 end), inspect(paths)
    end

    # A customer's every order leaves (its key's row goes), then its orders
    # come back with NULL amounts and the same amount, so only the key breaks
    # the tie.
    SimplePG.query!(pg, """
    CREATE TABLE parked AS SELECT * FROM orders WHERE customer_id = 5;
    DELETE FROM orders WHERE customer_id = 5;
    """)

    assert_equal(b, pg, seed)

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM latest_by_customer WHERE customer_id = 5") ==
             "0"

    SimplePG.query!(pg, """
    INSERT INTO orders SELECT id, customer_id, contact, NULL, note FROM parked WHERE id % 2 = 0;
    INSERT INTO orders SELECT id, customer_id, contact, 7, note FROM parked WHERE id % 2 = 1;
    UPDATE orders SET amount = 7 WHERE customer_id IS NULL;
    """)

    assert_equal(b, pg, seed)

    # The row kept is the first by the ORDER BY: its id is the smallest of
    # the key's largest amounts.
    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM latest_by_customer l WHERE l.id <> (
             SELECT o.id FROM orders o WHERE o.customer_id IS NOT DISTINCT FROM l.customer_id
             ORDER BY o.amount DESC NULLS LAST, o.id LIMIT 1)
           """) == "0"

    assert_live_and_clean!(b, @transforms, seed)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while the keys drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms, keep_off_rebuilds: true)
  end
end
