defmodule Trellis.Partitions.ReattachedPartitionTest do
  # A partition detached and attached again before the relation sync has
  # looked (spec/engine.md "Partitioned and inherited sources"): it is under
  # the source both times the sync looks, yet while it was out a rebuild
  # read the source without its rows and writes named it. Made
  # deterministic by the handles' workers: no staging worker (so no relation
  # sync) runs from the detach to the attach, and drain workers rebuild the
  # targets in between.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, PartitionWorkload, SimplePG}
  import Trellis.Test.{Eventually, Targets}

  @moduletag :port
  @moduletag timeout: 120_000

  @tens "TRANSFORM tens FROM orders SELECT id % 10 AS k, count(*) AS n, " <>
          "sum(amount) AS total GROUP BY id % 10"
  @tens_target "SELECT k, n, total FROM tens"
  @tens_query "SELECT id % 10, count(*), sum(amount) FROM orders GROUP BY id % 10"

  @rows "TRANSFORM order_rows FROM orders SELECT amount AS amount"
  @rows_target "SELECT id, region, amount FROM order_rows"
  @rows_query "SELECT id, region, amount FROM orders"

  setup do
    %{url: url, pg: pg} = Database.open!("reattached")
    PartitionWorkload.create_source!(pg)
    SimplePG.query!(pg, "CREATE INDEX ON orders ((id % 10))")
    %{url: url, pg: pg}
  end

  defp with_handle(url, opts, fun) do
    handle = Trellis.connect!([url: url, timeout_ms: 10_000] ++ opts)

    try do
      fun.(handle)
    after
      Trellis.shutdown(handle)
    end
  end

  defp assert_exact(pg) do
    assert differences(pg, @tens_target, @tens_query) == "0"
    assert differences(pg, @rows_target, @rows_query) == "0"
  end

  test "a partition detached, rebuilt without, written and attached again between two " <>
         "syncs converges to the source, grouped and projected",
       %{url: url, pg: pg} do
    with_handle(url, [], &(:ok = Trellis.migrate(&1)))

    with_handle(url, [staging: true, drain_threads: 1], fn a ->
      {:ok, {:transform_defined, _}} = Trellis.define(a, @tens)
      {:ok, {:transform_defined, _}} = Trellis.define(a, @rows)
      converge!(a)
      assert_exact(pg)
    end)

    PartitionWorkload.detach!(pg)
    # A transaction committed after the detach: a snapshot that sees it
    # sees the detach.
    after_detach = SimplePG.scalar!(pg, "SELECT pg_current_xact_id()")

    # Drain workers only: both rebuilds run and read orders without
    # orders_p1; the relation sync does not run.
    with_handle(url, [staging: false, drain_threads: 1], fn b ->
      :ok = Trellis.request_backfill(b, "tens")
      :ok = Trellis.request_backfill(b, "order_rows")

      assert eventually(fn ->
               SimplePG.scalar!(
                 pg,
                 "SELECT EXISTS (SELECT 1 FROM trellis.group_snapshots WHERE keys IS NULL " <>
                   "AND pg_visible_in_snapshot('#{after_detach}'::xid8, snapshot))"
               ) == "t" and differences(pg, @rows_target, @rows_query) == "0"
             end)

      assert_exact(pg)
    end)

    # Writes naming orders_p1 while it is out: their capture rows are staged
    # only after it is back.
    SimplePG.query!(pg, "DELETE FROM orders_p1 WHERE id % 10 = 1")
    SimplePG.query!(pg, "UPDATE orders_p1 SET amount = amount + 1 WHERE id % 10 = 3")
    SimplePG.query!(pg, "ALTER TABLE orders ATTACH PARTITION orders_p1 FOR VALUES IN (1)")
    assert differences(pg, @rows_target, @rows_query) != "0"

    with_handle(url, [staging: true, drain_threads: 1], fn c ->
      converge!(c)
      assert_exact(pg)

      for name <- ["tens", "order_rows"] do
        assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(c, name)
      end

      # Captured again: later writes naming it reach both targets.
      SimplePG.query!(pg, "UPDATE orders_p1 SET amount = amount + 2 WHERE id % 10 = 5")
      converge!(c)
      assert_exact(pg)
    end)
  end
end
