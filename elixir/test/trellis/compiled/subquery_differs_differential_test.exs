defmodule Trellis.Compiled.SubqueryDiffersDifferentialTest do
  # Randomized differential tests of EXISTS and NOT EXISTS correlated by
  # `<>` beside equalities (spec/grammar.md section 11, TPC-H Q21's shape):
  # another order of the same customer to another contact; the NOT EXISTS
  # with a condition of its own; both in one grouped statement over a join
  # (Q21 itself); two equalities and a `<>`; a `<>` alone (a count over the
  # whole table); a `<>` in a subquery that joins tables. The writers of
  # JoinWorkload run on every table at once, with NULL customer ids,
  # contacts, amounts, region ids and emails on both sides of every
  # compared and correlated column; rows move between customers, keys
  # change, rows come and go. After await_converged each target equals a
  # fresh run of the user's SQL. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"shared_customers",
     "TRANSFORM shared_customers FROM orders o SELECT o.id, o.amount " <>
       "WHERE EXISTS (SELECT 1 FROM orders x WHERE x.customer_id = o.customer_id " <>
       "AND x.contact <> o.contact)", "id, amount",
     "SELECT id, amount FROM orders o WHERE EXISTS (SELECT 1 FROM orders x " <>
       "WHERE x.customer_id = o.customer_id AND x.contact <> o.contact)"},
    {"alone_in_big",
     "TRANSFORM alone_in_big FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT o.id, c.name WHERE o.amount > 100 AND NOT EXISTS (SELECT 1 FROM orders x " <>
       "WHERE x.customer_id = o.customer_id AND o.contact != x.contact AND x.amount > 100)",
     "id, name",
     "SELECT o.id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "WHERE o.amount > 100 AND NOT EXISTS (SELECT 1 FROM orders x " <>
       "WHERE x.customer_id = o.customer_id AND o.contact <> x.contact AND x.amount > 100)"},
    {"waiting_by_region",
     "TRANSFORM waiting_by_region FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.region_id, count(*) AS waiting, sum(o.amount) AS amount " <>
       "WHERE o.amount > 50 AND EXISTS (SELECT 1 FROM orders x " <>
       "WHERE x.customer_id = o.customer_id AND x.contact <> o.contact) " <>
       "AND NOT EXISTS (SELECT 1 FROM orders y WHERE y.customer_id = o.customer_id " <>
       "AND y.contact <> o.contact AND y.amount > 150) GROUP BY c.region_id",
     "region_id, waiting, amount",
     "SELECT c.region_id, count(*), sum(o.amount) FROM orders o " <>
       "JOIN customers c ON o.customer_id = c.id WHERE o.amount > 50 " <>
       "AND EXISTS (SELECT 1 FROM orders x WHERE x.customer_id = o.customer_id " <>
       "AND x.contact <> o.contact) AND NOT EXISTS (SELECT 1 FROM orders y " <>
       "WHERE y.customer_id = o.customer_id AND y.contact <> o.contact AND y.amount > 150) " <>
       "GROUP BY c.region_id"},
    {"only_order_to_contact",
     "TRANSFORM only_order_to_contact FROM orders o SELECT o.id, o.contact " <>
       "WHERE NOT EXISTS (SELECT 1 FROM orders x WHERE x.customer_id = o.customer_id " <>
       "AND x.contact = o.contact AND x.id <> o.id)", "id, contact",
     "SELECT id, contact FROM orders o WHERE NOT EXISTS (SELECT 1 FROM orders x " <>
       "WHERE x.customer_id = o.customer_id AND x.contact = o.contact AND x.id <> o.id)"},
    {"elsewhere",
     "TRANSFORM elsewhere FROM customers c SELECT c.id, c.region_id " <>
       "WHERE EXISTS (SELECT 1 FROM customers k WHERE k.region_id <> c.region_id " <>
       "AND k.name IS NOT NULL)", "id, region_id",
     "SELECT id, region_id FROM customers c WHERE EXISTS (SELECT 1 FROM customers k " <>
       "WHERE k.region_id <> c.region_id AND k.name IS NOT NULL)"},
    {"contacts_elsewhere",
     "TRANSFORM contacts_elsewhere FROM customers c SELECT c.id, c.email " <>
       "WHERE NOT EXISTS (SELECT 1 FROM orders o JOIN customers k ON o.customer_id = k.id " <>
       "WHERE o.contact = c.email AND k.region_id <> c.region_id)", "id, email",
     "SELECT id, email FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o " <>
       "JOIN customers k ON o.customer_id = k.id WHERE o.contact = c.email " <>
       "AND k.region_id <> c.region_id)"}
  ]

  setup do: JoinWorkload.seeded_database!("subquery_differs_differential", "subqueries by <>")

  test "4 writers over every table, a fleet of two handles", %{url: url, pg: pg, seed: seed} do
    CompiledRounds.fleet_round!(url, pg, seed, @transforms,
      defined: &assert_shown_as_written!(&1, @transforms)
    )
  end

  test "killing the port that stages while the stages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms)
  end
end
