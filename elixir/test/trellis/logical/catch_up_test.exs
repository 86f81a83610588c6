defmodule Trellis.Logical.CatchUpTest do
  # A replication slot far behind the flush LSN (more than
  # capture::kCatchUpBytes, 32 MB of WAL) is read by large peeks instead of
  # the walsender stream, which hands over a far-behind slot's changes
  # several times slower; status/2's capture_fallback says so while it
  # lasts, and the stream starts again once the slot is close
  # (spec/engine.md "Reading the slot", "Catching up"). Here the staging
  # port is killed -9 in the middle of a catch-up batch (its pages written,
  # its position not yet recorded, held there by a lock on the position
  # row): the other handle takes over, catches up by peeks in turn, streams
  # again, and both targets equal their definitions.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, Handles, SimplePG}
  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 600_000

  @logical [staging: true, drain_threads: 1, capture: :logical]

  @targets [
    {"cu_copy", "TRANSFORM cu_copy FROM cu SELECT v * 2 AS v2, w AS w",
     "SELECT id, v2, w FROM cu_copy", "SELECT id, v * 2, w FROM cu"},
    {"cu_groups",
     "TRANSFORM cu_groups FROM cu SELECT v % 100 AS g, count(*) AS n, " <>
       "sum(id) AS s GROUP BY v % 100", "SELECT g, n, s FROM cu_groups",
     "SELECT v % 100, count(*), sum(id) FROM cu GROUP BY v % 100"}
  ]

  test "kill -9 of the staging port in the middle of a catch-up by peeks loses and doubles nothing, and the stream comes back" do
    %{url: url, pg: pg} = Database.open!("logical_catch_up", wal_level: :logical)
    SimplePG.query!(pg, "CREATE TABLE cu (id int PRIMARY KEY, v int NOT NULL, w text)")

    SimplePG.query!(
      pg,
      "INSERT INTO cu SELECT g, g, md5(g::text) FROM generate_series(1, 200000) g"
    )

    {a, b} = Handles.fleet!(url, @logical, @logical)

    for {name, definition, _, _} <- @targets do
      {:ok, {:transform_defined, _}} = Trellis.define(a, definition)
      assert name != nil
    end

    converge!(a)
    assert eventually(fn -> Trellis.has_live_staging_worker(b) == {:ok, true} end)
    # Streaming: a walsender holds the slot, and nothing falls back.
    SimplePG.query!(pg, "UPDATE cu SET v = v + 1 WHERE id <= 10")
    converge!(a)
    assert eventually(fn -> walsenders(pg) == "1" end, 500)
    assert fallback(a) == nil

    # Five transactions of 200k changes each (the group's old values travel
    # too): far more than 32 MB of WAL, so staging falls behind at the first
    # commit and catches up by peeks.
    writes =
      Task.async(fn ->
        w = SimplePG.connect!(url)

        for n <- 1..5 do
          SimplePG.query!(w, "UPDATE cu SET v = v + #{n}, w = md5((v + #{n})::text)")
        end

        SimplePG.close(w)
      end)

    # Caught in the middle of the catch-up: status says why capture peeks
    # (and that nothing needs fixing); the port dies there, mid-batch or
    # between batches.
    assert eventually(fn -> catching_up?(a) end, 3000)
    why = fallback(a)
    assert why =~ "Nothing to fix"
    os_pid = a.port |> Port.info(:os_pid) |> elem(1)
    {_, 0} = System.cmd("kill", ["-9", "#{os_pid}"])
    Task.await(writes, 300_000)

    # The other handle's staging worker takes over from the position the
    # last committed batch recorded and catches up by peeks in turn.
    converge!(b, 300_000)
    # A write after the catch-up goes through a stream again.
    SimplePG.query!(pg, "UPDATE cu SET v = v + 1 WHERE id <= 100")
    converge!(b, 120_000)
    assert eventually(fn -> walsenders(pg) == "1" end, 500)
    assert eventually(fn -> fallback(b) == nil end, 500)

    for {name, _, target, query} <- @targets do
      assert differences(pg, target, query) == "0", "#{name} differs"
    end

    Trellis.shutdown(b)
  end

  defp catching_up?(trellis) do
    case fallback(trellis) do
      nil -> false
      why -> why =~ "is read by peeks while it catches up"
    end
  end

  defp fallback(trellis), do: capture_fallback(trellis, "cu_copy")
end
