defmodule Trellis.Compiled.SubqueryLifecycleTest do
  # A statement with subqueries in WHERE runs as a hidden grouping per
  # subquery and the user's statement joined to their targets, and a user
  # sees one transform: the definition as written, refusals that name the
  # subquery (never a hidden part), ALTER refused with the fix, DROP taking
  # every part. Each form that is not compiled is refused by name with its
  # fix, and creates nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM open_orders FROM orders o SELECT o.id, o.total " <>
               "WHERE o.total > 0 AND EXISTS (SELECT 1 FROM lineitem l " <>
               "WHERE l.order_id = o.id AND l.shipped IS NULL) " <>
               "AND o.total > (SELECT 2 * avg(l.qty) FROM lineitem l WHERE l.order_id = o.id)"
  @query "SELECT id, total FROM orders o WHERE o.total > 0 AND EXISTS (SELECT 1 FROM lineitem l " <>
           "WHERE l.order_id = o.id AND l.shipped IS NULL) " <>
           "AND o.total > (SELECT 2 * avg(l.qty) FROM lineitem l WHERE l.order_id = o.id)"

  setup do
    %{url: url, pg: pg} = Database.open!("subquery_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, total int);
    CREATE TABLE lineitem (id int PRIMARY KEY, order_id int, qty int, shipped date);
    CREATE TABLE blocked (customer_id int);
    INSERT INTO orders SELECT g, g % 7, g % 50 FROM generate_series(1, 200) g;
    INSERT INTO lineitem SELECT g, 1 + g % 210, g % 13,
      CASE WHEN g % 3 = 0 THEN NULL ELSE date '2026-01-01' END FROM generate_series(1, 900) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp parts(pg) do
    SimplePG.query!(pg, "SELECT target_name FROM trellis.transforms ORDER BY id")
    |> Enum.map(&hd/1)
  end

  test "one transform: definition as written, writes followed, ALTER refused, DROP takes all",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "open_orders"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT id, total FROM open_orders", @query) == "0"

    assert [a, b, "open_orders"] = parts(pg)
    assert a =~ ~r/^__trellis_sub_\d+$/ and b =~ ~r/^__trellis_sub_\d+$/

    assert {:ok, [%Trellis.Definition{name: "open_orders", statement: shown, status: :live}]} =
             Trellis.definitions(t)

    assert shown =~
             "EXISTS (SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.shipped IS NULL)"

    refute shown =~ "__trellis"

    SimplePG.query!(pg, """
    UPDATE lineitem SET shipped = NULL WHERE id % 5 = 0;
    UPDATE lineitem SET qty = qty + 7 WHERE id % 4 = 0;
    DELETE FROM lineitem WHERE id % 11 = 0;
    UPDATE orders SET total = total + 9 WHERE id % 3 = 0;
    INSERT INTO lineitem VALUES (5001, 7, NULL, NULL), (5002, NULL, 3, NULL);
    """)

    converge!(t)
    assert differences(pg, "SELECT id, total FROM open_orders", @query) == "0"

    # The statement once in the dump, as written.
    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "l.order_id = o.id AND l.shipped IS NULL")) == 2

    # No hidden part can be addressed alone.
    for hidden <- [a, b],
        result <- [Trellis.status(t, hidden), Trellis.apply(t, "PAUSE TRANSFORM #{hidden}")] do
      assert {:error, %Trellis.Error{code: :not_found, message: message}} = result
      assert message =~ "hidden stage of transform open_orders"
    end

    # Self-check is clean, and finds a wrong row of the user's target.
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "open_orders", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    SimplePG.query!(
      pg,
      "UPDATE open_orders SET total = -1 WHERE id = (SELECT min(id) FROM open_orders)"
    )

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "open_orders", mode: :full)

    assert %{state: :done, report: %{outcome: :diverged, divergence_count: 1}} =
             await_self_check!(t, id)

    # Paused, every part is; written while paused, resumed, it catches up.
    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM open_orders")

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms WHERE status = 'paused'") ==
             "3"

    SimplePG.query!(pg, "UPDATE lineitem SET shipped = NULL WHERE id % 7 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM open_orders")
    :ok = Trellis.request_backfill(t, "open_orders")
    converge!(t)
    assert differences(pg, "SELECT id, total FROM open_orders", @query) == "0"

    assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
             Trellis.apply(t, "ALTER TRANSFORM open_orders ADD COLUMN o.customer_id AS c")

    assert message =~ "compiled from its subqueries in WHERE"
    assert message =~ "DROP TRANSFORM it and define it again"

    assert {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM open_orders")
    assert {:ok, _} = Trellis.apply(t, "DROP TRANSFORM open_orders")
    assert parts(pg) == []
  end

  test "a grouped statement with EXISTS (TPC-H Q4's shape) checks clean", %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM late_counts FROM orders o SELECT o.customer_id, count(*) AS n WHERE EXISTS " <>
        "(SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.shipped IS NULL) " <>
        "GROUP BY o.customer_id"

    query =
      "SELECT customer_id, count(*) FROM orders o WHERE EXISTS (SELECT 1 FROM lineitem l " <>
        "WHERE l.order_id = o.id AND l.shipped IS NULL) GROUP BY customer_id"

    assert {:ok, {:transform_defined, "late_counts"}} = Trellis.define(t, statement)
    converge!(t)
    assert differences(pg, "SELECT customer_id, n FROM late_counts", query) == "0"
    assert [sub, join, "late_counts"] = parts(pg)
    assert sub =~ ~r/^__trellis_sub_/ and join =~ ~r/^__trellis_join_/

    SimplePG.query!(pg, "UPDATE lineitem SET shipped = now() WHERE id % 4 = 1")
    converge!(t)
    assert differences(pg, "SELECT customer_id, n FROM late_counts", query) == "0"
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "late_counts", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    assert {:error, %Trellis.Error{code: :unsupported}} =
             Trellis.apply(t, "ALTER TRANSFORM late_counts ADD COLUMN max(o.total) AS m")
  end

  test "NOT IN over a table that empties and gains a NULL, read through the FROM table's copy",
       %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM free_orders FROM orders o SELECT o.id, o.customer_id " <>
        "WHERE o.customer_id NOT IN (SELECT customer_id FROM blocked)"

    query =
      "SELECT id, customer_id FROM orders o WHERE o.customer_id NOT IN " <>
        "(SELECT customer_id FROM blocked)"

    assert {:ok, {:transform_defined, "free_orders"}} = Trellis.define(t, statement)
    assert [m, totals, rows, "free_orders"] = parts(pg)
    assert m =~ ~r/^__trellis_sub_/ and totals =~ ~r/^__trellis_sub_/
    assert rows =~ ~r/^__trellis_rows_/

    # Empty: every order, also those with a NULL customer. Then a NULL
    # selected: none. Then only values: the orders of other customers.
    for write <- [
          "UPDATE orders SET customer_id = NULL WHERE id % 10 = 0",
          "INSERT INTO blocked VALUES (1), (NULL)",
          "DELETE FROM blocked WHERE customer_id IS NULL; INSERT INTO blocked VALUES (2)",
          "DELETE FROM blocked"
        ] do
      SimplePG.query!(pg, write)
      converge!(t)
      assert differences(pg, "SELECT id, customer_id FROM free_orders", query) == "0", write
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM free_orders") == "200"
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "free_orders", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)
    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM free_orders")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM free_orders")
    assert parts(pg) == []
  end

  test "a grouped statement with an uncorrelated comparison follows its one-row grouping",
       %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM above_counts FROM orders o SELECT o.customer_id, count(*) AS n, " <>
        "sum(o.total) AS total WHERE o.total > (SELECT avg(total) FROM orders) " <>
        "GROUP BY o.customer_id"

    query =
      "SELECT customer_id, count(*), sum(total) FROM orders o " <>
        "WHERE o.total > (SELECT avg(total) FROM orders) GROUP BY customer_id"

    assert {:ok, {:transform_defined, "above_counts"}} = Trellis.define(t, statement)
    assert [_, rows, join, "above_counts"] = parts(pg)
    assert rows =~ ~r/^__trellis_rows_/ and join =~ ~r/^__trellis_join_/

    for write <- [
          "SELECT 1",
          "UPDATE orders SET total = total * 3 WHERE id % 9 = 0",
          "DELETE FROM orders WHERE total > 100",
          "INSERT INTO orders SELECT g, g % 5, NULL FROM generate_series(300, 320) g"
        ] do
      SimplePG.query!(pg, write)
      converge!(t)

      assert differences(pg, "SELECT customer_id, n, total FROM above_counts", query) == "0",
             write
    end

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "above_counts", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)
  end

  test "HAVING and an expression over aggregates with a subquery: four stages, one transform",
       %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM busy FROM orders o SELECT o.customer_id, 100 * sum(o.total) / count(*) AS mean " <>
        "WHERE NOT EXISTS (SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.qty > 10) " <>
        "GROUP BY o.customer_id HAVING count(*) > 20"

    query =
      "SELECT customer_id, 100 * sum(total) / count(*) FROM orders o WHERE NOT EXISTS " <>
        "(SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.qty > 10) " <>
        "GROUP BY customer_id HAVING count(*) > 20"

    assert {:ok, {:transform_defined, "busy"}} = Trellis.define(t, statement)
    assert [sub, join, group, "busy"] = parts(pg)
    assert sub =~ ~r/^__trellis_sub_/ and join =~ ~r/^__trellis_join_/
    assert group =~ ~r/^__trellis_group_/

    for write <- [
          "SELECT 1",
          "UPDATE lineitem SET qty = 12 WHERE id % 6 = 0",
          "DELETE FROM lineitem WHERE qty > 11"
        ] do
      SimplePG.query!(pg, write)
      converge!(t)
      assert differences(pg, "SELECT customer_id, mean FROM busy", query) == "0", write
    end

    assert {:ok, [%Trellis.Definition{statement: shown}]} = Trellis.definitions(t)
    assert shown =~ "HAVING count(*) > 20"
    assert shown =~ "NOT EXISTS (SELECT 1 FROM lineitem l"
  end

  test "a problem in a subquery's stage names the subquery, and creates nothing",
       %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM bad FROM orders o SELECT o.id WHERE EXISTS " <>
        "(SELECT 1 FROM lineitem l WHERE l.order_id = o.id AND l.nosuch > 1)"

    assert {:error, %Trellis.Error{message: message}} = Trellis.define(t, statement)
    assert message =~ "the subquery at position"
    assert message =~ "nosuch"
    refute message =~ "__trellis"
    assert_nothing_created(pg)
    assert parts(pg) == []
  end

  test "each form that is not compiled is refused by name, with the fix", %{trellis: t, pg: pg} do
    head = "TRANSFORM r FROM orders o SELECT o.id WHERE "

    for {where, expected} <- [
          {"o.total = 1 OR EXISTS (SELECT 1 FROM lineitem l WHERE l.order_id = o.id)",
           "a subquery under OR"},
          {"EXISTS (SELECT 1 FROM lineitem l WHERE l.order_id > o.id)",
           "correlated by anything but equalities"},
          {"o.total < (SELECT max(l.qty) - (SELECT 1 FROM blocked) FROM lineitem l " <>
             "WHERE l.order_id = o.id)", "a subquery inside a subquery's SELECT item"},
          {"EXISTS (SELECT 1 FROM lineitem l, blocked b WHERE l.order_id = o.id)",
           "a comma-separated FROM in a subquery"},
          {"EXISTS (SELECT 1 FROM LATERAL f(o.id) x)", "LATERAL"},
          {"o.total = ANY (SELECT qty FROM lineitem)", "ANY, SOME or ALL"},
          {"EXISTS (SELECT count(*) FROM lineitem l WHERE l.order_id = o.id)", "always true"}
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.define(t, head <> where)

      assert message =~ expected, "#{where}: #{message}"
    end

    # A subquery in a SELECT item stays refused at define, naming the fix.
    assert {:error, %Trellis.Error{message: message}} =
             Trellis.define(
               t,
               "TRANSFORM r FROM orders o SELECT o.id, (SELECT l.qty FROM lineitem l WHERE l.id = o.id) AS q"
             )

    assert message =~ "a subquery in a SELECT item is not supported"
    assert_nothing_created(pg)
  end
end
