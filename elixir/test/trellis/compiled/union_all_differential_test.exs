defmodule Trellis.Compiled.UnionAllDifferentialTest do
  # Randomized differential tests of UNION ALL (spec/grammar.md section 13):
  # a hidden projection or join per branch, stacked by FULL JOINs that never
  # match, each branch's row its own unit. The writers of JoinWorkload put
  # NULLs in the compared and joined columns, move orders and customers in
  # and out of each branch's WHERE (amounts, regions), change keys and join
  # matches, delete and insert rows of all three tables. Two branches of
  # union_people read different tables; union_amounts reads orders in two
  # branches (one a join, one a LEFT join) and regions in two (joined, and
  # alone), three branches stacked twice. After await_converged each target
  # equals a fresh run of its query, and self-check finds it clean. Seeded:
  # replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload}
  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"union_people",
     "TRANSFORM union_people FROM customers c " <>
       "SELECT c.name, c.email AS contact, c.region_id AS ref WHERE c.region_id % 2 = 0 " <>
       "UNION ALL FROM orders o SELECT o.note AS name, o.contact, o.customer_id AS ref " <>
       "WHERE o.amount > 50", "name, contact, ref",
     "SELECT * FROM (SELECT name, email, region_id FROM customers WHERE region_id % 2 = 0 " <>
       "UNION ALL SELECT note, contact, customer_id FROM orders WHERE amount > 50) q"},
    {"union_amounts",
     "TRANSFORM union_amounts FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "SELECT c.name, o.amount, c.region_id AS ref WHERE o.amount IS NOT NULL " <>
       "UNION ALL FROM orders o LEFT JOIN regions r ON o.customer_id = r.id " <>
       "SELECT o.contact AS name, r.vat AS amount, r.id AS ref WHERE o.amount < 30 " <>
       "UNION ALL FROM regions r SELECT r.label AS name, r.vat AS amount, r.id AS ref " <>
       "WITHOUT SOURCE INDEX", "name, amount, ref",
     "SELECT * FROM (SELECT c.name, o.amount, c.region_id FROM orders o " <>
       "JOIN customers c ON o.customer_id = c.id WHERE o.amount IS NOT NULL " <>
       "UNION ALL SELECT o.contact, r.vat, r.id FROM orders o " <>
       "LEFT JOIN regions r ON o.customer_id = r.id WHERE o.amount < 30 " <>
       "UNION ALL SELECT label, vat, id FROM regions) q"}
  ]

  setup do: JoinWorkload.seeded_database!("union_all_differential", "union all differential")

  test "4 writers over 3 tables, NULLs, rows moving in and out of every branch",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.writers_round!(url, pg, seed, @transforms,
      shown: ~r/ UNION ALL FROM /,
      nulls: "UPDATE regions SET vat = NULL WHERE id % 3 = 0"
    )
  end

  test "killing the port that stages while the branches drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms, keep_off_rebuilds: true)
  end
end
