defmodule Trellis.Logical.LogicalCaptureTest do
  # Capture by logical decoding (issue 28), through the real port on a
  # cluster with wal_level = logical: the randomized differential tests of a
  # projection, a GROUP BY and a join with the staging handle connected with
  # capture: :logical (concurrent writers, await_converged, each target
  # equal to a fresh run of its query), TRUNCATE, a partitioned source, a
  # kill -9 of the staging port while it reads the slot, and a switch of
  # modes while writes run. No capture trigger exists in logical mode.
  # Seeded: the seed is printed and replayed with TRELLIS_SEED=<n>.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, GroupWorkload, Handles, JoinWorkload, SimplePG, Workload}
  import Trellis.Test.Eventually, only: [eventually: 1]
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

  # A group target's key is hidden: it is compared by its visible columns.
  @groups [
    {"g_multi",
     "TRANSFORM g_multi FROM facts SELECT g1, g2, count(*) AS c, sum(i) AS si, sum(n) AS sn, " <>
       "avg(n) AS an, count(f) AS cf GROUP BY g1, g2",
     "SELECT g1, g2, count(*), sum(i), sum(n), avg(n), count(f) FROM facts GROUP BY g1, g2",
     "g1, g2, c, si, sn, an, cf"},
    {"g_where",
     "TRANSFORM g_where FROM facts AS x SELECT x.g1, sum(x.n) AS sn, count(*) AS c " <>
       "WHERE x.flag AND x.n > 10 GROUP BY x.g1",
     "SELECT g1, sum(n), count(*) FROM facts WHERE flag AND n > 10 GROUP BY g1", "g1, sn, c"},
    {"g_extremes",
     "TRANSFORM g_extremes FROM facts SELECT g2, min(ts) AS first, max(n) AS hi GROUP BY g2",
     "SELECT g2, min(ts), max(n) FROM facts GROUP BY g2", "g2, first, hi"}
  ]

  @joins [
    {"order_rows",
     "TRANSFORM order_rows FROM orders AS o JOIN customers AS c ON o.customer_id = c.id " <>
       "LEFT JOIN regions AS r ON c.region_id = r.id " <>
       "SELECT c.name AS customer, r.label AS region, o.amount * coalesce(r.vat, 1) AS gross",
     "SELECT o.id, c.name, r.label, o.amount * coalesce(r.vat, 1) " <>
       "FROM orders o JOIN customers c ON o.customer_id = c.id " <>
       "LEFT JOIN regions r ON c.region_id = r.id"},
    {"order_contacts",
     "TRANSFORM order_contacts FROM orders o LEFT JOIN customers k ON k.email = o.contact " <>
       "SELECT k.id AS contact_id, o.note",
     "SELECT o.id, k.id, o.note FROM orders o LEFT JOIN customers k ON k.email = o.contact"}
  ]

  @logical [staging: true, drain_threads: 2, capture: :logical]

  setup context do
    seed = String.to_integer(System.get_env("TRELLIS_SEED") || "#{:rand.uniform(1_000_000)}")
    IO.puts("#{context.test} seed #{seed} (replay with TRELLIS_SEED=#{seed})")
    %{url: url, pg: pg} = Database.open!("logical_capture", wal_level: :logical)
    %{url: url, pg: pg, seed: seed}
  end

  defp capture_triggers(pg),
    do: SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'")

  defp slots(pg),
    do:
      SimplePG.scalar!(
        pg,
        "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"
      )

  defp define_groups!(handle, groups),
    do: define_all!(handle, Enum.map(groups, fn {n, d, q, _} -> {n, d, q} end))

  defp assert_groups_equal(handle, pg, groups, context) do
    converge!(handle, 240_000)

    for {name, _definition, query, columns} <- groups do
      assert differences(pg, "SELECT #{columns} FROM #{name}", query) == "0",
             "#{name} differs (#{context})"
    end
  end

  defp write(fun, count), do: 1..count |> Enum.map(&Task.async(fn -> fun.(&1) end))

  test "a projection converges under 4 concurrent writers, with no capture trigger",
       %{url: url, pg: pg, seed: seed} do
    Workload.create_source!(pg)
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 2)
    define_all!(a, @projections)
    assert capture_triggers(pg) == "0"
    assert slots(pg) == "1"
    assert SimplePG.scalar!(pg, "SELECT mode FROM trellis.capture_feed") == "logical"
    assert {:ok, %Trellis.Status{capture_mode: :logical}} = Trellis.status(b, "flagged")

    write(&Workload.run(url, &1 - 1, seed, 200), 4) |> Task.await_many(240_000)
    assert_all_equal(a, pg, @projections, "seed #{seed}")
    assert capture_triggers(pg) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.capture") == "0"
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "GROUP BY targets converge under 4 concurrent writers (REPLICA IDENTITY FULL set)",
       %{url: url, pg: pg, seed: seed} do
    GroupWorkload.create_source!(pg)
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 2)
    define_groups!(a, @groups)
    # Group columns are not the key: their old values must be in the WAL.
    assert SimplePG.scalar!(pg, "SELECT relreplident FROM pg_class WHERE oid = 'facts'::regclass") ==
             "f"

    write(&GroupWorkload.run(url, &1 - 1, seed, 300, truncate: false), 4)
    |> Task.await_many(240_000)

    assert_groups_equal(a, pg, @groups, "seed #{seed}")
    assert capture_triggers(pg) == "0"
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "joins converge under 4 concurrent writers over all three tables",
       %{url: url, pg: pg, seed: seed} do
    JoinWorkload.create_tables!(pg)
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 2)
    define_all!(a, @joins)
    converge!(a)

    committed = JoinWorkload.writers(url, seed, 4, 400) |> Task.await_many(240_000) |> Enum.sum()
    assert committed > 1_000
    assert_all_equal(b, pg, @joins, "seed #{seed}")
    assert capture_triggers(pg) == "0"
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "TRUNCATE of a source rebuilds its targets", %{url: url, pg: pg} do
    Workload.create_source!(pg)
    {a, b} = Handles.fleet!(url, @logical, drain_threads: 1)
    define_all!(a, @projections)
    converge!(a)
    SimplePG.query!(pg, "TRUNCATE items")
    assert_all_equal(a, pg, @projections, "after TRUNCATE")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM all_columns") == "0"

    SimplePG.query!(pg, """
    INSERT INTO items (id, name, amount, flag) SELECT g, 'n' || g, g, true FROM generate_series(1, 50) g;
    BEGIN; TRUNCATE items; INSERT INTO items (id, name, amount, flag) VALUES (7, 'seven', 70, true); COMMIT;
    """)

    assert_all_equal(a, pg, @projections, "after TRUNCATE and INSERT in one transaction")
    assert SimplePG.scalar!(pg, "SELECT name FROM all_columns") == "seven"
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "a partitioned source: writes through the parent and to partitions, one attached later",
       %{url: url, pg: pg, seed: seed} do
    SimplePG.query!(pg, """
    CREATE TABLE readings (id int, zone int, v numeric, PRIMARY KEY (id, zone)) PARTITION BY LIST (zone);
    CREATE TABLE readings_1 PARTITION OF readings FOR VALUES IN (1);
    CREATE TABLE readings_2 PARTITION OF readings FOR VALUES IN (2);
    INSERT INTO readings SELECT g, 1 + g % 2, g FROM generate_series(1, 200) g;
    """)

    copies = [
      {"reading_copy", "TRANSFORM reading_copy FROM readings SELECT v AS v",
       "SELECT id, zone, v FROM readings"}
    ]

    sums = [
      {"zone_sums",
       "TRANSFORM zone_sums FROM readings SELECT zone, sum(v) AS s, count(*) AS c GROUP BY zone",
       "SELECT zone, sum(v), count(*) FROM readings GROUP BY zone", "zone, s, c"}
    ]

    {a, b} = Handles.fleet!(url, @logical, drain_threads: 2)
    define_all!(a, copies)
    define_groups!(a, sums)
    converge!(a)

    writer = fn w ->
      :rand.seed(:exsss, {seed, w, 5})
      conn = SimplePG.connect!(url)

      for _ <- 1..150 do
        id = :rand.uniform(400)
        zone = 1 + rem(id, 2)

        sql =
          case :rand.uniform(5) do
            1 -> "INSERT INTO readings VALUES (#{id}, #{zone}, #{:rand.uniform(100)})"
            2 -> "UPDATE readings SET v = v + 1 WHERE id = #{id}"
            3 -> "DELETE FROM readings_#{zone} WHERE id = #{id}"
            4 -> "INSERT INTO readings_#{zone} VALUES (#{id + 1000}, #{zone}, 1)"
            5 -> "UPDATE readings_#{zone} SET v = v * 2 WHERE id = #{id}"
          end

        _ = SimplePG.query(conn, sql)
      end

      SimplePG.close(conn)
    end

    running = write(writer, 3)

    SimplePG.query!(pg, """
    CREATE TABLE readings_3 (id int NOT NULL, zone int NOT NULL, v numeric, PRIMARY KEY (id, zone));
    INSERT INTO readings_3 SELECT g, 3, g FROM generate_series(1, 30) g;
    ALTER TABLE readings ATTACH PARTITION readings_3 FOR VALUES IN (3);
    INSERT INTO readings VALUES (31, 3, 31), (32, 3, 32);
    UPDATE readings_3 SET v = v + 100 WHERE id < 5;
    """)

    Task.await_many(running, 240_000)
    assert_all_equal(a, pg, copies, "seed #{seed}")
    assert_groups_equal(a, pg, sums, "seed #{seed}")
    SimplePG.query!(pg, "TRUNCATE readings_2")
    assert_all_equal(a, pg, copies, "after TRUNCATE of a partition")
    assert_groups_equal(a, pg, sums, "after TRUNCATE of a partition")
    assert capture_triggers(pg) == "0"
    Trellis.shutdown(a)
    Trellis.shutdown(b)
  end

  test "kill -9 of the staging port while it reads the slot loses and doubles nothing",
       %{url: url, pg: pg, seed: seed} do
    GroupWorkload.create_source!(pg)

    {a, b} = Handles.fleet!(url, @logical, staging: true, drain_threads: 1, capture: :logical)

    define_groups!(a, @groups)
    converge!(a)
    assert eventually(fn -> Trellis.has_live_staging_worker(b) == {:ok, true} end)

    running = write(&GroupWorkload.run(url, &1, seed, 400, truncate: false), 3)
    # Staging reads the slot every few milliseconds under these writes: a
    # kill lands between a read and its commit as often as not.
    assert eventually(fn -> SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.pages") != "0" end)
    os_pid = a.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    Task.await_many(running, 240_000)
    GroupWorkload.run(url, 9, seed, 100, truncate: false)

    assert_groups_equal(b, pg, @groups, "seed #{seed}")
    assert slots(pg) == "1"
    Trellis.shutdown(b)
  end

  test "switching from triggers to logical and back while writes run loses and doubles nothing",
       %{url: url, pg: pg, seed: seed} do
    Workload.create_source!(pg)
    GroupWorkload.create_source!(pg)
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    Trellis.shutdown(migrator)
    drains = Handles.connect!(url, drain_threads: 2)
    triggers = Trellis.connect!(url: url, staging: true, capture: :triggers)
    define_all!(triggers, @projections)
    define_groups!(triggers, @groups)
    converge!(triggers)
    assert capture_triggers(pg) != "0"

    # The writers write until released, so each switch runs while all four
    # do: released only once they have made 200 more writes after it.
    both = fn n ->
      counter = :counters.new(1, [:atomics])
      stop = :atomics.new(1, [])
      opts = [truncate: false, counter: counter, until: fn -> :atomics.get(stop, 1) == 1 end]

      tasks =
        write(&Workload.run(url, &1 + 10, seed + n, 100, opts), 2) ++
          write(&GroupWorkload.run(url, &1 + 10, seed + n, 100, opts), 2)

      made = fn -> :counters.get(counter, 1) end

      release = fn ->
        switched_at = made.()
        assert eventually(fn -> made.() >= switched_at + 200 end)
        :atomics.put(stop, 1, 1)
        Task.await_many(tasks, 240_000)
      end

      assert eventually(fn -> made.() >= 100 end)
      release
    end

    release = both.(1)
    Trellis.shutdown(triggers)
    logical = Trellis.connect!(url: url, staging: true, capture: :logical)
    assert capture_triggers(pg) == "0"
    release.()
    assert_all_equal(logical, pg, @projections, "to logical, seed #{seed}")
    assert_groups_equal(logical, pg, @groups, "to logical, seed #{seed}")

    release = both.(2)
    Trellis.shutdown(logical)
    back = Trellis.connect!(url: url, staging: true, capture: :triggers)
    assert capture_triggers(pg) != "0"
    assert {:ok, %Trellis.Status{capture_mode: :triggers}} = Trellis.status(back, "flagged")
    release.()
    assert_all_equal(back, pg, @projections, "back to triggers, seed #{seed}")
    assert_groups_equal(back, pg, @groups, "back to triggers, seed #{seed}")
    assert eventually(fn -> slots(pg) == "0" end)
    Trellis.shutdown(back)
    Trellis.shutdown(drains)
  end

  test "capture: :logical on a server without wal_level = logical is refused, naming the fix" do
    %{url: url} = Database.open!("logical_refused")
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    Trellis.shutdown(migrator)

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.connect(url: url, staging: true, capture: :logical)

    assert message =~ "wal_level = logical"
    assert message =~ "capture: :triggers"

    # :auto falls back to triggers there.
    {:ok, auto} = Trellis.connect(url: url, staging: true, capture: :auto)
    assert {:ok, %{capture: :auto}} = Trellis.config(auto)
    Trellis.shutdown(auto)
  end

  test "config :trellis_pg, capture: sets every handle's default; a handle's own option wins" do
    before = Application.fetch_env(:trellis_pg, :capture)

    on_exit(fn ->
      case before do
        {:ok, mode} -> Application.put_env(:trellis_pg, :capture, mode)
        :error -> Application.delete_env(:trellis_pg, :capture)
      end
    end)

    url = "postgres://localhost/x"
    Application.delete_env(:trellis_pg, :capture)
    assert {:ok, opts} = Trellis.Options.validate(:connect, url: url)
    assert opts[:capture] == :triggers

    Application.put_env(:trellis_pg, :capture, :logical)
    assert {:ok, opts} = Trellis.Options.validate(:connect, url: url)
    assert opts[:capture] == :logical
    assert {:ok, opts} = Trellis.Options.validate(:connect, url: url, capture: :triggers)
    assert opts[:capture] == :triggers

    Application.put_env(:trellis_pg, :capture, :wal)

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.Options.validate(:connect, url: url)

    assert message =~ "option :capture must be one of :triggers, :logical or :auto"
  end

  test "a bad :capture value is refused before anything starts" do
    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.connect(url: "postgres://localhost/x", capture: :wal)

    assert message =~ "option :capture must be one of :triggers, :logical or :auto"
  end
end
