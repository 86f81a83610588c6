defmodule Trellis.Joins.GroupByJoinRefusalsTest do
  # A GROUP BY over a join is two catalog transforms (a hidden join and the
  # grouping over it) made in one transaction: every refusal, whichever part
  # it comes from, names the problem in the user's terms (never the hidden
  # part) and leaves nothing behind: no transform, no captured source, no
  # target, no trigger.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_join_refusals")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, label text);
    CREATE TABLE customers (id int PRIMARY KEY, name text, region_id int);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    INSERT INTO regions VALUES (1, 'north');
    INSERT INTO customers VALUES (1, 'ann', 1);
    INSERT INTO orders VALUES (1, 1, 10);
    """)

    trellis = Trellis.connect!(url: url)
    :ok = Trellis.migrate(trellis)
    %{pg: pg, trellis: trellis}
  end

  @join "FROM orders o JOIN customers c ON o.customer_id = c.id "

  test "grouped joins Trellis cannot maintain are refused and create nothing",
       %{pg: pg, trellis: trellis} do
    cases = [
      # The join part's own refusals.
      {"TRANSFORM t FROM orders o JOIN customers c ON o.customer_id = c.id " <>
         "FULL JOIN regions r ON r.id = c.region_id " <>
         "SELECT r.label, count(*) AS n GROUP BY r.label", :unsupported,
       "a FULL JOIN is maintained as the first join"},
      {"TRANSFORM t FROM orders o JOIN nowhere c ON o.customer_id = c.id " <>
         "SELECT c.name, count(*) AS n GROUP BY c.name", :not_found, "nowhere"},
      {"TRANSFORM t #{@join}SELECT c.name, count(*) AS n WHERE c.nope > 1 GROUP BY c.name",
       :validation, "nope"},
      # The grouping's, checked over the join as written.
      {"TRANSFORM t #{@join}SELECT c.name, mode() WITHIN GROUP (ORDER BY c.name) AS s " <>
         "GROUP BY c.name", :validation, "neither an aggregate Trellis maintains"},
      {"TRANSFORM t #{@join}SELECT c.name, string_agg(c.name, ',') AS s GROUP BY c.name",
       :unsupported, "without ORDER BY inside the call"},
      {"TRANSFORM t #{@join}SELECT c.name, o.amount AS a, count(*) AS n GROUP BY c.name",
       :validation, "o.amount"},
      {"TRANSFORM t #{@join}SELECT c.name, sum(c.nope) AS n GROUP BY c.name", :validation,
       "nope"},
      # A column the rewrite onto the join's target cannot see.
      {"TRANSFORM t #{@join}SELECT c.name, sum(amount) AS n GROUP BY c.name", :validation,
       "write every column as table.column"},
      # Names Trellis keeps for the hidden part.
      {"TRANSFORM __trellis_x #{@join}SELECT c.name, count(*) AS n GROUP BY c.name", :validation,
       "keeps for its own transforms"},
      {"TRANSFORM trellis.t #{@join}SELECT c.name, count(*) AS n GROUP BY c.name", :validation,
       "catalog schema"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(trellis, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      refute message =~ "__trellis_join", "#{statement}: #{message}"
      assert_nothing_created(pg)

      assert SimplePG.scalar!(
               pg,
               "SELECT count(*) FROM pg_tables WHERE schemaname = 'trellis' " <>
                 "AND tablename LIKE '\\_\\_trellis%'"
             ) == "0"
    end
  end

  test "a refused grouping after an accepted join part leaves the name free",
       %{pg: pg, trellis: trellis} do
    statement = "TRANSFORM t #{@join}SELECT c.name, count(*) AS n GROUP BY c.name"
    SimplePG.query!(pg, "CREATE TABLE t (x int)")

    assert {:error, %Trellis.Error{code: :already_exists}} = Trellis.define(trellis, statement)
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.sources") == "0"
    SimplePG.query!(pg, "DROP TABLE t")
    assert {:ok, {:transform_defined, "t"}} = Trellis.define(trellis, statement)
  end
end
