# TPC-H-derived queries as single TRANSFORM statements against REFRESH
# MATERIALIZED VIEW of the same query, and against the same query written
# by hand as a chain of transforms (issue 26: >= 5x faster than REFRESH;
# compiled within 1.2x of the hand chain).
#
#   cd elixir && MIX_ENV=test TRELLIS_BENCH_URL=postgresql://... \
#     TRELLIS_PORT_PATH=../build/port/trellis-port mix run ../bench/runtime/tpch_bench.exs
#
# TPCH_BENCH_ORDERS (default 150000: scale 0.1, about 600k lineitems),
# TPCH_BENCH_ROUNDS (default 3), TPCH_BENCH_QUERIES (default
# tpch_q1,tpch_q3,tpch_q4,tpch_q13,tpch_q17,tpch_q18,tpch_q22: issue 26's; the names of
# Trellis.Test.Tpch.queries/0). The database is Trellis.Test.Tpch's, built
# once. Each query in turn is defined alone (staging and two drain threads
# running), built, and a materialized view of its SQL made; then each round
# runs TPC-H's refresh functions in one transaction (0.1% of the orders
# inserted with their lineitems, as many deleted with theirs), times its
# commit -> await_converged, then REFRESH MATERIALIZED VIEW, and checks the
# target equals the view. Then the hand chain of the query (Q4, Q17), if it
# has one, is defined alone in its place and timed the same way.

