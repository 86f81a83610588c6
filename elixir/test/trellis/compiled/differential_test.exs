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

  alias Trellis.Test.{Handles, JoinWorkload}
  import Trellis.Test.Targets

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

  defp define_every!(handle), do: define_compiled!(handle, @transforms)

  defp assert_equal(handle, pg, seed),
    do: assert_compiled_equal(handle, pg, @transforms, seed)

  test "4 writers over all three tables, 2400 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_every!(a)
    assert_equal(a, pg, seed)

    # The join's transform runs as three stages, the others as two.
    stages =
      Trellis.Test.SimplePG.query!(pg, """
      SELECT u.target_name, count(s.id) FROM trellis.transforms u
      LEFT JOIN trellis.transforms s ON s.owner_id = u.id
      WHERE u.owner_id IS NULL GROUP BY 1 ORDER BY 1
      """)

    assert stages == [
             ["busy_customers", "1"],
             ["customer_means", "1"],
             ["order_ratio", "1"],
             ["region_means", "2"]
           ]

    JoinWorkload.write_round!(url, seed)
    assert_equal(b, pg, seed)

    assert_all_live!(b, @transforms)

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    b = JoinWorkload.staging_crash_round!(url, pg, seed, &define_every!/1)
    assert_equal(b, pg, seed)
    Trellis.shutdown(b)
  end
end
