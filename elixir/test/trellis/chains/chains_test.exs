defmodule Trellis.Chains.ChainsTest do
  # Transforms over transforms through the real port: a downstream defined
  # while its upstream builds waits for it, status names a paused column
  # upstream and reads :catching_up meanwhile, and an upstream that another
  # transform reads cannot be dropped.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Database, SimplePG, Workload}

  @moduletag :port
  @moduletag timeout: 300_000

  setup do
    url = Database.create!("chains")
    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL, label text);
    INSERT INTO items SELECT g, g, 'l' || g FROM generate_series(1, 5000) g;
    """)

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    on_exit(fn -> SimplePG.close(pg) end)
    %{url: url, pg: pg, quiet: migrator}
  end

  defp converge(handle) do
    {:ok, token} = Trellis.watermark_token(handle)
    :ok = Trellis.await_converged(handle, token, timeout_ms: 120_000)
  end

  test "a downstream defined while its upstream builds waits, then follows the chain",
       %{url: url, pg: pg, quiet: quiet} do
    # No workers yet: up cannot have built when down is defined over it.
    {:ok, _} =
      Trellis.define(quiet, "TRANSFORM up FROM items SELECT price * 2 AS p2, label AS label")

    {:ok, _} = Trellis.define(quiet, "TRANSFORM down FROM up SELECT p2 + 1 AS p3")
    assert {:ok, %Trellis.Status{status: :waiting_to_backfill}} = Trellis.status(quiet, "down")

    workers = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    SimplePG.query!(pg, "UPDATE items SET price = -price WHERE id % 9 = 0")
    converge(workers)

    assert {:ok, %Trellis.Status{status: :live, paused_upstream_columns: []}} =
             Trellis.status(quiet, "down")

    assert Workload.differences(pg, "down", "SELECT id, price * 2 + 1 FROM items") == 0

    # A paused column upstream that down reads: listed, and down catches up.
    {:ok, :paused} = Trellis.apply(quiet, "PAUSE TRANSFORM up.label")
    assert {:ok, %Trellis.Status{paused_upstream_columns: []}} = Trellis.status(quiet, "down")
    {:ok, :paused} = Trellis.apply(quiet, "PAUSE TRANSFORM up.p2")

    assert {:ok, %Trellis.Status{status: :catching_up, paused_upstream_columns: ["up.p2"]}} =
             Trellis.status(quiet, "down")

    SimplePG.query!(pg, "UPDATE items SET price = price + 1 WHERE id <= 50")
    {:ok, _} = Trellis.apply(quiet, "RESUME TRANSFORM up.p2")
    {:ok, _} = Trellis.apply(quiet, "RESUME TRANSFORM up.label")
    converge(workers)

    assert {:ok, %Trellis.Status{status: :live, paused_upstream_columns: []}} =
             Trellis.status(quiet, "down")

    assert Workload.differences(pg, "down", "SELECT id, price * 2 + 1 FROM items") == 0
    Trellis.shutdown(workers)
  end

  test "DROP of a transform another reads is refused, naming the readers; nothing changes",
       %{url: url, quiet: quiet} do
    workers = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    {:ok, _} = Trellis.define(quiet, "TRANSFORM up FROM items SELECT price * 2 AS p2")
    {:ok, _} = Trellis.define(quiet, "TRANSFORM down FROM up SELECT p2 AS p")
    converge(workers)
    {:ok, :paused} = Trellis.apply(quiet, "PAUSE TRANSFORM up")

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.apply(quiet, "DROP TRANSFORM up")

    assert message =~ "read by down"
    assert {:ok, %Trellis.Status{status: :paused}} = Trellis.status(quiet, "up")
    {:ok, :paused} = Trellis.apply(quiet, "PAUSE TRANSFORM down")
    assert {:ok, {:dropped, "down"}} = Trellis.apply(quiet, "DROP TRANSFORM down")
    assert {:ok, {:dropped, "up"}} = Trellis.apply(quiet, "DROP TRANSFORM up")
    Trellis.shutdown(workers)
  end
end
