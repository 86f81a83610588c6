defmodule Trellis.Partitions.DetachConcurrentlyTest do
  # DETACH PARTITION ... CONCURRENTLY while a writer that began before it is
  # still running (spec/engine.md "Deltas", "A detach that is final"): that
  # writer still sees the partition through the parent after the detach's
  # first transaction, so after a rebuild (or the relation sync's
  # correction) read the source without the partition, its deletes through
  # the parent would take rows out of groups a second time. The relation
  # sync rebuilds the group transforms on the delta path once the detach is
  # final, also when the port that saw it pending was killed in between.
  # Seeded; replay with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, PartitionWorkload, SimplePG, Writers}
  import Trellis.Test.{Eventually, Targets}

  @moduletag :port
  @moduletag timeout: 300_000

  @tens "TRANSFORM tens FROM orders SELECT id % 10 AS k, count(*) AS n, " <>
          "sum(amount) AS total GROUP BY id % 10"
  @tens_target "SELECT k, n, total FROM tens"
  @tens_query "SELECT id % 10, count(*), sum(amount) FROM orders GROUP BY id % 10"

  @rows "TRANSFORM order_rows FROM orders SELECT amount AS amount"
  @rows_target "SELECT id, region, amount FROM order_rows"
  @rows_query "SELECT id, region, amount FROM orders"

  @pending "SELECT count(*) FROM pg_inherits " <>
             "WHERE inhrelid = 'orders_p1'::regclass AND inhdetachpending"

  setup do
    %{url: url, pg: pg} = Database.open!("detach_concurrently")
    PartitionWorkload.create_source!(pg)
    # Region 4 too, so that only orders_p1's absences fail writes.
    PartitionWorkload.attach!(pg)
    %{url: url, pg: pg}
  end

  # Rows of orders_p1 only this round writes (the random writers' keys are
  # below 2,100), one per group of `tens`.
  defp own_rows(round), do: {3_000 + round * 100, 3_000 + round * 100 + 9}

  # A REPEATABLE READ transaction on a connection of its own whose snapshot
  # and lock on orders predate the detach; its read is pruned to orders_p0,
  # so it holds no lock on orders_p1 until it writes there.
  defp early_writer!(url) do
    w = SimplePG.connect!(url)
    SimplePG.query!(w, "BEGIN ISOLATION LEVEL REPEATABLE READ")
    SimplePG.query!(w, "SELECT count(*) FROM orders WHERE region = 0")
    w
  end

  # Starts DETACH PARTITION orders_p1 CONCURRENTLY on a connection of its
  # own and returns once its first transaction has committed; the task ends
  # with the detach.
  defp start_detach!(url, pg) do
    task =
      Task.async(fn ->
        ddl = SimplePG.connect!(url)
        SimplePG.query!(ddl, "ALTER TABLE orders DETACH PARTITION orders_p1 CONCURRENTLY")
        SimplePG.close(ddl)
      end)

    assert eventually(fn -> SimplePG.scalar!(pg, @pending) == "1" end)
    task
  end

  # The early writer deletes half of the round's rows through the parent
  # and moves the other half to region 2, then commits.
  defp straggle!(w, round) do
    {first, last} = own_rows(round)
    SimplePG.query!(w, "DELETE FROM orders WHERE id BETWEEN #{first} AND #{first + 4}")
    SimplePG.query!(w, "UPDATE orders SET region = 2 WHERE id BETWEEN #{first + 5} AND #{last}")
    SimplePG.query!(w, "COMMIT")
    SimplePG.close(w)
  end

  defp add_own_rows!(pg, round) do
    {first, last} = own_rows(round)

    SimplePG.query!(
      pg,
      "INSERT INTO orders SELECT g, 1, g % 7, 'own ' || g FROM generate_series(#{first}, #{last}) g"
    )
  end

  test "4 writers while a partition is detached CONCURRENTLY and attached again, with a writer " <>
         "from before each detach deleting through the parent after a rebuild, 5000 writes",
       %{url: url, pg: pg} do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("detach concurrently seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    {a, b} = Handles.fleet!(url, [staging: true, drain_threads: 2], drain_threads: 2)
    {:ok, {:transform_defined, _}} = Trellis.define(a, @tens)
    {:ok, {:transform_defined, _}} = Trellis.define(a, @rows)
    converge!(a)

    # One round: the partition leaves CONCURRENTLY while an early writer
    # holds the detach in its second transaction; a rebuild of tens reads
    # the source without the partition (and, when `seen`, the relation sync
    # applies the pending detach and its correction is drained, which
    # recomputes every group: the partition's rows span them all; the
    # straggler's deltas come after it); the early writer then deletes and
    # moves rows of the partition through the parent and commits, which
    # lets the detach end. Every round but the last attaches it again.
    round = fn n, seen, attach_again ->
      fn ddl ->
        add_own_rows!(ddl, n)
        w = early_writer!(url)
        detach = start_detach!(url, ddl)
        :ok = Trellis.request_backfill(a, "tens")

        assert eventually(fn ->
                 SimplePG.scalar!(ddl, "SELECT count(*) FROM trellis.jobs") == "0"
               end)

        if seen do
          assert eventually(fn ->
                   SimplePG.scalar!(
                     ddl,
                     "SELECT count(*) FROM trellis.source_relations " <>
                       "WHERE relid = 'orders_p1'::regclass"
                   ) == "0" and
                     SimplePG.scalar!(ddl, "SELECT count(*) FROM trellis.corrections") == "0"
                 end)
        end

        straggle!(w, n)
        Task.await(detach, 60_000)

        if attach_again do
          SimplePG.query!(ddl, "ALTER TABLE orders ATTACH PARTITION orders_p1 FOR VALUES IN (1)")

          # The next round starts once the relation sync has taken the
          # partition back: a partition attached and detached again between
          # two of its rounds is a case it does not handle yet (spec/engine.md
          # "A detach that is final", "What is left"), which this test ran
          # into by chance when the next round came quickly.
          assert eventually(fn ->
                   SimplePG.scalar!(
                     ddl,
                     "SELECT count(*) FROM trellis.source_relations " <>
                       "WHERE relid = 'orders_p1'::regclass"
                   ) == "1"
                 end)
        end
      end
    end

    {committed, _at_last} =
      Writers.with_changes(
        url,
        4,
        fn w, counter -> PartitionWorkload.run(url, w, seed, 1_250, counter) end,
        [
          {600, round.(1, false, true)},
          {1_800, round.(2, true, true)},
          {3_000, round.(3, true, false)}
        ]
      )

    # Each round starts at its count of writes (600, 1800, 3000 of 5000), so
    # while the writers run; how far a round overlaps them depends on the
    # machine (the rounds wait for a rebuild and a drained correction, and in
    # a loaded full suite the writers can finish first). What the test
    # proves does not: each round's early writer straggles deterministically.
    assert committed > 3_500, "only #{committed} of 5000 writes committed"
    converge!(b, 240_000)

    assert differences(pg, @tens_target, @tens_query) == "0",
           "tens differs from its definition (seed #{seed})"

    assert differences(pg, @rows_target, @rows_query) == "0",
           "order_rows differs from its definition (seed #{seed}): " <>
             difference_sample(pg, @rows_target, @rows_query)

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pending_detaches") == "0"

    for name <- ["tens", "order_rows"] do
      assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(b, name)
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "the port that saw a detach pending is killed before it is final: the next one rebuilds",
       %{url: url, pg: pg} do
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    a = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    {:ok, {:transform_defined, _}} = Trellis.define(a, @tens)
    add_own_rows!(pg, 1)
    converge!(a)

    w = early_writer!(url)
    detach = start_detach!(url, pg)
    # The relation sync applies the pending detach (its correction
    # recomputes the groups of orders_p1's rows) and records it.
    assert eventually(fn ->
             SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pending_detaches") == "1"
           end)

    converge!(a)
    assert differences(pg, @tens_target, @tens_query) == "0"
    os_pid = a.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])

    straggle!(w, 1)
    Task.await(detach, 60_000)
    assert SimplePG.scalar!(pg, @pending) == "0"

    Handles.with_handle(url, [staging: true, drain_threads: 1], fn c ->
      converge!(c)
      assert differences(pg, @tens_target, @tens_query) == "0"
      assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pending_detaches") == "0"
      assert {:ok, %Trellis.Status{status: :live, correcting: []}} = Trellis.status(c, "tens")
    end)
  end
end
