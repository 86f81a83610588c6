defmodule Trellis.Logical.StreamFallbackTest do
  # Logical capture reads its replication slot through a walsender stream;
  # where the server refuses one, it peeks instead, and status/2 says why
  # and what fixes it (`capture_fallback`, spec/engine.md "Capture feeds",
  # "Fallback"). A server whose synchronous_standby_names is '*' would take
  # the stream for a synchronous standby, so the engine does not start it.
  # Clearing the setting lets the stream start at the next retry (every
  # 10 s), and the field goes back to nil.
  use ExUnit.Case, async: false

  alias Trellis.Test.SimplePG
  alias Trellis.TestCluster
  import Trellis.Test.Eventually, only: [eventually: 2]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 180_000

  test "status/2 names why the slot is read by peeks, and clears it once the stream runs" do
    {:ok, testkit} = TestCluster.testkit_path()
    # Not durable: writers commit without waiting for a standby, so '*'
    # holds up nobody here.
    {holder, url} = TestCluster.start!(testkit, ["--logical"])
    on_exit(fn -> Process.exit(holder, :kill) end)
    pg = SimplePG.connect!(url)
    SimplePG.query!(pg, "ALTER SYSTEM SET synchronous_standby_names = '*'")
    SimplePG.query!(pg, "SELECT pg_reload_conf()")
    SimplePG.query!(pg, "CREATE TABLE items (id int PRIMARY KEY, price int NOT NULL)")
    SimplePG.query!(pg, "INSERT INTO items SELECT g, g FROM generate_series(1, 100) g")

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    a = Trellis.connect!(url: url, staging: true, drain_threads: 1, capture: :logical)
    # A second handle on the same catalog runs no staging: it has no stream
    # of its own to report on.
    reader = Trellis.connect!(url: url)

    {:ok, {:transform_defined, _}} =
      Trellis.define(a, "TRANSFORM doubled FROM items SELECT price * 2 AS doubled")

    converge!(a)

    # Peeking: capture still works, and status says why it peeks and how to
    # stop it.
    SimplePG.query!(pg, "UPDATE items SET price = price + 1 WHERE id <= 10")
    converge!(a)

    assert differences(pg, "TABLE doubled", "SELECT id, price * 2 FROM items") == "0"

    assert eventually(fn -> fallback(a) != nil end, 500)
    why = fallback(a)
    assert why =~ "read by peeks"
    assert why =~ "synchronous_standby_names ('*')"
    assert why =~ "list the standbys by name instead of '*'"
    {:ok, status} = Trellis.status(a, "doubled")
    assert status.capture_mode == :logical
    assert fallback(reader) == nil
    assert walsenders(pg) == "0"

    # The setting cleared: the next retry starts the stream, and the field
    # is empty again.
    SimplePG.query!(pg, "ALTER SYSTEM RESET synchronous_standby_names")
    SimplePG.query!(pg, "SELECT pg_reload_conf()")
    # Retried every 10 s; polled for 40 s or more, since a loaded machine
    # may stretch the retry (no test here times the engine).
    assert eventually(fn -> fallback(a) == nil end, 2_000)
    assert eventually(fn -> walsenders(pg) == "1" end, 500)

    SimplePG.query!(pg, "UPDATE items SET price = price + 1 WHERE id > 90")
    converge!(a)
    assert differences(pg, "TABLE doubled", "SELECT id, price * 2 FROM items") == "0"
    assert fallback(a) == nil

    Trellis.shutdown(reader)
    Trellis.shutdown(a)
  end

  defp fallback(trellis), do: capture_fallback(trellis, "doubled")
end
