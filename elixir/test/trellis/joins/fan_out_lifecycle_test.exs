defmodule Trellis.Joins.FanOutLifecycleTest do
  # Everything that works for the older kinds works for a fan-out join (a
  # join whose rows repeat under its root row, spec/engine.md "Joins of
  # every shape"), through the real port and PostgreSQL: ALTER TRANSFORM
  # columns under writers, PAUSE/RESUME of one column, quarantine and held
  # keys charged to root units, self-check (full and sample) clean and then
  # finding a row corrupted by hand, source index gaps with their fix, a
  # transform reading a fan-out target, a dump loaded into a new database,
  # a partitioned "many" side with rows moving between partitions, and a
  # SIGKILL of the port during the first build. Every check is exact
  # equality with the definition's query. Seeded writers (JoinWorkload):
  # replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  # One-to-many, LEFT from the "one" side: root customers, keyed (c.id, o.id).
  @customer_orders "TRANSFORM customer_orders FROM customers c " <>
                     "LEFT JOIN orders o ON o.customer_id = c.id SELECT c.name, o.amount"
  @join "FROM customers c LEFT JOIN orders o ON o.customer_id = c.id"
  @query "SELECT c.id, o.id, c.name, o.amount #{@join}"

  # RIGHT: every customer, each of its orders or one row of NULLs.
  @orders_right "TRANSFORM orders_right FROM orders o RIGHT JOIN customers c " <>
                  "ON o.customer_id = c.id SELECT c.name, o.note"
  @orders_right_query "SELECT c.id, o.id, c.name, o.note FROM orders o " <>
                        "RIGHT JOIN customers c ON o.customer_id = c.id"

  # Many-to-many self join: customers of one region.
  @neighbours "TRANSFORM neighbours FROM customers a JOIN customers b " <>
                "ON b.region_id = a.region_id SELECT a.name, b.name AS other"
  @neighbours_query "SELECT a.id, b.id, a.name, b.name FROM customers a " <>
                      "JOIN customers b ON b.region_id = a.region_id"

  setup do: JoinWorkload.seeded_database!("fan_out_lifecycle", "fan-out lifecycle")

  defp start!(url, opts \\ [staging: true, drain_threads: 2]) do
    :ok = Trellis.migrate(Handles.connect!(url))
    Handles.connect!(url, [timeout_ms: 30_000] ++ opts)
  end

  defp define!(t, statement), do: {:ok, {:transform_defined, _}} = Trellis.define(t, statement)

  defp status!(t, name) do
    {:ok, status} = Trellis.status(t, name)
    status
  end

  defp equal!(pg, target, query, context) do
    assert differences(pg, target, query) == "0", "#{target} differs (#{context})"
  end

  # `rounds` writes by each of `count` writers over all three tables, started
  # now; returns once some have committed (so what follows runs under them).
  defp start_writers(url, seed, count, rounds) do
    counter = :counters.new(1, [])

    tasks =
      for w <- 1..count do
        Task.async(fn -> JoinWorkload.run(url, w, seed, rounds, counter) end)
      end

    assert eventually(fn -> :counters.get(counter, 1) >= 50 end)
    tasks
  end

  defp finish_writers(tasks), do: tasks |> Task.await_many(300_000) |> Enum.sum()

  test "ALTER TRANSFORM ADD, ALTER and DROP COLUMN of a one-to-many and a self join, " <>
         "under writers",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @neighbours)
    converge!(t)
    context = "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"
    writers = start_writers(url, seed, 2, 600)

    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM customer_orders ADD COLUMN o.note AS note")
    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM neighbours ADD COLUMN b.email AS email")

    {:ok, _} =
      Trellis.apply(t, "ALTER TRANSFORM customer_orders ALTER COLUMN amount AS o.amount * 2")

    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM customer_orders DROP COLUMN name")
    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM neighbours DROP COLUMN name")
    assert finish_writers(writers) > 800
    converge!(t, 240_000)

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", amount, note FROM customer_orders},
      "SELECT c.id, o.id, o.amount * 2, o.note #{@join}",
      context
    )

    equal!(
      pg,
      ~s{SELECT "a.id", "b.id", other, email FROM neighbours},
      "SELECT a.id, b.id, b.name, b.email FROM customers a " <>
        "JOIN customers b ON b.region_id = a.region_id",
      context
    )

    # The key is untouched by the column changes; the ALTERs are in the
    # definitions; a key column cannot be dropped.
    assert SimplePG.scalar!(pg, """
           SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
           WHERE attrelid = 'customer_orders'::regclass AND attnum > 0 AND NOT attisdropped
           """) == "c.id,o.id,amount,note"

    {:ok, definitions} = Trellis.definitions(t)
    shown = Enum.find(definitions, &(&1.name == "customer_orders")).statement
    assert shown =~ "o.amount * 2 AS amount"
    assert shown =~ "o.note AS note"
    refute shown =~ "c.name"

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.apply(t, ~s{ALTER TRANSFORM customer_orders DROP COLUMN "o.id"})

    # And maintenance goes on with the new columns.
    SimplePG.query!(pg, "UPDATE orders SET note = 'late', amount = 7 WHERE customer_id = 5")
    SimplePG.query!(pg, "UPDATE customers SET email = 'moved@x' WHERE id = 6")
    converge!(t)

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", amount, note FROM customer_orders},
      "SELECT c.id, o.id, o.amount * 2, o.note #{@join}",
      "after the ALTERs"
    )

    equal!(
      pg,
      ~s{SELECT "a.id", "b.id", other, email FROM neighbours},
      "SELECT a.id, b.id, b.name, b.email FROM customers a " <>
        "JOIN customers b ON b.region_id = a.region_id",
      "after the ALTERs"
    )
  end

  test "PAUSE and RESUME of one column of a one-to-many and a RIGHT join",
       %{url: url, pg: pg, seed: seed} do
    t = start!(url)
    define!(t, @customer_orders)
    define!(t, @orders_right)
    converge!(t)

    {:ok, :paused} = Trellis.apply(t, "PAUSE TRANSFORM customer_orders.amount")
    {:ok, :paused} = Trellis.apply(t, "PAUSE TRANSFORM orders_right.note")

    SimplePG.query!(pg, """
    UPDATE orders SET amount = amount + 1000, note = 'paused' WHERE customer_id <= 40;
    UPDATE customers SET name = 'renamed ' || id WHERE id % 3 = 0;
    INSERT INTO orders VALUES (900001, 7, NULL, 55, 'new');
    DELETE FROM orders WHERE customer_id = 9;
    """)

    converge!(t)
    # The live column and the key follow; the paused column does not.
    equal!(pg, ~s{SELECT "c.id", "o.id", name FROM customer_orders},
           "SELECT c.id, o.id, c.name #{@join}", "paused")

    equal!(
      pg,
      ~s{SELECT "c.id", "o.id", name FROM orders_right},
      "SELECT c.id, o.id, c.name FROM orders o RIGHT JOIN customers c ON o.customer_id = c.id",
      "paused"
    )

    assert differences(pg, "TABLE customer_orders", @query) != "0"
    assert differences(pg, "TABLE orders_right", @orders_right_query) != "0"
    status = status!(t, "customer_orders")
    assert Enum.find(status.columns, &(&1.name == "amount")).state == :paused
    assert Enum.find(status.columns, &(&1.name == "name")).state == :live

    writers = start_writers(url, seed, 2, 400)

    assert {:ok, {:resumed, ["customer_orders.amount"]}} =
             Trellis.apply(t, "RESUME TRANSFORM customer_orders.amount")

    assert {:ok, {:resumed, ["orders_right.note"]}} =
             Trellis.apply(t, "RESUME TRANSFORM orders_right.note")

    assert finish_writers(writers) > 500
    converge!(t, 240_000)
    context = "resumed; seed #{seed}"
    equal!(pg, "TABLE customer_orders", @query, context)
    equal!(pg, "TABLE orders_right", @orders_right_query, context)
    assert status!(t, "customer_orders").columns |> Enum.all?(&(&1.state == :live))
  end
end
