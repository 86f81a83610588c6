defmodule Trellis.Compiled.TpchTest do
  # The TPC-H-derived suite (issue 26): TPC-H's queries, each written as ONE
  # TRANSFORM statement (ORDER BY and LIMIT dropped; constants widened so
  # that the small database has rows in every filter), over a database of
  # our own (Trellis.Test.Tpch), through refresh rounds of concurrent
  # writers: orders inserted and deleted with their lineitems, lineitems,
  # orders, customers, suppliers, parts, partsupp and nations updated, so
  # rows move between groups, join matches and the subqueries' answers.
  # After every round each target equals its query run fresh.
  #
  # All 22 run as single statements; spec/grammar.md ("TPC-H's queries as
  # single statements") says how each is written and compiled, and which of
  # TPC-H's own texts stay refused. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, SimplePG, Tpch}
  import Trellis.Test.Targets
  import Trellis.Test.Eventually, only: [eventually: 1]

  @moduletag :port
  @moduletag timeout: 900_000

  # name, definition, the target's columns compared, the query they equal.
  @queries Tpch.queries()

  # TPC-H's own text of a query the suite writes otherwise, still refused by
  # name with the fix (what to write instead), and what in it is refused.
  @refused [
    {"Q18 as TPC-H writes it: IN over a subquery with GROUP BY and HAVING",
     "TRANSFORM tpch_q18 FROM orders o JOIN customer c ON o.o_custkey = c.c_custkey " <>
       "SELECT c.c_name, o.o_orderkey, o.o_totalprice WHERE o.o_orderkey IN " <>
       "(SELECT l.l_orderkey FROM lineitem l GROUP BY l.l_orderkey HAVING sum(l.l_quantity) > 300)",
     "GROUP BY in a subquery is not supported"},
    {"Q11 correlated in HAVING",
     "TRANSFORM tpch_q11 FROM partsupp ps SELECT ps.ps_partkey, " <>
       "sum(ps.ps_supplycost * ps.ps_availqty) AS value GROUP BY ps.ps_partkey " <>
       "HAVING sum(ps.ps_supplycost * ps.ps_availqty) > (SELECT sum(x.ps_supplycost) " <>
       "FROM partsupp x WHERE x.ps_partkey = ps.ps_partkey)",
     "a subquery in HAVING correlated with the statement is not supported"},
    {"Q21 correlated by <",
     "TRANSFORM tpch_q21 FROM lineitem l1 JOIN supplier s ON l1.l_suppkey = s.s_suppkey " <>
       "SELECT s.s_name, count(*) AS numwait WHERE EXISTS (SELECT 1 FROM lineitem l2 " <>
       "WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey < l1.l_suppkey) GROUP BY s.s_name",
     "correlated by anything but equalities"}
  ]

  setup do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("tpch seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!("tpch")
    :ok = Tpch.create!(pg, seed)
    %{url: url, pg: pg, seed: seed}
  end

  defp assert_queries_equal(pg, context) do
    for {name, _statement, columns, query} <- @queries do
      target = "SELECT #{columns} FROM #{name}"

      assert differences(pg, target, query) == "0",
             "#{name} differs (#{context}): #{difference_sample(pg, target, query)}"
    end
  end

  test "each query as one statement equals its SQL after every refresh round and a crash",
       %{url: url, pg: pg, seed: seed} do
    {handle, drains} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_compiled!(handle, @queries)
    converge!(handle, 240_000)
    assert_queries_equal(pg, "first build, seed #{seed}")

    # Q11 (a subquery in HAVING) and Q21 (<> correlations) show as written.
    assert_shown_as_written!(
      handle,
      Enum.filter(@queries, &(elem(&1, 0) in ~w(tpch_q11 tpch_q21)))
    )

    # The targets have rows, none with a NULL: the widened constants leave
    # almost no filter empty in the generated data (of 40 seeds, 3 left one
    # query without rows). Asked after the first build only: the writers may
    # move every nation out of a region a query reads.
    empty =
      for {name, _, columns, _} <- @queries,
          SimplePG.scalar!(
            pg,
            "SELECT count(*) FROM (SELECT #{columns} FROM #{name}) t WHERE t IS NOT NULL"
          ) == "0",
          do: name

    assert length(empty) <= 2, "#{inspect(empty)} have no row without a NULL (seed #{seed})"

    for round <- 1..3 do
      committed =
        Tpch.start_round(url, seed + round, 3, 100) |> Task.await_many(240_000) |> Enum.sum()

      assert committed > 150, "round #{round}: only #{committed} writes committed"
      converge!(handle, 240_000)
      assert_queries_equal(pg, "round #{round}, seed #{seed}")
    end

    # A refresh round during which the staging port is killed (SIGKILL): a
    # new port takes over and loses and doubles nothing.
    running = Tpch.start_round(url, seed + 4, 3, 100)
    assert eventually(fn -> SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pages") != "0" end)
    {:os_pid, os_pid} = Port.info(handle.port, :os_pid)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    Task.await_many(running, 240_000)
    successor = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    converge!(successor, 240_000)
    assert_queries_equal(pg, "after the crash, seed #{seed}")
    Trellis.shutdown(successor)
    Trellis.shutdown(drains)
  end

  test "the forms still refused are refused by name, changing nothing",
       %{url: url, pg: pg} do
    {handle, _drains} = Handles.fleet!(url, [staging: true], [])

    for {query, statement, message} <- @refused do
      assert {:error, %Trellis.Error{code: :unsupported, message: said}} =
               Trellis.define(handle, statement)

      assert said =~ message, "#{query}: #{said}"
      assert said =~ ~r/not supported: \w/, "#{query} names no fix: #{said}"
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    Trellis.shutdown(handle)
  end
end
