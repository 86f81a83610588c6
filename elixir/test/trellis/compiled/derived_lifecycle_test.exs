defmodule Trellis.Compiled.DerivedLifecycleTest do
  # Queries in FROM and WITH queries (spec/grammar.md section 14) through
  # the port: each query a hidden stage the statement reads as a table;
  # definitions/1 and the dump give the statement as written, status and
  # self-check see one transform, PAUSE/RESUME/DROP act on it (DROP removes
  # the hidden stages and their targets), ALTER is refused with the fix.
  # WITH RECURSIVE, data-modifying WITH queries, LATERAL, ORDER BY and LIMIT
  # inside a query, and the rest, are refused by name with the fix, and
  # create nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM spenders WITH totals AS (FROM orders o SELECT o.customer_id, " <>
               "sum(o.amount) AS total, count(*) AS n WHERE o.amount IS NOT NULL " <>
               "GROUP BY o.customer_id) " <>
               "FROM (FROM customers c SELECT c.id, c.name, c.region_id " <>
               "WHERE c.region_id IS NOT NULL) AS a JOIN totals t ON a.id = t.customer_id " <>
               "SELECT a.name, a.region_id, t.total, t.n WHERE t.n > 1"
  @columns "name, region_id, total, n"
  @query "SELECT a.name, a.region_id, t.total, t.n FROM (SELECT id, name, region_id " <>
           "FROM customers WHERE region_id IS NOT NULL) a JOIN (SELECT customer_id, " <>
           "sum(amount) AS total, count(*) AS n FROM orders WHERE amount IS NOT NULL " <>
           "GROUP BY customer_id) t ON a.id = t.customer_id WHERE t.n > 1"

  setup do
    %{url: url, pg: pg} = Database.open!("derived_lifecycle")
    JoinWorkload.create_tables!(pg, 600)
    SimplePG.query!(pg, "UPDATE orders SET amount = NULL WHERE id % 9 = 0")
    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp hidden_tables(pg) do
    SimplePG.scalar!(pg, """
    SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'trellis' AND c.relname LIKE '\\_\\_trellis\\_%' AND c.relkind = 'r'
    """)
  end

  test "one transform over its hidden queries: definition as written, writes followed, DROP",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "spenders"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM spenders", @query) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM spenders") != "0"

    # One transform; the WITH query and the query in FROM are its stages.
    assert SimplePG.query!(
             pg,
             "SELECT target_name FROM trellis.transforms WHERE owner_id IS NULL"
           ) ==
             [["spenders"]]

    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM trellis.transforms s JOIN trellis.transforms u
             ON s.owner_id = u.id WHERE u.target_name = 'spenders'
             AND s.target_name LIKE '\\_\\_trellis\\_derived\\_%'
           """) == "2"

    assert {:ok, defs} = Trellis.definitions(t)

    assert [%Trellis.Definition{name: "spenders", statement: shown}] =
             Enum.filter(defs, &(&1.name == "spenders"))

    assert shown ==
             "TRANSFORM spenders WITH totals AS (FROM orders AS o SELECT o.customer_id AS " <>
               "customer_id, sum(o.amount) AS total, count(*) AS n WHERE o.amount IS NOT NULL " <>
               "GROUP BY o.customer_id) FROM (FROM customers AS c SELECT c.id AS id, c.name AS " <>
               "name, c.region_id AS region_id WHERE c.region_id IS NOT NULL) AS a JOIN totals " <>
               "AS t ON a.id = t.customer_id SELECT a.name AS name, a.region_id AS region_id, " <>
               "t.total AS total, t.n AS n WHERE t.n > 1"

    {:ok, dump} = Trellis.dump_definitions_sql(t)
    # The user's transform's row carries the statement as written (the
    # stages' rows carry their own, as for every compiled statement).
    assert dump =~
             "'public', 'spenders', 'join', 'TRANSFORM spenders WITH totals AS (FROM " <>
               "orders AS o"

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "spenders")

    # Rows move in and out of the query in FROM's WHERE and between the WITH
    # query's groups; NULLs come and go; a group's count crosses the
    # statement's WHERE.
    SimplePG.query!(pg, """
    UPDATE customers SET region_id = NULL WHERE id % 5 = 0;
    UPDATE customers SET region_id = 3 WHERE id % 10 = 5;
    UPDATE customers SET name = 'renamed ' || id WHERE id % 7 = 0;
    UPDATE orders SET customer_id = customer_id + 1 WHERE id % 4 = 0;
    UPDATE orders SET amount = NULL WHERE id % 11 = 0;
    UPDATE orders SET customer_id = NULL WHERE id % 13 = 0;
    DELETE FROM orders WHERE id % 6 = 0;
    DELETE FROM customers WHERE id % 17 = 0;
    INSERT INTO orders VALUES (5001, 3, NULL, 10, 'x'), (5002, 3, NULL, NULL, 'y');
    """)

    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM spenders", @query) == "0"

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "spenders", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM spenders")
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 3 = 0")
    SimplePG.query!(pg, "UPDATE customers SET region_id = NULL WHERE id % 8 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM spenders")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM spenders", @query) == "0"

    for alter <- [
          "ALTER TRANSFORM spenders ADD COLUMN a.id AS id",
          "ALTER TRANSFORM spenders DROP COLUMN n",
          "ALTER TRANSFORM spenders ALTER COLUMN n AS 1"
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.apply(t, alter)

      assert message =~ "ALTER TRANSFORM cannot change transform spenders", message
      assert message =~ "its queries in FROM or WITH", message
      assert message =~ "DROP TRANSFORM it and define it again", message
    end

    assert hidden_tables(pg) == "2"
    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM spenders")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM spenders")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('spenders') IS NULL") == "t"
    assert hidden_tables(pg) == "0"
  end

  test "a WITH query read twice is one stage read twice; a grouping over a query in FROM",
       %{trellis: t, pg: pg} do
    pairs =
      "TRANSFORM pairs WITH big AS (FROM orders o SELECT o.id, o.customer_id, o.amount " <>
        "WHERE o.amount > 100) FROM big p JOIN customers c ON p.customer_id = c.id " <>
        "JOIN big q ON c.id = q.customer_id SELECT p.id AS p_id, q.id AS q_id, c.name"

    pairs_query =
      "SELECT p.id, q.id, c.name FROM (SELECT * FROM orders WHERE amount > 100) p " <>
        "JOIN customers c ON p.customer_id = c.id " <>
        "JOIN (SELECT * FROM orders WHERE amount > 100) q ON c.id = q.customer_id"

    grouped =
      "TRANSFORM by_customer FROM (FROM orders o SELECT o.customer_id, o.amount " <>
        "WHERE o.note LIKE 'order 1%') AS s SELECT s.customer_id, count(*) AS n, " <>
        "sum(s.amount) AS total GROUP BY s.customer_id"

    grouped_query =
      "SELECT customer_id, count(*), sum(amount) FROM orders WHERE note LIKE 'order 1%' " <>
        "GROUP BY customer_id"

    assert {:ok, {:transform_defined, "pairs"}} = Trellis.define(t, pairs)
    assert {:ok, {:transform_defined, "by_customer"}} = Trellis.define(t, grouped)
    converge!(t)
    assert differences(pg, "SELECT p_id, q_id, name FROM pairs", pairs_query) == "0"
    assert differences(pg, "SELECT customer_id, n, total FROM by_customer", grouped_query) == "0"

    # One hidden stage for big, read by both of the statement's references.
    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM trellis.transforms s JOIN trellis.transforms u
             ON s.owner_id = u.id WHERE u.target_name = 'pairs'
             AND s.target_name LIKE '\\_\\_trellis\\_derived\\_%'
           """) == "1"

    SimplePG.query!(pg, """
    UPDATE orders SET amount = 150 WHERE id % 10 = 1;
    UPDATE orders SET amount = 1 WHERE id % 10 = 2 AND amount > 100;
    UPDATE orders SET customer_id = NULL WHERE id % 15 = 0;
    UPDATE orders SET note = 'order 1x' WHERE id % 8 = 0;
    DELETE FROM orders WHERE id % 12 = 0;
    UPDATE customers SET name = NULL WHERE id % 9 = 0;
    """)

    converge!(t)
    assert differences(pg, "SELECT p_id, q_id, name FROM pairs", pairs_query) == "0"
    assert differences(pg, "SELECT customer_id, n, total FROM by_customer", grouped_query) == "0"

    for name <- ["pairs", "by_customer"] do
      {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM #{name}")
      {:ok, _} = Trellis.apply(t, "DROP TRANSFORM #{name}")
    end

    assert hidden_tables(pg) == "0"
  end

  test "queries that compile to stages of their own: a grouped LEFT join, HAVING (Q13, Q18)",
       %{trellis: t, pg: pg} do
    # TPC-H Q13's shape: a grouping over a grouped LEFT join in FROM.
    q13 =
      "TRANSFORM order_counts FROM (FROM customers c LEFT JOIN orders o ON c.id = o.customer_id " <>
        "SELECT c.id, count(o.id) AS n GROUP BY c.id) AS k SELECT k.n, count(*) AS customers " <>
        "GROUP BY k.n"

    q13_query =
      "SELECT n, count(*) FROM (SELECT c.id, count(o.id) AS n FROM customers c " <>
        "LEFT JOIN orders o ON c.id = o.customer_id GROUP BY c.id) k GROUP BY n"

    # Q18's: a WITH query with HAVING, joined.
    q18 =
      "TRANSFORM busy_customers WITH busy AS (FROM orders x SELECT x.customer_id, " <>
        "sum(x.amount) AS total GROUP BY x.customer_id HAVING sum(x.amount) > 200) " <>
        "FROM customers c JOIN busy b ON c.id = b.customer_id SELECT c.name, b.total"

    q18_query =
      "SELECT c.name, b.total FROM customers c JOIN (SELECT customer_id, sum(amount) AS total " <>
        "FROM orders GROUP BY customer_id HAVING sum(amount) > 200) b ON c.id = b.customer_id"

    assert {:ok, {:transform_defined, "order_counts"}} = Trellis.define(t, q13)
    assert {:ok, {:transform_defined, "busy_customers"}} = Trellis.define(t, q18)
    converge!(t)
    assert differences(pg, "SELECT n, customers FROM order_counts", q13_query) == "0"
    assert differences(pg, "SELECT name, total FROM busy_customers", q18_query) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM busy_customers") != "0"

    assert SimplePG.query!(
             pg,
             "SELECT target_name FROM trellis.transforms WHERE owner_id IS NULL ORDER BY 1"
           ) == [["busy_customers"], ["order_counts"]]

    SimplePG.query!(pg, """
    UPDATE orders SET customer_id = customer_id + 3 WHERE id % 4 = 0;
    UPDATE orders SET amount = amount * 3 WHERE id % 5 = 0;
    UPDATE orders SET amount = NULL WHERE id % 7 = 0;
    DELETE FROM orders WHERE id % 6 = 0;
    DELETE FROM customers WHERE id % 13 = 0;
    INSERT INTO customers VALUES (900, 'new', 1, 'new@x');
    """)

    converge!(t)
    assert differences(pg, "SELECT n, customers FROM order_counts", q13_query) == "0"
    assert differences(pg, "SELECT name, total FROM busy_customers", q18_query) == "0"

    for name <- ["order_counts", "busy_customers"] do
      {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, name, mode: :full)
      assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)
      {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM #{name}")
      {:ok, _} = Trellis.apply(t, "DROP TRANSFORM #{name}")
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert hidden_tables(pg) == "0"
  end

  test "the forms Trellis cannot keep are refused by name with the fix, creating nothing",
       %{trellis: t, pg: pg} do
    cases = [
      {"TRANSFORM r WITH RECURSIVE x AS (FROM customers SELECT id) FROM x SELECT id",
       :unsupported, "WITH RECURSIVE is not supported"},
      {"TRANSFORM r WITH x AS (DELETE FROM customers RETURNING id) FROM x SELECT id",
       :unsupported,
       "a data-modifying WITH query (INSERT, UPDATE, DELETE, MERGE) is not supported: a " <>
         "transform only reads"},
      {"TRANSFORM r FROM customers c JOIN LATERAL (FROM orders o SELECT o.id) l ON l.id = c.id " <>
         "SELECT c.id", :unsupported, "LATERAL is not supported"},
      {"TRANSFORM r FROM LATERAL (FROM orders o SELECT o.id) l SELECT l.id", :unsupported,
       "LATERAL is not supported"},
      {"TRANSFORM r FROM (FROM orders o SELECT o.id ORDER BY o.id) s SELECT s.id", :unsupported,
       "ORDER BY inside a query in FROM or WITH is not supported"},
      {"TRANSFORM r WITH x AS (FROM orders o SELECT o.id LIMIT 10) FROM x SELECT id",
       :unsupported, "LIMIT, OFFSET and FETCH inside a query in FROM or WITH are not supported"},
      {"TRANSFORM r WITH x AS (FROM orders SELECT id) FROM customers SELECT id", :unsupported,
       "WITH query x is never read"},
      {"TRANSFORM r FROM (SELECT id FROM orders) s SELECT s.id", :validation,
       "a query in parentheses is written FROM first"},
      {"TRANSFORM r FROM (FROM orders SELECT id) SELECT id", :validation,
       "a query in FROM needs a name"},
      {"TRANSFORM r FROM (FROM orders o SELECT o.nope) AS s SELECT s.nope", :validation,
       "the query in FROM (AS s)"},
      {"TRANSFORM r WITH x AS (FROM orders o SELECT o.id) FROM x SELECT x.nope", :validation,
       "nope"},
      {"TRANSFORM r WITH x AS (FROM orders o SELECT random() AS v) FROM x SELECT v", :validation,
       "volatile"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(t, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      refute message =~ "__trellis", message
      assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
      assert SimplePG.scalar!(pg, "SELECT to_regclass('r') IS NULL") == "t"
      assert hidden_tables(pg) == "0"
    end
  end
end
