defmodule Trellis.Joins.MaintenanceTest do
  # What a write to any joined table does to a join's target, through the
  # real port: a customer's rename reaches all their orders' rows; deleting
  # a region turns LEFT-joined columns NULL and drops INNER-joined rows;
  # re-pointing a foreign key moves the row; TRUNCATE of a joined table
  # rebuilds; DROP removes capture from every input once no reader is left.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 120_000

  @left "TRANSFORM order_view FROM orders o JOIN customers c ON o.customer_id = c.id " <>
          "LEFT JOIN regions r ON r.id = c.region_id " <>
          "SELECT c.name AS customer, r.label AS region, o.amount"
  @left_query "SELECT o.id, c.name, r.label, o.amount FROM orders o " <>
                "JOIN customers c ON o.customer_id = c.id LEFT JOIN regions r ON r.id = c.region_id"
  @inner "TRANSFORM order_regions FROM orders o JOIN customers c ON o.customer_id = c.id " <>
           "JOIN regions r ON r.id = c.region_id SELECT r.label AS region"

  setup do
    %{url: url, pg: pg} = Database.open!("join_maintenance")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, label text);
    CREATE TABLE customers (id int PRIMARY KEY, name text, region_id int);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    CREATE INDEX ON orders (customer_id);
    CREATE INDEX ON customers (region_id);
    INSERT INTO regions VALUES (1, 'north'), (2, 'south');
    INSERT INTO customers VALUES (1, 'ada', 1), (2, 'bob', 2), (3, 'cy', 2);
    INSERT INTO orders SELECT g, 1 + g % 3, g FROM generate_series(1, 3000) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    {:ok, {:transform_defined, _}} = Trellis.define(trellis, @left)
    {:ok, {:transform_defined, _}} = Trellis.define(trellis, @inner)
    converge!(trellis)
    %{trellis: trellis, pg: pg}
  end

  defp rows(pg, sql), do: SimplePG.scalar!(pg, sql)

  test "a customer's rename updates every one of their orders' rows", %{trellis: t, pg: pg} do
    assert rows(pg, "SELECT count(*) FROM order_view WHERE customer = 'ada'") == "1000"
    SimplePG.query!(pg, "UPDATE customers SET name = 'ada lovelace' WHERE id = 1")
    converge!(t)
    assert rows(pg, "SELECT count(*) FROM order_view WHERE customer = 'ada lovelace'") == "1000"
    assert rows(pg, "SELECT count(*) FROM order_view WHERE customer = 'ada'") == "0"
    assert differences(pg, "TABLE order_view", @left_query) == "0"
  end

  test "deleting a region: LEFT-joined columns turn NULL, INNER-joined rows go",
       %{trellis: t, pg: pg} do
    SimplePG.query!(pg, "DELETE FROM regions WHERE id = 2")
    converge!(t)
    assert rows(pg, "SELECT count(*) FROM order_view WHERE region IS NULL") == "2000"
    assert rows(pg, "SELECT count(*) FROM order_view") == "3000"
    assert rows(pg, "SELECT count(*) FROM order_regions") == "1000"
    assert rows(pg, "SELECT count(*) FROM order_regions WHERE region = 'south'") == "0"

    # And back: a region that appears fills them in again.
    SimplePG.query!(pg, "INSERT INTO regions VALUES (2, 'south again')")
    converge!(t)
    assert rows(pg, "SELECT count(*) FROM order_regions WHERE region = 'south again'") == "2000"
    assert differences(pg, "TABLE order_view", @left_query) == "0"
  end

  test "re-pointing a foreign key moves the row; deleting the customer drops it",
       %{trellis: t, pg: pg} do
    SimplePG.query!(pg, "UPDATE orders SET customer_id = 2 WHERE id = 3")
    SimplePG.query!(pg, "UPDATE customers SET region_id = 1 WHERE id = 3")
    converge!(t)

    assert rows(pg, "SELECT customer || '/' || region FROM order_view WHERE id = 3") ==
             "bob/south"

    assert rows(pg, "SELECT region FROM order_regions WHERE id = 2") == "north"
    SimplePG.query!(pg, "DELETE FROM customers WHERE id = 1")
    converge!(t)
    assert rows(pg, "SELECT count(*) FROM order_view WHERE customer = 'ada'") == "0"
    assert rows(pg, "SELECT count(*) FROM order_view") == "2001"
    assert differences(pg, "TABLE order_view", @left_query) == "0"
  end

  test "TRUNCATE of a joined table rebuilds its readers", %{trellis: t, pg: pg} do
    SimplePG.query!(pg, "TRUNCATE regions")
    converge!(t)
    assert rows(pg, "SELECT count(*) FROM order_regions") == "0"
    assert rows(pg, "SELECT count(*) FROM order_view WHERE region IS NOT NULL") == "0"
    assert differences(pg, "TABLE order_view", @left_query) == "0"
  end

  test "DROP removes capture from every input once its last reader goes", %{trellis: t, pg: pg} do
    triggers = fn table ->
      rows(
        pg,
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = '#{table}'::regclass " <>
          "AND tgname LIKE 'trellis%'"
      )
    end

    for name <- ["order_view", "order_regions"] do
      {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM #{name}")
    end

    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM order_regions")
    # order_view still reads all three.
    assert triggers.("regions") != "0"
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM order_view")

    for table <- ["orders", "customers", "regions"] do
      assert triggers.(table) == "0", "capture left on #{table}"
    end

    assert rows(pg, "SELECT count(*) FROM trellis.sources") == "0"
  end
end
