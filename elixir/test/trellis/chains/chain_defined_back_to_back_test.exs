defmodule Trellis.Chains.ChainDefinedBackToBackTest do
  # freshness_bench's chain, small: a projection, its join to a dimension, a
  # GROUP BY of that, defined back to back (each link before the one it
  # reads is built) while a writer inserts, and the workers started after,
  # as the bench once did when the GROUP BY stayed catching_up for 600 s.
  # Each link's first build then waits for the one it reads, and staging
  # makes no pages of an upstream's build for a link whose own build will
  # read those rows (test/engine/chain_first_build_test.cc checks that step
  # by step); here the chain converges and each target equals its query.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, SimplePG, Targets}

  @moduletag :port
  @moduletag timeout: 300_000

  @groups 200
  @rows 20_000
  @writes 2_000

  setup do
    %{url: url, pg: pg} = Database.open!("back_to_back")

    SimplePG.query!(pg, """
    CREATE TABLE fresh (id bigserial PRIMARY KEY, v int NOT NULL,
                        written_at timestamptz NOT NULL DEFAULT clock_timestamp());
    INSERT INTO fresh (v, written_at)
      SELECT g % #{@groups}, '2000-01-01' FROM generate_series(1, #{@rows}) g;
    CREATE TABLE fresh_dim (id int PRIMARY KEY, label text NOT NULL);
    INSERT INTO fresh_dim SELECT g, 'dim ' || g FROM generate_series(0, #{@groups - 1}) g;
    """)

    Handles.with_handle(url, [], fn migrator -> :ok = Trellis.migrate(migrator) end)
    %{url: url, pg: pg}
  end

  test "three links defined back to back under writes converge, each equal to its query",
       %{url: url, pg: pg} do
    definer = Handles.connect!(url)
    writer = Task.async(fn -> write(url, @writes) end)

    {:ok, _} =
      Trellis.define(
        definer,
        "TRANSFORM fresh_p FROM fresh SELECT v AS v, written_at AS written_at"
      )

    {:ok, _} =
      Trellis.define(
        definer,
        "TRANSFORM fresh_j FROM fresh_p p JOIN fresh_dim d ON p.v = d.id " <>
          "SELECT p.v AS v, p.written_at AS written_at, d.label AS label"
      )

    # The grouping finds a group's rows by v (made on the empty target; the
    # build appends under it).
    SimplePG.query!(pg, "CREATE INDEX ON fresh_j (v)")

    {:ok, _} =
      Trellis.define(
        definer,
        "TRANSFORM fresh_t FROM fresh_j SELECT v, count(*) AS n, " <>
          "max(written_at) AS written_at, max(label) AS label GROUP BY v"
      )

    workers = Handles.connect!(url, staging: true, drain_threads: 2, timeout_ms: 150_000)
    assert Task.await(writer, 120_000) == @writes
    # More writes while the links build and catch up.
    assert write(url, @writes) == @writes
    Targets.converge!(workers, 120_000)

    for name <- ["fresh_p", "fresh_j", "fresh_t"] do
      assert {:ok, %Trellis.Status{status: :live, backlog_keys: 0}} =
               Trellis.status(workers, name)
    end

    assert Targets.differences(
             pg,
             "SELECT id, v, written_at FROM fresh_p",
             "SELECT id, v, written_at FROM fresh"
           ) == "0"

    assert Targets.differences(
             pg,
             "SELECT id, v, written_at, label FROM fresh_j",
             "SELECT f.id, f.v, f.written_at, d.label FROM fresh f JOIN fresh_dim d ON f.v = d.id"
           ) == "0"

    assert Targets.differences(
             pg,
             "SELECT v, n, written_at, label FROM fresh_t",
             "SELECT v, count(*), max(written_at), max(label) " <>
               "FROM fresh f JOIN fresh_dim d ON f.v = d.id GROUP BY v"
           ) == "0"
  end

  # `count` single-row inserts into fresh, one transaction each, on a
  # connection of their own. Returns how many committed.
  defp write(url, count) do
    pg = SimplePG.connect!(url)

    for _ <- 1..count do
      SimplePG.query!(pg, "INSERT INTO fresh (v) VALUES (#{:rand.uniform(@groups) - 1})")
    end

    SimplePG.close(pg)
    count
  end
end
