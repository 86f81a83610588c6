defmodule Trellis.Partitions.GroupByJoinedPartitionedTest do
  # GROUP BY over a join whose joined table is partitioned (issues 11 and
  # 12): a hidden join transform over orders and the range-partitioned
  # customers feeds the group transform, so a partition attached or
  # detached rebuilds the hidden join, whose writes then reach the groups
  # (a chain of two levels for await_converged). Step by step, each write
  # or partition change followed by await_converged and target == query.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, PartitionedJoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 300_000

  @statement "TRANSFORM tier_totals FROM orders o JOIN customers c ON o.buyer_id = c.id " <>
               "SELECT c.tier, count(*) AS n, sum(o.amount) AS total, max(o.id) AS top " <>
               "GROUP BY c.tier"
  @query "SELECT c.tier, count(*), sum(o.amount), max(o.id) FROM orders o " <>
           "JOIN customers c ON o.buyer_id = c.id GROUP BY c.tier"

  test "writes through the parent and to a partition by name, an attach and a detach, each followed" do
    %{url: url, pg: pg} = Database.open!("group_joined_partitions")
    PartitionedJoinWorkload.create_tables!(pg)
    :ok = Trellis.migrate(Handles.connect!(url))
    trellis = Handles.connect!(url, staging: true, drain_threads: 2, timeout_ms: 30_000)
    {:ok, _} = Trellis.define(trellis, @statement)

    check = fn what ->
      converge!(trellis, 120_000)

      assert differences(pg, "SELECT tier, n, total, top FROM tier_totals", @query) == "0",
             "tier_totals differs (#{what})"
    end

    check.("after the build")

    steps = [
      {"a tier change through the parent", "UPDATE customers SET tier = 3 WHERE id = 10"},
      {"tier changes naming the partition",
       "UPDATE customers_c SET tier = 0 WHERE id BETWEEN 100 AND 120"},
      {"a delete naming the partition", "DELETE FROM customers_a WHERE id = 11"},
      {"an insert naming the partition", "INSERT INTO customers_a VALUES (11, 'eleven', 1)"},
      {"a row moved to another partition",
       "DELETE FROM customers_c WHERE id = 140; UPDATE customers SET id = 140 WHERE id = 12"},
      {"orders re-pointed", "UPDATE orders SET buyer_id = 160 WHERE id % 9 = 0"},
      {"a partition attached", &PartitionedJoinWorkload.attach!/1},
      {"a write to the attached partition by name",
       "UPDATE customers_d SET tier = 2 WHERE id % 5 = 0"},
      {"a partition detached", &PartitionedJoinWorkload.detach!/1},
      {"a write to the detached table", "UPDATE customers_b SET tier = 9"},
      {"a partition created for the detached range, with rows",
       "CREATE TABLE customers_e PARTITION OF customers FOR VALUES FROM (50) TO (100); " <>
         "INSERT INTO customers SELECT g, 'again ' || g, 7 FROM generate_series(50, 60) g"}
    ]

    for {what, step} <- steps do
      if is_function(step), do: step.(pg), else: SimplePG.query!(pg, step)
      check.(what)
    end

    # The steps were seen: the attached customers' orders are counted, the
    # detached ones' are not, the new partition's are.
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM tier_totals WHERE tier = 9") == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM tier_totals WHERE tier = 7") == "1"
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "tier_totals")
  end
end
