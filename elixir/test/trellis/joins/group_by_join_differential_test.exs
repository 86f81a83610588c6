defmodule Trellis.Joins.GroupByJoinDifferentialTest do
  # GROUP BY over a join (revenue per region), defined directly: 4
  # concurrent writers over all three tables (5,000 random writes: joined-
  # side updates, deletes, foreign-key re-pointing, key changes), a fleet of
  # two handles; after await_converged every target equals its definition's
  # query over the base tables. And the port that stages killed -9 while
  # pages drain. Seeded: replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Handles, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  # INNER then LEFT, a WHERE over a joined table, every aggregate, a NULL
  # group (orders whose customer has no region).
  @per_region "FROM orders JOIN customers ON orders.customer_id = customers.id " <>
                "LEFT JOIN regions ON customers.region_id = regions.id"
  @per_region_select "regions.label, sum(orders.amount) AS revenue, count(*) AS n, " <>
                       "avg(orders.amount) AS mean, min(orders.amount) AS low, " <>
                       "max(customers.name) AS top"
  @per_region_where "customers.name <> 'customer 7'"

  # Aliases, a LEFT join on a unique non-key column, an expression key over
  # two tables, a WHERE over the FROM table.
  @by_contact "FROM orders o LEFT JOIN customers c ON o.contact = c.email"
  @bucket "coalesce(c.region_id, -1) + (o.amount > 50)::int * 100"
  @by_contact_select "#{@bucket} AS bucket, " <>
                       "count(o.note) AS notes, sum(o.amount) AS total, bool_or(o.note LIKE 'u%') AS touched"
  @by_contact_where "o.amount > 10"

  @definitions [
    "TRANSFORM region_revenue #{@per_region} SELECT #{@per_region_select} " <>
      "WHERE #{@per_region_where} GROUP BY regions.label",
    "TRANSFORM contact_buckets #{@by_contact} SELECT #{@by_contact_select} " <>
      "WHERE #{@by_contact_where} GROUP BY #{@bucket}"
  ]

  setup do: JoinWorkload.seeded_database!("group_join", "group by join")

  # The visible columns of each target against its definition's query.
  defp assert_equal(handle, pg, seed) do
    converge!(handle, 240_000)
    message = "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"

    assert differences(
             pg,
             "SELECT label, revenue, n, mean, low, top FROM region_revenue",
             "SELECT #{@per_region_select} #{@per_region} WHERE #{@per_region_where} " <>
               "GROUP BY regions.label"
           ) == "0",
           "region_revenue: " <> message

    assert differences(
             pg,
             "SELECT bucket, notes, total, touched FROM contact_buckets",
             "SELECT #{@by_contact_select} #{@by_contact} WHERE #{@by_contact_where} " <>
               "GROUP BY #{@bucket}"
           ) == "0",
           "contact_buckets: " <> message
  end

  test "4 writers over all three tables, 5000 random writes, a fleet of two handles",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)

    for statement <- @definitions,
        do: {:ok, {:transform_defined, _}} = Trellis.define(a, statement)

    committed =
      url |> JoinWorkload.writers(seed, 4, 1250) |> Task.await_many(480_000) |> Enum.sum()

    assert committed > 4_000, "only #{committed} of 5000 writes committed"
    assert_equal(b, pg, seed)

    # The LEFT join made a NULL group (customers of a region that is not there).
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM region_revenue WHERE label IS NULL") == "1"

    for name <- ["region_revenue", "contact_buckets"] do
      assert {:ok, %Trellis.Status{status: :live, backlog_pages: 0}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "killing the port that stages while pages drain loses and repeats nothing",
       %{url: url, pg: pg, seed: seed} do
    # Killed while pages of either part drain.
    define = fn a ->
      for statement <- @definitions,
          do: {:ok, {:transform_defined, _}} = Trellis.define(a, statement)
    end

    b = JoinWorkload.staging_crash_round!(url, pg, seed, define)
    assert_equal(b, pg, seed)
    Trellis.shutdown(b)
  end
end
