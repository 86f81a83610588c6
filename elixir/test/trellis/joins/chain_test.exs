defmodule Trellis.Joins.ChainTest do
  # A chain of three transforms, projection -> join -> aggregate (revenue
  # per region), under 4 concurrent writers over all the tables (5,000
  # random writes, joined-side updates, deletes and foreign-key re-pointing)
  # with a fleet of two handles: after await_converged every target equals
  # its definition's query over the base tables. Seeded: replay with
  # TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Handles, JoinWorkload}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 600_000

  @chain [
    "TRANSFORM priced_orders FROM orders o SELECT o.customer_id, o.amount * 2 AS doubled " <>
      "WHERE o.amount IS NOT NULL",
    "TRANSFORM priced_rows FROM priced_orders p JOIN customers c ON p.customer_id = c.id " <>
      "LEFT JOIN regions r ON c.region_id = r.id SELECT r.label AS region, p.doubled",
    "TRANSFORM region_revenue FROM priced_rows SELECT region, sum(doubled) AS revenue, " <>
      "count(*) AS n GROUP BY region"
  ]

  @rows "SELECT o.id, r.label AS region, o.amount * 2 AS doubled FROM orders o " <>
          "JOIN customers c ON o.customer_id = c.id LEFT JOIN regions r ON c.region_id = r.id " <>
          "WHERE o.amount IS NOT NULL"

  setup do: JoinWorkload.seeded_database!("join_chain", "join chain")

  test "projection -> join -> aggregate stays equal to its query over the base tables",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    # Defined at once, while the upstreams build: each waits for its upstream.
    for statement <- @chain, do: {:ok, {:transform_defined, _}} = Trellis.define(a, statement)

    committed =
      url
      |> JoinWorkload.writers(seed, 4, 1250)
      |> Task.await_many(480_000)
      |> Enum.sum()

    assert committed > 4_000, "only #{committed} of 5000 writes committed"
    converge!(b, 240_000)
    message = "seed #{seed}; rerun with TRELLIS_SEED=#{seed}"
    assert differences(pg, "SELECT id, region, doubled FROM priced_rows", @rows) == "0", message

    assert differences(
             pg,
             "SELECT region, revenue, n FROM region_revenue",
             "SELECT region, sum(doubled), count(*) FROM (#{@rows}) x GROUP BY region"
           ) == "0",
           message

    for name <- ["priced_orders", "priced_rows", "region_revenue"] do
      assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end
end
