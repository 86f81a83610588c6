defmodule Trellis.Compiled.DerivedDifferentialTest do
  # Randomized differential tests of queries in FROM and WITH queries
  # (spec/grammar.md section 14), each compiled into a hidden stage the
  # statement reads as a table. The transforms read two sources, orders and
  # customers; the writers of JoinWorkload write them (and regions) at
  # once: NULL amounts and customer ids, orders moving in and out of the
  # inner WHERE (amounts, notes) and between the inner groups (customer_id
  # re-pointed), customers renamed, re-pointed and re-keyed, rows inserted
  # and deleted. derived_orders joins a query in FROM to customers;
  # derived_totals LEFT JOINs a grouping WITH query (a NULL group too);
  # derived_pairs reads one WITH query twice (a self join through
  # customers); derived_by_customer groups a query in FROM. After
  # await_converged each target equals a fresh run of its statement's query,
  # and self-check finds it clean. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{CompiledRounds, JoinWorkload}
  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the target's columns compared, the query they equal.
  @transforms [
    {"derived_orders",
     "TRANSFORM derived_orders FROM (FROM orders o SELECT o.id, o.customer_id, o.amount, " <>
       "o.note WHERE o.amount > 40) AS s JOIN customers c ON s.customer_id = c.id " <>
       "SELECT s.id, c.name, s.amount, s.note", "id, name, amount, note",
     "SELECT s.id, c.name, s.amount, s.note FROM (SELECT id, customer_id, amount, note " <>
       "FROM orders WHERE amount > 40) AS s JOIN customers c ON s.customer_id = c.id"},
    {"derived_totals",
     "TRANSFORM derived_totals WITH totals AS (FROM orders o SELECT o.customer_id, " <>
       "sum(o.amount) AS total, count(*) AS n WHERE o.amount < 100 GROUP BY o.customer_id) " <>
       "FROM customers c LEFT JOIN totals t ON c.id = t.customer_id " <>
       "SELECT c.id, c.name, t.total, t.n", "id, name, total, n",
     "SELECT * FROM (WITH totals AS (SELECT customer_id, sum(amount) AS total, count(*) AS n " <>
       "FROM orders WHERE amount < 100 GROUP BY customer_id) SELECT c.id, c.name, t.total, " <>
       "t.n FROM customers c LEFT JOIN totals t ON c.id = t.customer_id) q"},
    {"derived_pairs",
     "TRANSFORM derived_pairs WITH big AS (FROM orders o SELECT o.id, o.customer_id " <>
       "WHERE o.amount > 105) FROM big p JOIN customers c ON p.customer_id = c.id " <>
       "JOIN big q ON c.id = q.customer_id SELECT p.id AS p_id, q.id AS q_id, c.name",
     "p_id, q_id, name",
     "SELECT * FROM (WITH big AS (SELECT id, customer_id FROM orders WHERE amount > 105) " <>
       "SELECT p.id, q.id, c.name FROM big p JOIN customers c ON p.customer_id = c.id " <>
       "JOIN big q ON c.id = q.customer_id) r"},
    {"derived_by_customer",
     "TRANSFORM derived_by_customer FROM (FROM orders o SELECT o.customer_id, o.amount " <>
       "WHERE o.note LIKE 'n%') AS s SELECT s.customer_id, count(*) AS n, " <>
       "sum(s.amount) AS total GROUP BY s.customer_id", "customer_id, n, total",
     "SELECT customer_id, count(*), sum(amount) FROM (SELECT customer_id, amount " <>
       "FROM orders WHERE note LIKE 'n%') s GROUP BY customer_id"}
  ]

  setup do: JoinWorkload.seeded_database!("derived_differential", "derived differential")

  test "4 writers over 2 sources, NULLs, rows moving in and out of the inner WHERE and groups",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.writers_round!(url, pg, seed, @transforms,
      nulls: "UPDATE customers SET name = NULL WHERE id % 3 = 0"
    )
  end

  test "killing the port that stages while the hidden queries drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    CompiledRounds.crash_round!(url, pg, seed, @transforms, keep_off_rebuilds: true)
  end
end
