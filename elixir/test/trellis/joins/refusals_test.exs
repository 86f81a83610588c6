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
    %{pg: pg, trellis: trellis}
  end

  defp nothing_created(pg), do: Trellis.Test.Targets.assert_nothing_created(pg)

  test "join forms Trellis does not maintain are refused by name and create nothing",
       %{pg: pg, trellis: trellis} do
    from = "TRANSFORM t FROM orders o "

    cases = [
      {"RIGHT JOIN customers c ON o.customer_id = c.id SELECT c.name", :unsupported,
       "RIGHT JOIN is not supported"},
      {"FULL JOIN customers c ON o.customer_id = c.id SELECT c.name", :unsupported,
       "FULL JOIN is not supported"},
      {"CROSS JOIN regions r SELECT r.label", :unsupported, "a cross join"},
      {", regions r SELECT r.label", :unsupported, "a cross join"},
      {"JOIN customers c ON o.customer_id > c.id SELECT c.name", :unsupported,
       "operator \">\" is not supported"},
      {"JOIN customers c ON o.customer_id = c.id OR o.amount = c.id SELECT c.name", :unsupported,
       "OR in a JOIN condition"},
      {"JOIN (SELECT * FROM customers) c ON o.customer_id = c.id SELECT c.name", :unsupported,
       "joining a subquery"},
      {"JOIN customers c USING (id) SELECT c.name", :unsupported, "USING is not supported"},
      {"NATURAL JOIN customers SELECT name", :unsupported, "NATURAL JOIN"},
      # Checked against the database at define: uniqueness of the joined side.
      {"JOIN customers c ON o.contact = c.name SELECT c.id AS customer", :validation,
       ~s{CREATE UNIQUE INDEX ON "public"."customers" ("name")}},
      {"JOIN customers c ON o.customer_id = c.id JOIN regions r ON r.code = c.name " <>
         "SELECT r.label", :validation, "(\"code\"), which is not unique in public.regions"},
      {"JOIN customers c ON o.customer_id = c.region_id SELECT c.name", :validation,
       "CREATE UNIQUE INDEX ON \"public\".\"customers\" (\"region_id\")"},
      {"JOIN notes n ON o.contact = n.body SELECT n.body", :validation, "which is not unique"},
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

  test "a unique index on exactly the join columns makes the join valid", %{pg: pg, trellis: t} do
    statement =
      "TRANSFORM t FROM orders o LEFT JOIN customers c ON o.contact = c.name SELECT c.id AS cid"

    assert {:error, %Trellis.Error{code: :validation}} = Trellis.define(t, statement)
    SimplePG.query!(pg, "CREATE UNIQUE INDEX ON customers (name)")
    assert {:ok, {:transform_defined, "t"}} = Trellis.define(t, statement)
  end
end
