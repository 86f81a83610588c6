defmodule Trellis.Partitions.ReattachedPartitionTest do
  # A partition detached and attached again before the relation sync has
  # looked (spec/engine.md "Partitioned and inherited sources"): it is under
  # the source both times the sync looks, yet while it was out a rebuild
  # read the source without its rows and writes named it. Made
  # deterministic by the handles' workers: no staging worker (so no relation
  # sync) runs from the detach to the attach, and drain workers rebuild the
  # targets in between. Then the same under 4 seeded writers, with the
  # partition out for much less than a sync round, three times (replay with
  # TRELLIS_SEED=<n>).
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, PartitionWorkload, SimplePG, Writers}
  import Trellis.Test.Handles, only: [with_handle: 3]
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

  test "4 writers through the parent and naming partitions while a partition leaves and " <>
         "comes back within a sync round three times, 5000 writes, a fleet of two handles",
       %{url: url, pg: pg} do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("reattached partition seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    # Region 4 too, so that only orders_p1's absences fail writes.
    PartitionWorkload.attach!(pg)
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    {:ok, {:transform_defined, _}} = Trellis.define(a, @tens)
    {:ok, {:transform_defined, _}} = Trellis.define(a, @rows)
    converge!(a)
    assert_exact(pg)

    # Out until both targets are rebuilt without it (tens, grouped, is not
    # keyed by the source; order_rows is), a few tens of ms, during which
    # writes naming orders_p1 go on (to the table alone) and writes
    # through the parent to region 1 fail and roll back; then back.
    out_and_back = fn ddl ->
      PartitionWorkload.detach!(ddl)
      :ok = Trellis.request_backfill(a, "tens")
      :ok = Trellis.request_backfill(b, "order_rows")

      assert eventually(fn ->
               SimplePG.scalar!(ddl, "SELECT count(*) FROM trellis.jobs") ==
                 "0"
             end)

      SimplePG.query!(ddl, "ALTER TABLE orders ATTACH PARTITION orders_p1 FOR VALUES IN (1)")
    end

    {committed, at_last} =
      Writers.with_changes(
        url,
        4,
        fn w, counter -> PartitionWorkload.run(url, w, seed, 1_250, counter) end,
        [{600, out_and_back}, {1_800, out_and_back}, {3_000, out_and_back}]
      )

    assert at_last < 4_500, "the writers finished before the partition changes"
    assert committed > 3_500, "only #{committed} of 5000 writes committed"
    converge!(b, 240_000)

    assert differences(pg, @tens_target, @tens_query) == "0",
           "tens differs from its definition (seed #{seed})"

    assert differences(pg, @rows_target, @rows_query) == "0",
           "order_rows differs from its definition (seed #{seed})"

    for name <- ["tens", "order_rows"] do
      assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end
end
