defmodule Trellis.Joins.DifferentialTest do
  # Randomized differential tests of JOIN transforms (issue 12): 4
  # concurrent writers over all three tables (inserts, renames, joined-side
  # deletes, foreign-key re-pointing, joined-key changes, transactions), a
  # fleet of two handles; then await_converged, and each target equals a
  # fresh run of its definition's query. Seeded: the seed is printed and
  # replayed with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Handles, JoinWorkload}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # name, definition, the query its target must equal
  @transforms [
    # INNER then LEFT, chained (regions through customers), a WHERE over
    # the FROM table and a LEFT-joined one
    {"order_rows",
     "TRANSFORM order_rows FROM orders AS o JOIN customers AS c ON o.customer_id = c.id " <>
       "LEFT JOIN regions AS r ON c.region_id = r.id " <>
       "SELECT c.name AS customer, r.label AS region, o.amount * coalesce(r.vat, 1) AS gross " <>
       "WHERE (o.amount IS NULL OR o.amount < 100) AND coalesce(r.label, '-') <> 'r3'",
     "SELECT o.id, c.name, r.label, o.amount * coalesce(r.vat, 1) " <>
       "FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "LEFT JOIN regions r ON c.region_id = r.id " <>
       "WHERE (o.amount IS NULL OR o.amount < 100) AND coalesce(r.label, '-') <> 'r3'"},
    # LEFT join on a unique column that is not the key (routed in capture),
    # then INNER from it
    {"order_contacts",
     "TRANSFORM order_contacts FROM orders o LEFT JOIN customers k ON k.email = o.contact " <>
       "JOIN regions g ON g.id = k.region_id SELECT k.id AS contact_id, g.vat, o.note",
     "SELECT o.id, k.id, g.vat, o.note FROM orders o LEFT JOIN customers k ON k.email = o.contact " <>
       "JOIN regions g ON g.id = k.region_id"}
  ]

  setup do: JoinWorkload.seeded_database!("join_differential", "join differential")

  defp assert_equal(handle, pg, seed),
    do: assert_all_equal(handle, pg, @transforms, "seed #{seed}; rerun with TRELLIS_SEED=#{seed}")

  test "4 writers over all three tables, 5000 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    define_all!(a, @transforms)
    converge!(a)
    assert_equal(a, pg, seed)

    committed =
      url |> JoinWorkload.writers(seed, 4, 1250) |> Task.await_many(480_000) |> Enum.sum()

    # Most writes land (collisions roll back): the run really wrote.
    assert committed > 4_000, "only #{committed} of 5000 writes committed"

    assert_equal(b, pg, seed)

    assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} =
             Trellis.status(b, "order_rows")

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while join pages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    b = JoinWorkload.staging_crash_round!(url, pg, seed, &define_all!(&1, @transforms))
    assert_equal(b, pg, seed)
    Trellis.shutdown(b)
  end
end
