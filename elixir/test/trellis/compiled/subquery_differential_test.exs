defmodule Trellis.Compiled.SubqueryDifferentialTest do
  # Randomized differential tests of subqueries in WHERE, compiled into
  # stages (spec/engine.md "Compiled stages: subqueries in WHERE"): EXISTS,
  # NOT EXISTS, IN and NOT IN (NULLs on both sides; NOT IN correlated and
  # not), correlated comparisons to aggregates (avg, and count, which reads
  # 0 for no rows), an uncorrelated comparison and NOT EXISTS (a one-row
  # grouping over a copy of the FROM table), NOT EXISTS over a join, and a
  # grouped statement with EXISTS (TPC-H Q4's shape). The
  # writers of JoinWorkload run on the outer and the subqueries' tables at
  # once: NULL amounts, customer ids, region ids, emails and contacts; orders
  # moving between customers, customers between regions, keys changing, rows
  # inserted and deleted, so rows gain and lose matches and cross the
  # comparisons both ways. After await_converged each target equals a fresh
  # run of the user's SQL. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  # The thresholds sit about the starting values, so writes cross them.
  @transforms [
    {"big_buyers",
     "TRANSFORM big_buyers FROM customers c SELECT c.id, c.name " <>
       "WHERE c.region_id IS DISTINCT FROM 3 AND EXISTS (SELECT 1 FROM orders o " <>
       "WHERE o.customer_id = c.id AND o.amount > 110)", "id, name",
     "SELECT id, name FROM customers c WHERE c.region_id IS DISTINCT FROM 3 AND EXISTS " <>
       "(SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 110)"},
    {"quiet_customers",
     "TRANSFORM quiet_customers FROM customers c SELECT c.id, c.region_id " <>
       "WHERE NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = c.id AND amount > 90)",
     "id, region_id",
     "SELECT id, region_id FROM customers c WHERE NOT EXISTS " <>
       "(SELECT 1 FROM orders WHERE customer_id = c.id AND amount > 90)"},
    {"vat_customers",
     "TRANSFORM vat_customers FROM customers c SELECT c.id, c.email " <>
       "WHERE c.region_id IN (SELECT r.id FROM regions r WHERE r.vat >= 1.1)", "id, email",
     "SELECT id, email FROM customers c WHERE c.region_id IN " <>
       "(SELECT r.id FROM regions r WHERE r.vat >= 1.1)"},
    {"contacted_orders",
     "TRANSFORM contacted_orders FROM orders o SELECT o.id, o.amount " <>
       "WHERE o.contact IN (SELECT email FROM customers WHERE region_id < 6)", "id, amount",
     "SELECT id, amount FROM orders o WHERE o.contact IN " <>
       "(SELECT email FROM customers WHERE region_id < 6)"},
    {"above_mean",
     "TRANSFORM above_mean FROM orders o SELECT o.id, o.amount " <>
       "WHERE o.amount > (SELECT 1.2 * avg(x.amount) FROM orders x " <>
       "WHERE x.customer_id = o.customer_id)", "id, amount",
     "SELECT id, amount FROM orders o WHERE o.amount > (SELECT 1.2 * avg(x.amount) " <>
       "FROM orders x WHERE x.customer_id = o.customer_id)"},
    {"few_orders",
     "TRANSFORM few_orders FROM customers c SELECT c.id, c.name " <>
       "WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id AND o.amount > 100) < 2",
     "id, name",
     "SELECT id, name FROM customers c " <>
       "WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id AND o.amount > 100) < 2"},
    {"plain_region_orders",
     "TRANSFORM plain_region_orders FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT o.id, c.name, o.amount WHERE NOT EXISTS (SELECT 1 FROM regions r " <>
       "WHERE r.id = c.region_id AND r.vat > 1.15)", "id, name, amount",
     "SELECT o.id, c.name, o.amount FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "WHERE NOT EXISTS (SELECT 1 FROM regions r WHERE r.id = c.region_id AND r.vat > 1.15)"},
    {"unblocked_orders",
     "TRANSFORM unblocked_orders FROM orders o SELECT o.id, o.contact " <>
       "WHERE o.contact NOT IN (SELECT c.email FROM customers c WHERE c.id = o.customer_id)",
     "id, contact",
     "SELECT id, contact FROM orders o WHERE o.contact NOT IN " <>
       "(SELECT c.email FROM customers c WHERE c.id = o.customer_id)"},
    {"outside_regions",
     "TRANSFORM outside_regions FROM customers c SELECT c.id, c.region_id " <>
       "WHERE c.region_id NOT IN (SELECT r.id FROM regions r WHERE r.vat > 1.2)", "id, region_id",
     "SELECT id, region_id FROM customers c WHERE c.region_id NOT IN " <>
       "(SELECT r.id FROM regions r WHERE r.vat > 1.2)"},
    {"stray_orders",
     "TRANSFORM stray_orders FROM orders o SELECT o.id " <>
       "WHERE o.contact NOT IN (SELECT email FROM customers WHERE region_id = 5)", "id",
     "SELECT id FROM orders o WHERE o.contact NOT IN " <>
       "(SELECT email FROM customers WHERE region_id = 5)"},
    {"above_average",
     "TRANSFORM above_average FROM orders o SELECT o.id, o.amount " <>
       "WHERE o.amount > (SELECT avg(x.amount) FROM orders x WHERE x.note <> 'n1')", "id, amount",
     "SELECT id, amount FROM orders o " <>
       "WHERE o.amount > (SELECT avg(x.amount) FROM orders x WHERE x.note <> 'n1')"},
    {"calm_customers",
     "TRANSFORM calm_customers FROM customers c SELECT c.id " <>
       "WHERE c.region_id = 2 AND NOT EXISTS (SELECT 1 FROM regions r WHERE r.vat >= 1.29)", "id",
     "SELECT id FROM customers c " <>
       "WHERE c.region_id = 2 AND NOT EXISTS (SELECT 1 FROM regions r WHERE r.vat >= 1.29)"},
    {"region_buyers",
     "TRANSFORM region_buyers FROM customers c SELECT c.region_id, count(*) AS n " <>
       "WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100) " <>
       "GROUP BY c.region_id", "region_id, n",
     "SELECT region_id, count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o " <>
       "WHERE o.customer_id = c.id AND o.amount > 100) GROUP BY region_id"}
  ]

  setup do: JoinWorkload.seeded_database!("subquery_differential", "subqueries differential")

  test "4 writers over the outer and the subqueries' tables, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.fleet_round!(url, pg, seed, @transforms,
      defined: fn a ->
        # A stage per subquery; the grouped statement's join is one more.
        assert CompiledRounds.stage_counts(pg) == [
                 ["above_average", "2"],
                 ["above_mean", "1"],
                 ["big_buyers", "1"],
                 ["calm_customers", "2"],
                 ["contacted_orders", "1"],
                 ["few_orders", "1"],
                 ["outside_regions", "3"],
                 ["plain_region_orders", "1"],
                 ["quiet_customers", "1"],
                 ["region_buyers", "2"],
                 ["stray_orders", "3"],
                 ["unblocked_orders", "2"],
                 ["vat_customers", "1"]
               ]

        # Each shows the statement as written.
        assert_shown_as_written!(a, @transforms)
      end
    )
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end
end
