defmodule Trellis.Compiled.RecomputedDifferentialTest do
  # Randomized differential tests of the aggregates kept by recompute of
  # their group (spec/grammar.md section 11, "Aggregates kept by
  # recompute"): string_agg, array_agg and jsonb_agg with ORDER BY inside
  # the call (one with DISTINCT), bit_and/bit_or/bit_xor, the statistics
  # aggregates over numeric (exact, so a recompute gives the query's digits)
  # and regr_count, under GROUP BY, over the whole table, in expressions and
  # HAVING (compiled into stages), and over a join. The writers of
  # JoinWorkload put NULLs in the aggregated columns (contact, amount,
  # customer_id) and the group keys, move orders between customers and
  # customers between regions, and insert and delete rows, so groups empty
  # and fill again. After await_converged each target equals a fresh run of
  # its SQL, and self-check finds it clean. Seeded: replay with
  # TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"customer_lists",
     "TRANSFORM customer_lists FROM orders o SELECT o.customer_id, " <>
       "string_agg(o.contact, ',' ORDER BY o.contact, o.id) AS contacts, " <>
       "array_agg(o.id ORDER BY o.id) AS ids, jsonb_agg(o.amount ORDER BY o.id) AS amounts, " <>
       "bit_or(o.id) AS ored, bit_and(o.id) AS anded, count(*) AS n GROUP BY o.customer_id",
     "customer_id, contacts, ids, amounts, ored, anded, n",
     "SELECT customer_id, string_agg(contact, ',' ORDER BY contact, id), " <>
       "array_agg(id ORDER BY id), jsonb_agg(amount ORDER BY id), bit_or(id), bit_and(id), " <>
       "count(*) FROM orders GROUP BY customer_id"},
    {"customer_spread",
     "TRANSFORM customer_spread FROM orders o SELECT o.customer_id, " <>
       "stddev(o.amount) AS sd, var_pop(o.amount) AS vp, " <>
       "coalesce(string_agg(DISTINCT o.contact, '|' ORDER BY o.contact), '-') AS contacts, " <>
       "regr_count(o.amount, o.id) AS pairs, sum(o.amount) AS total " <>
       "WHERE o.note <> 'n7' GROUP BY o.customer_id HAVING variance(o.amount) > 100",
     "customer_id, sd, vp, contacts, pairs, total",
     "SELECT customer_id, stddev(amount), var_pop(amount), " <>
       "coalesce(string_agg(DISTINCT contact, '|' ORDER BY contact), '-'), " <>
       "regr_count(amount, id), sum(amount) FROM orders WHERE note <> 'n7' " <>
       "GROUP BY customer_id HAVING variance(amount) > 100"},
    {"order_bits",
     "TRANSFORM order_bits FROM orders o SELECT bit_xor(o.id) AS x, " <>
       "stddev_samp(o.amount) AS sd, " <>
       "array_agg(DISTINCT o.customer_id ORDER BY o.customer_id) AS customers " <>
       "WHERE o.amount > 50", "x, sd, customers",
     "SELECT bit_xor(id), stddev_samp(amount), " <>
       "array_agg(DISTINCT customer_id ORDER BY customer_id) FROM orders WHERE amount > 50"},
    {"region_names",
     "TRANSFORM region_names FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.region_id, string_agg(c.name, ';' ORDER BY c.name, o.id) AS names, " <>
       "var_samp(o.amount) AS vs GROUP BY c.region_id", "region_id, names, vs",
     "SELECT c.region_id, string_agg(c.name, ';' ORDER BY c.name, o.id), var_samp(o.amount) " <>
       "FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.region_id"}
  ]

  setup do: JoinWorkload.seeded_database!("recomputed_differential", "recomputed differential")

  defp define_every!(handle), do: define_compiled!(handle, @transforms)

  defp assert_equal(handle, pg, seed),
    do: assert_compiled_equal(handle, pg, @transforms, seed)

  test "4 writers, NULLs in the aggregated columns, groups emptied and refilled",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_every!(a)
    assert_equal(a, pg, seed)

    {:ok, definitions} = Trellis.definitions(a)

    for {name, statement, _, _} <- @transforms do
      %Trellis.Definition{statement: shown} = Enum.find(definitions, &(&1.name == name))
      refute shown =~ "__trellis", "#{name} shows #{shown}"
      [written | _] = Regex.run(~r/(string_agg|bit_xor)\(.*$/, statement)
      assert String.ends_with?(shown, written), "#{name} shows #{shown}"
    end

    committed =
      url |> JoinWorkload.writers(seed, 4, 600) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 1_800, "only #{committed} of 2400 writes committed"
    assert_equal(b, pg, seed)

    # A customer's every order leaves, then comes back with NULL contacts.
    SimplePG.query!(pg, """
    CREATE TABLE parked AS SELECT * FROM orders WHERE customer_id = 5;
    DELETE FROM orders WHERE customer_id = 5;
    """)

    assert_equal(b, pg, seed)

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM customer_lists WHERE customer_id = 5") ==
             "0"

    SimplePG.query!(pg, """
    INSERT INTO orders SELECT id, customer_id, NULL, amount, note FROM parked;
    """)

    assert_equal(b, pg, seed)

    assert_live_and_clean!(b, @transforms, seed)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while the groups drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end

  test "refused by name with the fix, creating nothing", %{url: url, pg: pg} do
    t = Trellis.connect!(url: url)
    :ok = Trellis.migrate(t)

    refusals = [
      {"TRANSFORM l FROM orders o SELECT o.customer_id, string_agg(o.contact, ',') AS c " <>
         "GROUP BY o.customer_id", "string_agg(...) without ORDER BY inside the call"},
      {"TRANSFORM l FROM orders o SELECT o.customer_id, array_agg(DISTINCT o.id) AS c " <>
         "GROUP BY o.customer_id", "array_agg(DISTINCT o.id ORDER BY"},
      {"TRANSFORM l FROM orders o SELECT o.customer_id, count(DISTINCT o.contact) AS n, " <>
         "bit_or(o.id) AS b GROUP BY o.customer_id", "define a transform for each"},
      {"TRANSFORM l FROM orders o SELECT o.id WHERE o.id = " <>
         "(SELECT bit_or(c.id) FROM customers c WHERE c.id = o.customer_id)",
       "bit_or is not supported in a subquery"},
      {"TRANSFORM l FROM orders o SELECT o.customer_id, " <>
         "percentile_cont(0.5) WITHIN GROUP (ORDER BY o.amount) AS m GROUP BY o.customer_id",
       "is neither an aggregate Trellis maintains"}
    ]

    for {statement, message} <- refusals do
      assert {:error, %Trellis.Error{code: code, message: shown}} = Trellis.define(t, statement)
      assert code in [:unsupported, :validation], statement
      assert shown =~ message, "#{statement}: #{shown}"
      refute shown =~ "SELECT ", "#{statement}: #{shown}"
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    Trellis.shutdown(t)
  end
end
