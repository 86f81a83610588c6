defmodule Trellis.Compiled.DifferentialTest do
  # Randomized differential tests of statements compiled into stages
  # (spec/engine.md "Compiled stages"): HAVING, expressions over aggregates,
  # both over a join (three stages: hidden join, hidden grouping, the user's
  # projection), and an expression over the whole table. The writers of
  # JoinWorkload run on every table: NULL amounts and customer ids (NULL
  # groups and NULL arguments), orders moving between customers and
  # customers between regions (rows moving between groups), inserts and
  # deletes that take groups across the HAVING thresholds both ways. After
  # await_converged each target equals a fresh run of the user's SQL.
  # Seeded: the seed is printed and replayed with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload}

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  # The thresholds sit at about the starting group sizes (11-12 orders per
  # customer, about 10,000 of amount per region), so writes cross them.
  @transforms [
    {"busy_customers",
     "TRANSFORM busy_customers FROM orders o SELECT o.customer_id, count(*) AS n, " <>
       "sum(o.amount) AS total GROUP BY o.customer_id HAVING count(*) > 11",
     "customer_id, n, total",
     "SELECT customer_id, count(*), sum(amount) FROM orders GROUP BY customer_id " <>
       "HAVING count(*) > 11"},
    {"customer_means",
     "TRANSFORM customer_means FROM orders o SELECT o.customer_id, " <>
       "sum(o.amount) / nullif(count(o.amount), 0) AS mean, 100 * sum(o.amount) AS cents, " <>
       "coalesce(max(o.amount), 0) AS top, count(*) - count(o.amount) AS missing " <>
       "GROUP BY o.customer_id", "customer_id, mean, cents, top, missing",
     "SELECT customer_id, sum(amount) / nullif(count(amount), 0), 100 * sum(amount), " <>
       "coalesce(max(amount), 0), count(*) - count(amount) FROM orders GROUP BY customer_id"},
    {"region_means",
     "TRANSFORM region_means FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.region_id, count(*) AS n, sum(o.amount) / nullif(count(*), 0) AS mean " <>
       "GROUP BY c.region_id HAVING sum(o.amount) > 10000", "region_id, n, mean",
     "SELECT c.region_id, count(*), sum(o.amount) / nullif(count(*), 0) FROM orders o " <>
       "JOIN customers c ON o.customer_id = c.id GROUP BY c.region_id " <>
       "HAVING sum(o.amount) > 10000"},
    {"order_ratio",
     "TRANSFORM order_ratio FROM orders o " <>
       "SELECT sum(o.amount) / nullif(count(*), 0) AS ratio, count(*) AS n", "ratio, n",
     "SELECT sum(amount) / nullif(count(*), 0), count(*) FROM orders"}
  ]

  setup do: JoinWorkload.seeded_database!("compiled_differential", "compiled stages differential")

  test "4 writers over all three tables, 2400 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.fleet_round!(url, pg, seed, @transforms,
      defined: fn _a ->
        # The join's transform runs as three stages, the others as two.
        assert CompiledRounds.stage_counts(pg) == [
                 ["busy_customers", "1"],
                 ["customer_means", "1"],
                 ["order_ratio", "1"],
                 ["region_means", "2"]
               ]
      end
    )
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end
end
