defmodule Trellis.Engine.AlterRaceTest do
  # ALTER TRANSFORM ... ADD/DROP COLUMN while drains of the same transform
  # run under writes (the fleet soak's findings 1 and 2, bench/README.md).
  # Before the ALTER took the transform's lock, a drain that had read the
  # transform's columns before a DROP COLUMN committed ran its recompute
  # after it, naming the dropped column (42703), and that paused the
  # transform as a schema change nobody made; and an ALTER could fail with
  # "deadlock detected" (40P01) against a drain that had written the target.
  # Here every ALTER must succeed at the first try, no transform may pause,
  # and after the writers stop each target equals its query. A GROUP BY, a
  # projection and a GROUP BY over a join (whose ALTER changes two catalog
  # transforms) each get ADD/DROP pairs in turn.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 300_000

  @writers 6
  @rounds 10

  # {name, statement, its target's columns, the query they equal, the
  # column added then dropped}
  @transforms [
    {"by_writer",
     "TRANSFORM by_writer FROM accounts SELECT writer, count(*) AS n, " <>
       "sum(balance) AS total GROUP BY writer", "writer, n, total",
     "SELECT writer, count(*), sum(balance) FROM accounts GROUP BY writer", "max(balance) AS top",
     "top"},
    {"rich", "TRANSFORM rich FROM accounts SELECT writer, balance WHERE balance > 500",
     "id, writer, balance", "SELECT id, writer, balance FROM accounts WHERE balance > 500",
     "balance * 2 AS doubled", "doubled"},
    {"by_region",
     "TRANSFORM by_region FROM accounts JOIN regions ON accounts.region_id = regions.id " <>
       "SELECT regions.label, count(*) AS n, sum(accounts.balance) AS total GROUP BY regions.label",
     "label, n, total",
     "SELECT regions.label, count(*), sum(accounts.balance) FROM accounts " <>
       "JOIN regions ON accounts.region_id = regions.id GROUP BY regions.label",
     "max(accounts.balance + regions.id) AS top", "top"}
  ]

  setup do
    %{url: url, pg: pg} = Database.open!("alter_race")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, label text NOT NULL);
    INSERT INTO regions SELECT g, 'r' || g FROM generate_series(1, 5) g;
    CREATE TABLE accounts (id int PRIMARY KEY, writer int NOT NULL,
                           region_id int NOT NULL REFERENCES regions, balance numeric NOT NULL);
    INSERT INTO accounts SELECT g, g % #{@writers}, 1 + g % 5, g % 1000
    FROM generate_series(1, 3000) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)

    for {_, statement, _, _, _, _} <- @transforms do
      {:ok, {:transform_defined, _}} = Trellis.define(trellis, statement)
    end

    converge!(trellis, 120_000)
    %{url: url, pg: pg, trellis: trellis}
  end

  # Updates one of its own rows per transaction until `stop` is set.
  defp write(url, writer, stop) do
    pg = SimplePG.connect!(url)

    Stream.repeatedly(fn -> :atomics.get(stop, 1) end)
    |> Stream.take_while(&(&1 == 0))
    |> Enum.each(fn _ ->
      id = writer + @writers * :rand.uniform(div(3000, @writers) - 1)

      SimplePG.query!(
        pg,
        "UPDATE accounts SET balance = (balance + #{:rand.uniform(300)}) % 1000, " <>
          "region_id = #{:rand.uniform(5)} WHERE id = #{id}"
      )
    end)

    SimplePG.close(pg)
  end

  defp refute_paused(trellis, context) do
    for {name, _, _, _, _, _} <- @transforms do
      {:ok, status} = Trellis.status(trellis, name)

      refute status.status == :paused,
             "#{name} paused (#{context}): #{status.paused_kind}: #{status.paused_reason}"
    end
  end

  test "ALTER ADD/DROP COLUMN racing drains neither pauses a transform nor deadlocks",
       %{url: url, pg: pg, trellis: trellis} do
    stop = :atomics.new(1, [])
    writers = for w <- 0..(@writers - 1), do: Task.async(fn -> write(url, w, stop) end)
    Process.sleep(500)

    for round <- 1..@rounds, {name, _, _, _, added, column} <- @transforms do
      context = "round #{round}, #{name}"

      assert {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM #{name} ADD COLUMN #{added}"),
             context

      Process.sleep(:rand.uniform(200))

      assert {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM #{name} DROP COLUMN #{column}"),
             context

      Process.sleep(100)
      refute_paused(trellis, context)
    end

    :atomics.put(stop, 1, 1)
    Task.await_many(writers, 60_000)
    converge!(trellis, 240_000)

    for {name, _, columns, query, _, _} <- @transforms do
      assert differences(pg, "SELECT #{columns} FROM #{name}", query) == "0", "#{name} differs"
    end

    refute_paused(trellis, "at the end")
  end
end
