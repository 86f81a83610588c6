defmodule Trellis.Partitions.DetachedPartitionDeltasTest do
  # A group transform over a partitioned source takes deltas; a write that
  # names a partition detached a moment ago (its capture triggers are still
  # there until the relation sync sees the detach) must not count as one
  # (spec/engine.md "Deltas"). Made deterministic by the handles' workers: no
  # staging worker (so no relation sync) runs between the detach and the
  # write, and a rebuild in between records a snapshot that already lacks the
  # partition's rows, so a -1 taken as a delta would remove them twice.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, PartitionWorkload, SimplePG}
  import Trellis.Test.Handles, only: [with_handle: 3]
  import Trellis.Test.{Eventually, Targets}

  @moduletag :port
  @moduletag timeout: 120_000

  @definition "TRANSFORM tens FROM orders SELECT id % 10 AS k, count(*) AS n, " <>
                "sum(amount) AS total GROUP BY id % 10"
  @target "SELECT k, n, total FROM tens"
  @query "SELECT id % 10, count(*), sum(amount) FROM orders GROUP BY id % 10"

  setup do
    %{url: url, pg: pg} = Database.open!("detached_deltas")
    PartitionWorkload.create_source!(pg)
    SimplePG.query!(pg, "CREATE INDEX ON orders ((id % 10))")
    %{url: url, pg: pg}
  end

  test "a write naming a just-detached partition, after a rebuild that saw the detach, " <>
         "converges to the source",
       %{url: url, pg: pg} do
    with_handle(url, [], &(:ok = Trellis.migrate(&1)))

    with_handle(url, [staging: true, drain_threads: 1], fn a ->
      {:ok, {:transform_defined, _}} = Trellis.define(a, @definition)
      converge!(a)
      # Writes through the parent and naming a partition, as deltas.
      SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 7 = 0")
      SimplePG.query!(pg, "UPDATE orders_p2 SET amount = 3 WHERE id % 5 = 0")
      converge!(a)
      assert differences(pg, @target, @query) == "0"
    end)

    SimplePG.query!(pg, "ALTER TABLE orders DETACH PARTITION orders_p1")
    # A transaction committed after the detach: a snapshot that sees it
    # sees the detach.
    after_detach = SimplePG.scalar!(pg, "SELECT pg_current_xact_id()")

    # Drain workers only: the rebuild runs, the relation sync does not (status
    # reads :backfilling meanwhile: the detach is not applied yet).
    with_handle(url, [staging: false, drain_threads: 1], fn b ->
      :ok = Trellis.request_backfill(b, "tens")

      assert eventually(fn ->
               SimplePG.scalar!(
                 pg,
                 "SELECT EXISTS (SELECT 1 FROM trellis.group_snapshots WHERE keys IS NULL " <>
                   "AND pg_visible_in_snapshot('#{after_detach}'::xid8, snapshot))"
               ) == "t"
             end)

      assert differences(pg, @target, @query) == "0"
    end)

    # Every row of orders_p1 in group 1 (ids 1, 21, 41, ...): the detach
    # took them out of orders already, and no other row of orders_p1 is in
    # that group, so the detach's correction does not recompute it.
    SimplePG.query!(pg, "DELETE FROM orders_p1 WHERE id % 10 = 1")

    assert SimplePG.scalar!(
             pg,
             "SELECT count(*) FROM trellis.capture WHERE relid = 'orders_p1'::regclass"
           ) == "1"

    with_handle(url, [staging: true, drain_threads: 1], fn c ->
      converge!(c)
      assert differences(pg, @target, @query) == "0"
      assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(c, "tens")
    end)
  end
end
