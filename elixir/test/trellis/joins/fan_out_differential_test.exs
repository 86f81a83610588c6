defmodule Trellis.Joins.FanOutDifferentialTest do
  # Randomized differential tests of joins of every shape the engine keeps
  # by a root input (spec/engine.md "Joins of every shape"): one-to-many
  # (LEFT from the "one" side, and INNER, whose root becomes the "many"
  # side), RIGHT, a many-to-many self join, a 3-way chain of LEFT joins, and
  # a FULL JOIN followed by an INNER one. The writers of JoinWorkload run on
  # every table: NULL join values, rows moving between matches (re-pointed
  # orders and customers), changed keys, deletes on every side. After
  # await_converged each target equals a fresh run of its query. Seeded: the
  # seed is printed and replayed with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the query its target must equal (the target's columns
  # in order: the key's, then the values')
  @transforms [
    # one-to-many, LEFT from the "one" side: a customer with no order is a
    # row with NULLs; root customers, keyed (c.id, o.id)
    {"customer_orders",
     "TRANSFORM customer_orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id " <>
       "SELECT c.name, o.amount",
     "SELECT c.id, o.id, c.name, o.amount FROM customers c " <>
       "LEFT JOIN orders o ON o.customer_id = c.id"},
    # INNER one-to-many: the root is orders, under which nothing repeats, so
    # the target is keyed by the order alone, named by its SELECT item
    {"orders_of_customers",
     "TRANSFORM orders_of_customers FROM customers c JOIN orders o ON o.customer_id = c.id " <>
       "SELECT o.id AS order_id, c.name, o.amount WHERE o.amount IS NULL OR o.amount > 10",
     "SELECT o.id, c.name, o.amount FROM customers c JOIN orders o ON o.customer_id = c.id " <>
       "WHERE o.amount IS NULL OR o.amount > 10"},
    # RIGHT: every customer, with each of its orders or one row of NULLs
    {"orders_right",
     "TRANSFORM orders_right FROM orders o RIGHT JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.name, o.note",
     "SELECT c.id, o.id, c.name, o.note FROM orders o " <>
       "RIGHT JOIN customers c ON o.customer_id = c.id"},
    # many-to-many self join: customers of the same region (NULL regions
    # match nothing)
    {"neighbours",
     "TRANSFORM neighbours FROM customers a JOIN customers b ON b.region_id = a.region_id " <>
       "SELECT a.name, b.name AS other",
     "SELECT a.id, b.id, a.name, b.name FROM customers a " <>
       "JOIN customers b ON b.region_id = a.region_id"},
    # 3-way: regions -> customers -> orders, both one-to-many and LEFT
    {"region_orders",
     "TRANSFORM region_orders FROM regions r LEFT JOIN customers c ON c.region_id = r.id " <>
       "LEFT JOIN orders o ON o.customer_id = c.id SELECT r.label, c.name, o.amount " <>
       "WHERE r.label <> 'r3'",
     "SELECT r.id, c.id, o.id, r.label, c.name, o.amount FROM regions r " <>
       "LEFT JOIN customers c ON c.region_id = r.id " <>
       "LEFT JOIN orders o ON o.customer_id = c.id WHERE r.label <> 'r3'"},
    # FULL, then INNER: regions are in every row, so they are the root
    {"full_then_inner",
     "TRANSFORM full_then_inner FROM orders o FULL JOIN customers c ON o.customer_id = c.id " <>
       "JOIN regions g ON g.id = c.region_id SELECT g.label, c.name, o.amount",
     "SELECT g.id, o.id, c.id, g.label, c.name, o.amount FROM orders o " <>
       "FULL JOIN customers c ON o.customer_id = c.id JOIN regions g ON g.id = c.region_id"},
    # FULL JOIN first, then LEFT: keyed by the join value (coalesce of both
    # sides), then each side's key
    {"full_pairs",
     "TRANSFORM full_pairs FROM customers c FULL JOIN orders o ON o.customer_id = c.id " <>
       "LEFT JOIN regions r ON r.id = c.region_id SELECT c.name, o.amount, r.label",
     "SELECT coalesce(c.id, o.customer_id), c.id, o.id, c.name, o.amount, r.label " <>
       "FROM customers c FULL JOIN orders o ON o.customer_id = c.id " <>
       "LEFT JOIN regions r ON r.id = c.region_id"}
  ]

  # GROUP BY over a fan-out join: its hidden join stage is keyed (r.id,
  # c.id, o.id), and the grouping counts what repeats. The target's own
  # columns, then the query (the target also holds hidden state).
  @grouped {"region_totals",
            "TRANSFORM region_totals FROM regions r LEFT JOIN customers c " <>
              "ON c.region_id = r.id LEFT JOIN orders o ON o.customer_id = c.id " <>
              "SELECT r.label, count(o.id) AS orders, sum(o.amount) AS total GROUP BY r.label",
            "SELECT r.label, count(o.id), sum(o.amount) FROM regions r " <>
              "LEFT JOIN customers c ON c.region_id = r.id " <>
              "LEFT JOIN orders o ON o.customer_id = c.id GROUP BY r.label"}

  setup do: JoinWorkload.seeded_database!("fan_out_differential", "fan-out join differential")

  defp assert_equal(handle, pg, seed) do
    context = "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"
    assert_all_equal(handle, pg, @transforms, context)
    {name, _, query} = @grouped

    assert differences(pg, "SELECT label, orders, total FROM #{name}", query) == "0",
           "#{name} differs (#{context})"
  end

  defp define_every!(handle), do: define_all!(handle, @transforms ++ [@grouped])

  test "each shape has the key its rows need", %{url: url, pg: pg} do
    {t, t2} = Handles.fleet!(url, [staging: true, drain_threads: 1], [])
    define_all!(t, @transforms)
    converge!(t)

    keys = fn name ->
      SimplePG.query!(pg, """
      SELECT string_agg(a.attname, ',' ORDER BY k.n)
      FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(attnum, n), pg_attribute a
      WHERE i.indrelid = 'public.#{name}'::regclass AND i.indisunique
        AND a.attrelid = i.indrelid AND a.attnum = k.attnum
      """)
      |> hd()
      |> hd()
    end

    assert keys.("customer_orders") == "c.id,o.id"
    assert keys.("orders_of_customers") == "order_id"
    assert keys.("orders_right") == "c.id,o.id"
    assert keys.("neighbours") == "a.id,b.id"
    assert keys.("region_orders") == "r.id,c.id,o.id"
    # the root's key first, then the others' in the order they are written
    assert keys.("full_then_inner") == "g.id,o.id,c.id"
    assert keys.("full_pairs") == "c.id=o.customer_id,c.id,o.id"
    Trellis.shutdown(t)
    Trellis.shutdown(t2)
  end

  test "side units: an order's own row, and its customer's row of NULLs as its orders come " <>
         "and go",
       %{url: url, pg: pg} do
    {t, t2} = Handles.fleet!(url, [staging: true, drain_threads: 1], [])

    side =
      Enum.filter(@transforms, fn {name, _, _} -> name in ~w(customer_orders orders_right) end)

    define_all!(t, side)
    converge!(t)

    # One input repeats under the root: each order is a unit of its own.
    assert SimplePG.query!(
             pg,
             "SELECT target_name, side_units FROM trellis.transforms ORDER BY target_name"
           ) == [["customer_orders", "t"], ["orders_right", "t"]]

    steps = [
      # a customer with no order: one row of NULLs
      "INSERT INTO customers VALUES (900001, 'lonely', 1, NULL)",
      # its first order replaces that row
      "INSERT INTO orders VALUES (900001, 900001, NULL, 5, 'first')",
      # a second, then the first moves to another customer
      "INSERT INTO orders VALUES (900002, 900001, NULL, 6, 'second')",
      "UPDATE orders SET customer_id = 1 WHERE id = 900001",
      # its last order leaves: the row of NULLs is back
      "UPDATE orders SET customer_id = 2 WHERE id = 900002",
      # an order's key changes under its customer, then comes back
      "UPDATE orders SET customer_id = 900001 WHERE id = 900002",
      "UPDATE orders SET id = 900003 WHERE id = 900002",
      # the last order deleted, then the customer
      "DELETE FROM orders WHERE id = 900003",
      "DELETE FROM customers WHERE id = 900001"
    ]

    for {step, n} <- Enum.with_index(steps, 1) do
      SimplePG.query!(pg, step)
      converge!(t)
      assert_all_equal(t, pg, side, "after step #{n}: #{step}")
    end

    Trellis.shutdown(t)
    Trellis.shutdown(t2)
  end

  test "4 writers over all three tables, 5000 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_every!(a)
    converge!(a)
    assert_equal(a, pg, seed)

    committed =
      url |> JoinWorkload.writers(seed, 4, 1250) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 4_000, "only #{committed} of 5000 writes committed"
    assert_equal(b, pg, seed)

    for {name, _, _} <- @transforms do
      assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while fan-out pages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    b = JoinWorkload.staging_crash_round!(url, pg, seed, &define_every!/1)
    assert_equal(b, pg, seed)
    Trellis.shutdown(b)
  end
end
