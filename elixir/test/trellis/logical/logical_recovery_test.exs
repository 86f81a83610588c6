defmodule Trellis.Logical.LogicalRecoveryTest do
  # Capture by logical decoding (issue 28) through failures, on real
  # clusters with wal_level = logical and the real port: self-check with
  # writes in flight reports no false difference (the slot's unstaged writes
  # are invisible to SQL) and still finds a real one; PostgreSQL restarted
  # fast and immediate while writes stream; the staging port killed -9 in
  # the window between reading the slot and committing its batch, forced by
  # holding the catalog row that batch must update. Zero differences every
  # time. Seeded: TRELLIS_SEED=<n> replays.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, GroupWorkload, Handles, SimplePG, Workload}
  alias Trellis.TestCluster
  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  @projections [
    {"item_view",
     "TRANSFORM item_view FROM items SELECT name AS name, amount * 2 AS twice, doc AS doc, flag AS flag, at AS at",
     "SELECT id, name, amount * 2, doc, flag, at FROM items"}
  ]

  @groups [
    {"g_multi",
     "TRANSFORM g_multi FROM facts SELECT g1, g2, count(*) AS c, sum(i) AS si, sum(n) AS sn, " <>
       "avg(n) AS an, count(f) AS cf GROUP BY g1, g2",
     "SELECT g1, g2, count(*), sum(i), sum(n), avg(n), count(f) FROM facts GROUP BY g1, g2",
     "g1, g2, c, si, sn, an, cf"}
  ]

  @logical [staging: true, drain_threads: 2, capture: :logical]

  setup context do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("#{context.test} seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{seed: seed}
  end

  # Random writes in rounds of 20 on a new connection each, until stop/1; a
  # round the server refused (restarting) is retried after a pause.
  defp steady_writes(url, writer, seed) do
    stop = :atomics.new(1, [])

    task =
      Task.async(fn ->
        Stream.iterate(1, &(&1 + 1))
        |> Enum.reduce_while(0, fn round, done ->
          done =
            try do
              Workload.run(url, writer, seed + round, 20, truncate: false)
              done + 1
            rescue
              _ -> Process.sleep(100) && done
            end

          if :atomics.get(stop, 1) == 1, do: {:halt, done}, else: {:cont, done}
        end)
      end)

    {stop, task}
  end

  defp stop_writes({stop, task}) do
    :atomics.put(stop, 1, 1)
    Task.await(task, 120_000)
  end

  defp check(trellis, name) do
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(trellis, name)
    await_self_check!(trellis, id)
  end

  test "self-check with writes in flight in logical mode reports no false difference, and a real one",
       %{seed: seed} do
    %{url: url, pg: pg} = Database.open!("logical_self_check", wal_level: :logical)
    Workload.create_source!(pg)
    {a, _} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)
    writers = [steady_writes(url, 1, seed), steady_writes(url, 2, seed + 7)]

    for run <- 1..10 do
      job = check(a, "item_view")
      assert %Trellis.SelfCheckJob{state: :done, report: report} = job, "run #{run}"
      assert report.divergence_count == 0, "run #{run}, seed #{seed}: #{inspect(report)}"
      assert report.outcome == :clean, "run #{run}, seed #{seed}: #{inspect(report)}"
    end

    assert Enum.all?(Enum.map(writers, &stop_writes/1), &(&1 > 1)), "the writers kept writing"
    assert_all_equal(a, pg, @projections, "seed #{seed}")

    # A real difference is still found: three rows changed behind Trellis.
    SimplePG.query!(
      pg,
      "UPDATE item_view SET twice = -1 WHERE id IN (SELECT id FROM item_view ORDER BY id LIMIT 3)"
    )

    job = check(a, "item_view")
    assert %Trellis.SelfCheckJob{state: :done, report: report} = job
    assert report.divergence_count == 3, inspect(report)
    assert report.outcome == :diverged
    Trellis.shutdown(a)
  end

  for mode <- [:fast, :immediate] do
    test "PostgreSQL restarted #{mode} while writes stream loses and doubles nothing",
         %{seed: seed} do
      {:ok, testkit} = TestCluster.testkit_path()
      # Durable: an immediate stop keeps every commit a writer was told of.
      {holder, url} = TestCluster.start!(testkit, ["--logical", "--durable"])
      on_exit(fn -> Process.exit(holder, :kill) end)
      pg = SimplePG.connect!(url)
      Workload.create_source!(pg)
      GroupWorkload.create_source!(pg)
      SimplePG.close(pg)

      {a, b} = Handles.fleet!(url, @logical, staging: true, drain_threads: 1, capture: :logical)
      define_all!(a, @projections)
      define_all!(a, Enum.map(@groups, fn {n, d, q, _} -> {n, d, q} end))
      converge!(a)

      writers = [steady_writes(url, 1, seed), steady_writes(url, 2, seed + 3)]
      Process.sleep(1_500)
      TestCluster.restart!(holder, url, unquote(mode))
      Process.sleep(1_500)
      assert Enum.all?(Enum.map(writers, &stop_writes/1), &(&1 > 1))
      GroupWorkload.run(url, 9, seed, 100, truncate: false)

      pg = SimplePG.connect!(url)
      assert eventually(fn -> match?({:ok, _}, Trellis.watermark_token(a)) end, 3000)
      assert_all_equal(a, pg, @projections, "#{unquote(mode)} restart, seed #{seed}")
      converge!(b, 240_000)

      for {name, _, query, columns} <- @groups do
        assert differences(pg, "SELECT #{columns} FROM #{name}", query) == "0",
               "#{name} differs (#{unquote(mode)} restart, seed #{seed})"
      end

      assert SimplePG.scalar!(pg, "SELECT count(*) FROM pg_replication_slots") == "1"
      Trellis.shutdown(a)
      Trellis.shutdown(b)
    end
  end

  # The server keeps a slot's confirmed position on disk only now and then
  # (when its restart point moves, and at checkpoints), so an immediate
  # restart takes the slot back while the catalog's staged position, which
  # committed, stays: everything between is handed over again and skipped.
  # Here that is thousands of row changes, more than one batch reads: each
  # read ends inside what was staged already.
  test "an immediate restart that takes the slot back over more than a batch of staged changes catches up",
       %{seed: seed} do
    {:ok, testkit} = TestCluster.testkit_path()
    {holder, url} = TestCluster.start!(testkit, ["--logical", "--durable"])
    on_exit(fn -> Process.exit(holder, :kill) end)
    pg = SimplePG.connect!(url)
    Workload.create_source!(pg)
    {a, b} = Handles.fleet!(url, @logical, staging: true, drain_threads: 1, capture: :logical)
    define_all!(a, @projections)
    converge!(a)

    # 12 transactions of 600 changes each (a batch reads about 4000), all
    # staged before the restart.
    for n <- 1..12 do
      SimplePG.query!(pg, "UPDATE items SET amount = amount + #{n}")
    end

    converge!(a)
    SimplePG.close(pg)
    TestCluster.restart!(holder, url, :immediate)
    Workload.run(url, 1, seed, 100, truncate: false)

    pg = SimplePG.connect!(url)
    assert eventually(fn -> match?({:ok, _}, Trellis.watermark_token(a)) end, 3000)
    # Within a minute: the slot stuck re-reading what was staged never gets here.
    converge!(b, 60_000)

    for {name, _, query} <- @projections do
      assert differences(pg, "TABLE #{name}", query) == "0", "#{name} differs (seed #{seed})"
    end

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "kill -9 of the staging port between reading the slot and committing its batch loses and doubles nothing",
       %{seed: seed} do
    %{url: url, pg: pg} = Database.open!("logical_kill_window", wal_level: :logical)
    GroupWorkload.create_source!(pg)
    {a, b} = Handles.fleet!(url, @logical, staging: true, drain_threads: 1, capture: :logical)
    define_all!(a, Enum.map(@groups, fn {n, d, q, _} -> {n, d, q} end))
    converge!(a)
    assert eventually(fn -> Trellis.has_live_staging_worker(b) == {:ok, true} end)

    # Hold the position row: the next batch reads the slot, writes its
    # pages, and then waits on this lock to record how far it staged.
    holder = SimplePG.connect!(url)
    SimplePG.query!(holder, "BEGIN; SELECT * FROM trellis.capture_feed FOR UPDATE")

    running =
      Enum.map(
        1..3,
        &Task.async(fn -> GroupWorkload.run(url, &1, seed, 300, truncate: false) end)
      )

    assert eventually(fn ->
             SimplePG.scalar!(pg, """
             SELECT count(*) FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%capture_feed SET%'
             """) == "1"
           end)

    # The batch's pages are written and uncommitted: kill the port there.
    os_pid = a.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    SimplePG.query!(holder, "ROLLBACK")
    SimplePG.close(holder)
    Task.await_many(running, 240_000)
    GroupWorkload.run(url, 9, seed, 100, truncate: false)

    converge!(b, 240_000)

    for {name, _, query, columns} <- @groups do
      assert differences(pg, "SELECT #{columns} FROM #{name}", query) == "0",
             "#{name} differs (seed #{seed})"
    end

    Trellis.shutdown(b)
  end
end
