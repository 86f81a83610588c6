defmodule Trellis.GroupBy.MaintenanceTest do
  # GROUP BY, aggregates over the whole table and SELECT DISTINCT through the
  # real port and workers: each target equals its definition's query after
  # every kind of write (group changes, NULL groups, rows leaving the WHERE,
  # deletes that empty a group, TRUNCATE), and a refused definition creates
  # nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @totals """
  TRANSFORM order_totals FROM orders
  SELECT customer_id, count(*) AS n, sum(amount) AS total, avg(amount) AS mean,
         min(placed_at) AS first, max(placed_at) AS last
  GROUP BY customer_id
  """
  @totals_query """
  SELECT customer_id, count(*), sum(amount), avg(amount), min(placed_at), max(placed_at)
  FROM orders GROUP BY customer_id
  """

  setup do
    %{url: url, pg: pg} = Database.open!("group_maintenance")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, region text, amount numeric(12,2),
                         placed_at timestamptz, paid bool);
    INSERT INTO orders
    SELECT g, nullif(g % 7, 0), CASE WHEN g % 3 = 0 THEN NULL ELSE 'r' || g % 3 END, g * 1.5,
           timestamptz '2026-01-01' + g * interval '1 hour', g % 2 = 0
    FROM generate_series(1, 200) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    %{trellis: trellis, pg: pg}
  end

  defp writes(pg) do
    SimplePG.query!(pg, """
    UPDATE orders SET customer_id = 100 + id % 5 WHERE id % 11 = 0;
    UPDATE orders SET amount = amount + 1, customer_id = NULL WHERE id % 13 = 0;
    DELETE FROM orders WHERE customer_id = 3;
    INSERT INTO orders VALUES (1000, 200, 'r9', NULL, NULL, true), (1001, NULL, NULL, 5, now(), false);
    UPDATE orders SET paid = NOT paid WHERE id % 4 = 0;
    UPDATE orders SET region = 'moved' WHERE id % 17 = 0;
    DELETE FROM orders WHERE id = 1000;
    """)
  end

  test "GROUP BY, whole-table aggregates and DISTINCT follow every write",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, @totals)

    {:ok, _} =
      Trellis.define(trellis, """
      TRANSFORM paid_by_region FROM orders o
      SELECT o.region, customer_id % 2 AS parity, count(amount) AS n, bool_and(paid) AS all_paid
      WHERE paid GROUP BY o.region, customer_id % 2
      """)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM everything FROM orders SELECT count(*) AS n, sum(amount) AS total, max(id) AS top"
      )

    {:ok, _} = Trellis.define(trellis, "TRANSFORM regions FROM orders SELECT DISTINCT region")
    converge!(trellis)

    checks = [
      {"SELECT customer_id, n, total, mean, first, last FROM order_totals", @totals_query},
      {"SELECT region, parity, n, all_paid FROM paid_by_region",
       "SELECT region, customer_id % 2, count(amount), bool_and(paid) FROM orders WHERE paid " <>
         "GROUP BY region, customer_id % 2"},
      {"SELECT n, total, top FROM everything",
       "SELECT count(*), sum(amount), max(id) FROM orders"},
      {"SELECT region FROM regions", "SELECT DISTINCT region FROM orders"}
    ]

    check = fn ->
      for {target, query} <- checks do
        assert differences(pg, target, query) == "0", target
      end
    end

    check.()
    writes(pg)
    converge!(trellis)
    check.()

    SimplePG.query!(pg, "TRUNCATE orders")
    converge!(trellis)
    check.()
    assert SimplePG.scalar!(pg, "SELECT n FROM everything") == "0"

    SimplePG.query!(pg, "INSERT INTO orders VALUES (1, 1, 'a', 2, now(), true)")
    converge!(trellis)
    check.()
  end

  test "a transform over an empty table is live at once", %{trellis: trellis, pg: pg} do
    SimplePG.query!(pg, "CREATE TABLE empty (id int PRIMARY KEY, k int)")

    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM counted FROM empty SELECT count(*) AS n, sum(k) AS s")

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "counted")
    assert SimplePG.query!(pg, "SELECT n, s FROM counted") == [["0", nil]]
  end

  # The one row of a transform without GROUP BY is upserted by every
  # recompute, so whatever removed it (an operator's DELETE of the target
  # row), the next change makes it again. It used to be updated in place,
  # which changed nothing for good once the row was gone: the one way found
  # for a whole-table target to stay wrong (see the crash test in
  # differential_test.exs).
  test "the whole-table row comes back with the next change after it went missing",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM everything FROM orders SELECT count(*) AS n, sum(amount) AS total"
      )

    converge!(trellis)
    query = "SELECT count(*), sum(amount) FROM orders"
    assert differences(pg, "SELECT n, total FROM everything", query) == "0"

    SimplePG.query!(pg, "DELETE FROM everything")
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id = 5")
    converge!(trellis)
    assert differences(pg, "SELECT n, total FROM everything", query) == "0"

    # And after a TRUNCATE (a rebuild).
    SimplePG.query!(pg, "DELETE FROM everything; TRUNCATE orders")
    converge!(trellis)
    assert differences(pg, "SELECT n, total FROM everything", query) == "0"
    assert SimplePG.scalar!(pg, "SELECT n::text FROM everything") == "0"
  end
end
