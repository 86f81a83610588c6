defmodule Trellis.Joins.RefusalsTest do
  # The join forms Trellis does not maintain are refused through the real
  # port with the closed error code and a message naming the form and what
  # would make it valid; a refused definition creates nothing (no target, no
  # catalog row, no capture on any table).
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("join_refusals")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, code text, label text);
    CREATE UNIQUE INDEX regions_code_partial ON regions (code) WHERE code <> '';
    CREATE TABLE customers (id int PRIMARY KEY, name text, region_id int, email text UNIQUE);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, contact text, amount int);
    CREATE TABLE notes (body text);
    """)

    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)
    %{pg: pg, trellis: trellis, url: url}
  end

  defp nothing_created(pg), do: Trellis.Test.Targets.assert_nothing_created(pg)

  test "join forms Trellis does not maintain are refused by name and create nothing",
       %{pg: pg, trellis: trellis} do
    from = "TRANSFORM t FROM orders o "

    cases = [
      # Checked by the plan: a FULL JOIN after another join, with no INNER or
      # RIGHT join after it, has neither a root nor one join value per row.
      {"JOIN customers c ON o.customer_id = c.id FULL JOIN regions r ON r.id = c.region_id " <>
         "SELECT r.label", :unsupported, "a FULL JOIN is maintained as the first join"},
      {"CROSS JOIN regions r SELECT r.label", :unsupported, "a cross join"},
      {", regions r SELECT r.label", :unsupported, "a cross join"},
      {"JOIN customers c ON o.customer_id > c.id SELECT c.name", :unsupported,
       "operator \">\" is not supported"},
      {"JOIN customers c ON o.customer_id = c.id OR o.amount = c.id SELECT c.name", :unsupported,
       "OR in a JOIN condition"},
      {"JOIN (SELECT * FROM customers) c ON o.customer_id = c.id SELECT c.name", :unsupported,
       "joining a query in parentheses"},
      {"JOIN customers c USING (id) SELECT c.name", :unsupported, "USING is not supported"},
      {"NATURAL JOIN customers SELECT name", :unsupported, "NATURAL JOIN"},
      # Checked against the database at define: a table whose rows repeat in
      # the target keys it, so it needs a key.
      {"JOIN notes n ON o.contact = n.body SELECT n.body", :validation,
       "add a primary key to public.notes"},
      {"JOIN customers c ON o.customer_id = c.nope SELECT c.name", :validation, "nope"},
      {"JOIN nowhere c ON o.customer_id = c.id SELECT c.name", :not_found, "nowhere"},
      {"JOIN customers c ON o.customer_id = c.id SELECT c.id", :validation, "is the target's key"}
    ]

    for {rest, code, words} <- cases do
      statement = from <> rest

      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(trellis, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      nothing_created(pg)
    end
  end

  test "a unique index on the join columns keeps one target row per FROM row",
       %{pg: pg, trellis: t} do
    statement =
      "TRANSFORM t FROM orders o LEFT JOIN customers c ON o.contact = c.name SELECT c.id AS cid"

    key = fn ->
      SimplePG.scalar!(pg, """
      SELECT string_agg(name, ',' ORDER BY ordinal) FROM trellis.target_key_columns
      """)
    end

    # Names may repeat, so a customer's key joins the order's in the target's.
    assert {:ok, {:transform_defined, "t"}} = Trellis.define(t, statement)
    assert key.() == "o.id,cid"
    assert {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM t")
    assert {:ok, _} = Trellis.apply(t, "DROP TRANSFORM t")
    SimplePG.query!(pg, "CREATE UNIQUE INDEX ON customers (name)")
    assert {:ok, {:transform_defined, "t"}} = Trellis.define(t, statement)
    assert key.() == "id"
  end

  # pg_ivm's `LEFT JOIN b ON a.i = b.i AND a.k = b.j` with b.i b's key: an
  # equality on a unique key already picks at most one row, so join columns
  # that include one (the primary key or a unique index's) are unique too.
  test "join columns that include a unique key make the join valid and maintained",
       %{pg: pg, url: url} do
    t = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    SimplePG.query!(pg, """
    INSERT INTO customers VALUES (1, 'ann', NULL, 'a@x'), (2, 'bob', NULL, 'b@x');
    INSERT INTO orders VALUES (10, 1, 'ann', 5), (11, 1, 'nobody', 6), (12, 2, 'bob', 7),
                              (13, NULL, 'ann', 8);
    """)

    by_key =
      "TRANSFORM t FROM orders o LEFT JOIN customers c ON o.customer_id = c.id " <>
        "AND o.contact = c.name SELECT c.email AS email, o.amount AS amount"

    by_index =
      "TRANSFORM u FROM orders o JOIN customers c ON o.contact = c.email AND o.amount = c.region_id " <>
        "SELECT c.name AS name"

    assert {:ok, {:transform_defined, "t"}} = Trellis.define(t, by_key)
    assert {:ok, {:transform_defined, "u"}} = Trellis.define(t, by_index)

    SimplePG.query!(pg, """
    UPDATE customers SET name = 'nobody' WHERE id = 1;
    UPDATE orders SET contact = 'bob' WHERE id = 13;
    UPDATE orders SET customer_id = 2 WHERE id = 13;
    INSERT INTO customers VALUES (3, 'cy', 3, 'c@x');
    INSERT INTO orders VALUES (14, 3, 'cy', 9), (15, 9, 'c@x', 3);
    DELETE FROM customers WHERE id = 2;
    """)

    Trellis.Test.Targets.converge!(t)

    expected_t =
      "SELECT o.id, c.email, o.amount FROM orders o LEFT JOIN customers c " <>
        "ON o.customer_id = c.id AND o.contact = c.name"

    expected_u =
      "SELECT o.id, c.name FROM orders o JOIN customers c ON o.contact = c.email AND o.amount = c.region_id"

    assert Trellis.Test.Targets.differences(pg, "SELECT id, email, amount FROM t", expected_t) ==
             "0"

    assert Trellis.Test.Targets.differences(pg, "SELECT id, name FROM u", expected_u) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM u") == "1"
  end
end
