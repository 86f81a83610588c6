defmodule Trellis.GroupBy.RefusalsTest do
  # The aggregate forms Trellis does not maintain are refused through the
  # real port with the closed error code and a message naming the form and
  # what to write instead, and a refused definition creates nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_refusals")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount numeric, paid bool,
                         label text);
    CREATE FUNCTION text_add(text, text) RETURNS text LANGUAGE sql IMMUTABLE
      AS 'SELECT $1 || $2';
    CREATE AGGREGATE sum(text) (SFUNC = text_add, STYPE = text);
    INSERT INTO orders SELECT g, g % 7, g, g % 2 = 0 FROM generate_series(1, 20) g;
    """)

    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)
    %{pg: pg, trellis: trellis}
  end

  defp nothing_created(pg), do: Trellis.Test.Targets.assert_nothing_created(pg)

  test "forms Trellis does not maintain are refused by name and create nothing",
       %{pg: pg, trellis: trellis} do
    from = "TRANSFORM t FROM orders SELECT "

    cases = [
      {"count(*) FILTER (WHERE paid) AS n", :unsupported, "FILTER on an aggregate"},
      {"sum(amount) OVER (PARTITION BY customer_id) AS s", :unsupported, "window functions"},
      {"max(DISTINCT customer_id) AS n", :unsupported, "max(DISTINCT ...)"},
      {"customer_id, count(DISTINCT label) AS n, sum(DISTINCT amount) AS s GROUP BY customer_id",
       :unsupported, "a transform keeps aggregates over the distinct values of one argument"},
      {"sum(count(*)) AS n", :unsupported, "an aggregate of an aggregate"},
      {"customer_id, count(*) AS n GROUP BY customer_id HAVING sum(count(*)) > 1", :unsupported,
       "an aggregate of an aggregate"},
      # Expressions over aggregates compile into stages; what PostgreSQL
      # refuses in them is said in the statement's terms.
      {"customer_id, sum(amount) + amount AS s GROUP BY customer_id", :validation,
       "must appear in the GROUP BY clause"},
      {"customer_id, count(*) AS n GROUP BY customer_id HAVING amount > 1", :validation,
       "must appear in the GROUP BY clause"},
      {"customer_id, length(mode() WITHIN GROUP (ORDER BY label)) + count(*) AS s " <>
         "GROUP BY customer_id", :validation, "the aggregate mode is not one Trellis maintains"},
      {"customer_id, length(string_agg(label, ',')) + count(*) AS s GROUP BY customer_id",
       :unsupported, "string_agg(...) without ORDER BY inside the call is not supported"},
      {"DISTINCT ON (customer_id) customer_id, amount", :unsupported,
       "DISTINCT ON without ORDER BY"},
      {"customer_id, count(*) AS n GROUP BY 1", :unsupported, "a position in the SELECT list"},
      {"customer_id, count(*) AS n GROUP BY ROLLUP (customer_id)", :unsupported, "ROLLUP"},
      {"customer_id ORDER BY customer_id", :unsupported, "ORDER BY is not supported"},
      {"*", :unsupported, "SELECT * is not supported"},
      {"sum(*) AS s", :validation, "only count takes *"},
      {"customer_id WHERE count(*) > 1", :validation, "not allowed in WHERE"},
      # Checked against the database at define.
      {"sum(amount) AS total GROUP BY customer_id", :validation,
       "GROUP BY expression customer_id is not a column of the target"},
      {"customer_id, paid, count(*) AS n GROUP BY customer_id", :validation, "paid"},
      {"customer_id % 2 AS parity, count(*) AS n GROUP BY customer_id", :validation,
       "GROUP BY expression customer_id is not a column"},
      {"customer_id, count(*) AS __trellis_n GROUP BY customer_id", :validation,
       "starts with __trellis_"},
      {"customer_id, sum(random()) AS s GROUP BY customer_id", :validation, "volatile"},
      {"customer_id, sum(amount) AS s WHERE amount / 0 > random() GROUP BY customer_id",
       :validation, "volatile"},
      {"customer_id, max(note) AS m GROUP BY customer_id", :validation, "note"},
      {"1 AS one, count(*) AS n", :validation, "is not an aggregate, and without GROUP BY"},
      {"customer_id, mode() WITHIN GROUP (ORDER BY label) AS s GROUP BY customer_id", :validation,
       "is neither an aggregate Trellis maintains"},
      {"customer_id, string_agg(label, ',') AS s GROUP BY customer_id", :unsupported,
       "string_agg(label, ',' ORDER BY <columns that tell the rows apart>)"},
      {"upper('x') AS c, count(*) AS n GROUP BY upper('x')", :validation,
       "no GROUP BY expression reads a column"},
      {"sum(label) AS s", :validation, "not one of PostgreSQL's built-in aggregates"}
    ]

    for {select, code, words} <- cases do
      statement = from <> select

      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(trellis, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      nothing_created(pg)
    end
  end

  test "a bare column reference takes its column's name", %{pg: pg, trellis: trellis} do
    assert {:ok, {:transform_defined, "t"}} =
             Trellis.define(trellis, "TRANSFORM t FROM orders o SELECT o.amount, paid")

    assert SimplePG.scalar!(
             pg,
             "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute " <>
               "WHERE attrelid = 't'::regclass AND attnum > 0"
           ) == "id,amount,paid"
  end
end