defmodule TpchBench do
  alias Trellis.Test.{SimplePG, Tpch}

  @orders String.to_integer(System.get_env("TPCH_BENCH_ORDERS", "150000"))
  @rounds String.to_integer(System.get_env("TPCH_BENCH_ROUNDS", "3"))
  @names System.get_env(
           "TPCH_BENCH_QUERIES",
           "tpch_q1,tpch_q3,tpch_q4,tpch_q13,tpch_q17,tpch_q18,tpch_q22"
         )
         |> String.split(",", trim: true)

  # The same queries written by hand as the chain a user would define
  # before the compiler: each link a transform over the one before.
  @chains %{
    "tpch_q4" => [
      "TRANSFORM chain_q4_late FROM lineitem l SELECT l.l_orderkey, count(*) AS n " <>
        "WHERE l.l_commitdate < l.l_receiptdate GROUP BY l.l_orderkey",
      "TRANSFORM chain_q4 FROM orders o JOIN chain_q4_late x ON o.o_orderkey = x.l_orderkey " <>
        "SELECT o.o_orderpriority, count(*) AS order_count " <>
        "WHERE o.o_orderdate >= '1993-07-01'::date AND o.o_orderdate < '1994-07-01'::date " <>
        "GROUP BY o.o_orderpriority"
    ],
    "tpch_q17" => [
      "TRANSFORM chain_q17_avg FROM lineitem x SELECT x.l_partkey, avg(x.l_quantity) AS a " <>
        "GROUP BY x.l_partkey",
      "TRANSFORM chain_q17_sum FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey " <>
        "JOIN chain_q17_avg a ON l.l_partkey = a.l_partkey " <>
        "SELECT sum(l.l_extendedprice) AS s " <>
        "WHERE p.p_brand LIKE 'Brand#2%' AND p.p_container LIKE 'MED%' " <>
        "AND l.l_quantity < 0.2 * a.a",
      "TRANSFORM chain_q17 FROM chain_q17_sum t SELECT t.s / 7.0 AS avg_yearly"
    ]
  }

  def run do
    admin = SimplePG.connect!(System.fetch_env!("TRELLIS_BENCH_URL"))
    SimplePG.query!(admin, "DROP DATABASE IF EXISTS tpch_bench")
    SimplePG.query!(admin, "CREATE DATABASE tpch_bench")
    SimplePG.close(admin)
    uri = URI.parse(System.fetch_env!("TRELLIS_BENCH_URL"))
    url = URI.to_string(%{uri | path: "/tpch_bench"})
    pg = SimplePG.connect!(url)
    {created_us, :ok} = :timer.tc(fn -> Tpch.create!(pg, 42, @orders) end)
    lineitems = SimplePG.scalar!(pg, "SELECT count(*) FROM lineitem")
    IO.puts("#{@orders} orders, #{lineitems} lineitems, made in #{div(created_us, 1000)} ms")

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2, timeout_ms: 600_000)

    queries = Map.new(Tpch.queries(), fn {name, _, _, _} = q -> {name, q} end)
    results = Enum.map(@names, &measure(trellis, pg, Map.fetch!(queries, &1)))
    Trellis.shutdown(trellis)
    report(results)
  end

  # The compiled statement alone, then (for a query with one) its hand
  # chain alone, each through @rounds refresh rounds.
  defp measure(trellis, pg, {name, statement, columns, query}) do
    SimplePG.query!(pg, "CREATE MATERIALIZED VIEW #{name}_view (#{columns}) AS #{query}")
    {define_us, compiled} = timed_rounds(trellis, pg, [statement], name, columns)
    chain = Map.get(@chains, name)
    chained = if chain, do: elem(timed_rounds(trellis, pg, chain, name, columns), 1)
    SimplePG.query!(pg, "DROP MATERIALIZED VIEW #{name}_view")

    %{
      name: name,
      define_ms: div(define_us, 1000),
      converged: median(Enum.map(compiled, &elem(&1, 0))),
      refresh: median(Enum.map(compiled, &elem(&1, 1))),
      chain: chained && median(Enum.map(chained, &elem(&1, 0)))
    }
  end

  # Defines `statements` (the last one's target is compared with the view
  # of `name`), builds them, runs the rounds, drops them. Returns the define
  # time and each round's {converged, REFRESH} in microseconds.
  defp timed_rounds(trellis, pg, statements, name, columns) do
    {define_us, _} =
      :timer.tc(fn ->
        for s <- statements, do: {:ok, {:transform_defined, _}} = Trellis.define(trellis, s)
      end)

    converge(trellis)
    target = statements |> List.last() |> chain_name()

    rounds =
      for _ <- 1..@rounds do
        :ok = Tpch.refresh!(pg, @orders, max(1, div(@orders, 1000)))
        {converged_us, :ok} = :timer.tc(fn -> converge(trellis) end)

        {refresh_us, _} =
          :timer.tc(fn -> SimplePG.query!(pg, "REFRESH MATERIALIZED VIEW #{name}_view") end)

        differences =
          SimplePG.scalar!(
            pg,
            "SELECT count(*) FROM ((SELECT #{columns} FROM #{target} EXCEPT ALL " <>
              "TABLE #{name}_view) UNION ALL (TABLE #{name}_view EXCEPT ALL " <>
              "SELECT #{columns} FROM #{target})) d"
          )

        if differences != "0", do: raise("#{target}: #{differences} rows differ from the view")
        {converged_us, refresh_us}
      end

    for s <- Enum.reverse(statements) do
      {:ok, _} = Trellis.apply(trellis, "PAUSE TRANSFORM #{chain_name(s)}")
      {:ok, _} = Trellis.apply(trellis, "DROP TRANSFORM #{chain_name(s)}")
    end

    {define_us, rounds}
  end

  defp chain_name(statement) do
    [_, name | _] = String.split(statement, " ", parts: 3)
    name
  end

  defp converge(trellis) do
    {:ok, token} = Trellis.watermark_token(trellis)
    :ok = Trellis.await_converged(trellis, token, timeout_ms: 600_000)
  end

  defp median(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))

  defp report(results) do
    IO.puts(
      "\n| query | define ms | converged ms (median of #{@rounds}) | REFRESH ms | REFRESH / converged |"
    )

    IO.puts("|---|---|---|---|---|")

    for r <- results do
      IO.puts(
        "| #{r.name} | #{r.define_ms} | #{ms(r.converged)} | #{ms(r.refresh)} | " <>
          "#{Float.round(r.refresh / max(r.converged, 1), 2)}x |"
      )
    end

    chained = Enum.filter(results, & &1.chain)

    if chained != [] do
      IO.puts(
        "\n| query | compiled ms | hand chain ms | compiled / chain (medians of #{@rounds}) |"
      )

      IO.puts("|---|---|---|---|")

      for r <- chained do
        IO.puts(
          "| #{r.name} | #{ms(r.converged)} | #{ms(r.chain)} | " <>
            "#{Float.round(r.converged / max(r.chain, 1), 2)}x |"
        )
      end
    end
  end

  defp ms(us), do: Float.round(us / 1000, 1)
end

TpchBench.run()
