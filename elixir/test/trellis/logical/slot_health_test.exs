defmodule Trellis.Logical.SlotHealthTest do
  # The replication slot of capture by logical decoding (issue 28), through
  # the real port on a cluster with wal_level = logical: dropped with the
  # last transform and made again by the next define; a slot dropped by
  # hand, a publication altered by hand and a staging worker that fell
  # behind show in status/2 as capture_failure, the first two repaired by
  # the staging worker with every write kept (zero differences after
  # await_converged); the lag metrics. Seeded: TRELLIS_SEED=<n> replays.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, SimplePG, Workload}
  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  @projections [
    {"all_columns",
     "TRANSFORM all_columns FROM items SELECT name AS name, amount AS amount, at AS at, doc AS doc, flag AS flag",
     "SELECT id, name, amount, at, doc, flag FROM items"},
    {"flagged",
     "TRANSFORM flagged FROM items AS i SELECT upper(i.name) AS shout, i.amount * 2 AS double WHERE i.flag AND i.amount > 20",
     "SELECT id, upper(name), amount * 2 FROM items WHERE flag AND amount > 20"}
  ]

  @logical [staging: true, drain_threads: 2, capture: :logical]

  setup context do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("#{context.test} seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!("slot_health", wal_level: :logical)
    Workload.create_source!(pg)
    %{url: url, pg: pg, seed: seed}
  end

  defp slots(pg),
    do:
      SimplePG.scalar!(
        pg,
        "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"
      )

  defp publications(pg),
    do: SimplePG.scalar!(pg, "SELECT count(*) FROM pg_publication WHERE pubname LIKE 'trellis%'")

  defp slot_name(pg), do: SimplePG.scalar!(pg, "SELECT slot_name FROM trellis.capture_feed")

  defp write(url, seed, writers, count),
    do: Enum.map(1..writers, &Task.async(fn -> Workload.run(url, &1, seed, count) end))

  # Drops the slot by hand, as an operator must while the staging worker
  # streams it (its walsender has the slot active between batches, and the
  # server refuses to drop an active slot): the walsender is ended first,
  # and the drop is tried again should the worker start a new stream in
  # between.
  defp drop_slot_by_hand!(pg, name) do
    assert eventually(fn ->
             match?(
               {:ok, _},
               SimplePG.query(pg, """
               DO $$
               BEGIN
                 PERFORM pg_terminate_backend(active_pid) FROM pg_replication_slots
                   WHERE slot_name = '#{name}' AND active_pid IS NOT NULL;
                 FOR i IN 1..200 LOOP
                   EXIT WHEN NOT EXISTS (SELECT FROM pg_replication_slots
                                         WHERE slot_name = '#{name}' AND active);
                   PERFORM pg_sleep(0.005);
                 END LOOP;
                 PERFORM pg_drop_replication_slot('#{name}');
               END $$
               """)
             )
           end)
  end

  # A gauge of `handle` as Trellis.Metrics renders it (nil: no series).
  defp gauge(handle, name) do
    :ok = Trellis.Metrics.flush(handle)
    prefix = ~s(#{name}{trellis_instance="#{handle.instance}"} )

    Trellis.Metrics.render_prometheus()
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      if String.starts_with?(line, prefix), do: String.replace_prefix(line, prefix, "")
    end)
  end

  defp pause_and_drop!(handle, name) do
    {:ok, _} = Trellis.apply(handle, "PAUSE TRANSFORM #{name}")
    {:ok, _} = Trellis.apply(handle, "DROP TRANSFORM #{name}")
  end

  test "dropping the last transform drops the slot and the publication; the next define makes them again and stays exact",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    assert slots(pg) == "1"
    assert publications(pg) == "1"
    write(url, seed, 2, 100) |> Task.await_many(240_000)
    assert_all_equal(a, pg, @projections, "seed #{seed}")

    # One transform left: the slot stays.
    pause_and_drop!(b, "flagged")
    assert slots(pg) == "1"
    # The last one: no slot, no publication; the mode stays logical.
    pause_and_drop!(b, "all_columns")
    assert slots(pg) == "0"
    assert publications(pg) == "0"
    assert SimplePG.scalar!(pg, "SELECT mode FROM trellis.capture_feed") == "logical"
    assert SimplePG.scalar!(pg, "SELECT slot_name IS NULL FROM trellis.capture_feed") == "t"
    # Writes with no transform cost no slot, and a later define reads them
    # from the table.
    Workload.run(url, 5, seed, 60)
    converge!(a)

    # A define from the handle that does not stage makes them again.
    define_all!(b, @projections)
    assert slots(pg) == "1"
    assert publications(pg) == "1"

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") ==
             "0"

    write(url, seed + 1, 3, 150) |> Task.await_many(240_000)
    assert_all_equal(a, pg, @projections, "after the slot was made again, seed #{seed}")
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "a slot dropped by hand while writes run is replaced, every target rebuilt, nothing lost",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)
    name = slot_name(pg)
    running = write(url, seed, 3, 300)
    Process.sleep(300)
    drop_slot_by_hand!(pg, name)
    Task.await_many(running, 240_000)
    # The staging worker made a new one (same name) within its round.
    assert eventually(fn -> slots(pg) == "1" end)
    assert_all_equal(b, pg, @projections, "after the slot was dropped, seed #{seed}")

    assert {:ok, %Trellis.Status{capture_failure: nil, status: :live}} =
             Trellis.status(b, "flagged")

    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "a lost slot shows in status as slot_lost until a staging handle replaces it",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)
    Trellis.shutdown(a)
    name = slot_name(pg)
    drop_slot_by_hand!(pg, name)
    # Writes while there is no slot at all.
    Workload.run(url, 1, seed, 150)

    assert {:ok, %Trellis.Status{capture_failure: failure}} = Trellis.status(b, "flagged")
    assert %Trellis.CaptureFailure{kind: :slot_lost, message: message} = failure
    assert message =~ name
    assert message =~ "dropped outside Trellis"
    assert message =~ "staging: true"

    staging = Handles.connect!(url, @logical)
    assert slots(pg) == "1"
    assert_all_equal(staging, pg, @projections, "after the slot was replaced, seed #{seed}")
    assert {:ok, %Trellis.Status{capture_failure: nil}} = Trellis.status(b, "flagged")
    Trellis.shutdown(b)
  end

  test "a source removed from the publication by hand is reported, published again and rebuilt",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)
    publication = slot_name(pg)

    in_publication = fn ->
      SimplePG.scalar!(
        pg,
        "SELECT count(*) FROM pg_publication_tables WHERE pubname = '#{publication}' AND tablename = 'items'"
      )
    end

    # Reported while nobody stages.
    Trellis.shutdown(a)
    SimplePG.query!(pg, ~s(ALTER PUBLICATION "#{publication}" DROP TABLE items))
    Workload.run(url, 1, seed, 100)

    assert {:ok, %Trellis.Status{capture_failure: failure}} = Trellis.status(b, "all_columns")
    assert %Trellis.CaptureFailure{kind: :publication_altered, message: message} = failure
    assert message =~ "public.items"
    assert message =~ "publishes them again"

    # Repaired by the staging worker, under writes, twice.
    staging = Handles.connect!(url, @logical)
    assert eventually(fn -> in_publication.() == "1" end)
    assert_all_equal(staging, pg, @projections, "after the first repair, seed #{seed}")

    running = write(url, seed + 1, 2, 300)
    Process.sleep(200)
    SimplePG.query!(pg, ~s(ALTER PUBLICATION "#{publication}" DROP TABLE items))
    Task.await_many(running, 240_000)
    assert eventually(fn -> in_publication.() == "1" end)
    assert_all_equal(staging, pg, @projections, "after the repair under writes, seed #{seed}")
    assert {:ok, %Trellis.Status{capture_failure: nil}} = Trellis.status(b, "all_columns")
    Trellis.shutdown(b)
  end

  test "a staging worker that stopped reading shows as slot_behind; the lag metrics",
       %{url: url, pg: pg, seed: seed} do
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)

    # The elected staging worker publishes the slot's lag: the slot always
    # holds some WAL back, and staging keeps up.
    assert eventually(fn ->
             retained = gauge(a, "trellis_capture_slot_retained_bytes")
             retained != nil and String.to_integer(retained) > 0
           end)

    assert gauge(a, "trellis_capture_slot_lag_seconds") in ["0", "0.0"] or
             String.to_float(gauge(a, "trellis_capture_slot_lag_seconds")) < 5

    assert gauge(a, "trellis_capture_slot_lag_bytes") != nil

    Trellis.shutdown(a)
    Workload.run(url, 1, seed, 50)
    assert {:ok, %Trellis.Status{capture_failure: nil}} = Trellis.status(b, "flagged")

    # kBehindSeconds (30 s) with WAL to read and nobody reading it.
    assert eventually(
             fn ->
               SimplePG.query!(pg, "UPDATE items SET amount = amount WHERE id = 1")

               match?(
                 {:ok,
                  %Trellis.Status{capture_failure: %Trellis.CaptureFailure{kind: :slot_behind}}},
                 Trellis.status(b, "flagged")
               )
             end,
             3000
           )

    {:ok, %Trellis.Status{capture_failure: failure}} = Trellis.status(b, "flagged")
    assert failure.message =~ "has not read replication slot"
    assert failure.message =~ "staging: true"
    assert %DateTime{} = failure.since

    staging = Handles.connect!(url, @logical)
    assert_all_equal(staging, pg, @projections, "after staging came back, seed #{seed}")

    assert eventually(fn ->
             match?({:ok, %{capture_failure: nil}}, Trellis.status(b, "flagged"))
           end)

    Trellis.shutdown(b)
  end
end
