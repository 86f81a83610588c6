defmodule Trellis.Engine.CaptureNamesTest do
  # Capture under names built to break generated SQL, through the real port
  # (issue 17 items 2 and 3; spec/engine.md "Capture"): identifiers holding
  # the dollar-quote tag, and a catalog schema as long as PostgreSQL allows.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("capture_names")
    %{url: url, pg: pg}
  end

  defp start(url, schema) do
    migrator = Trellis.connect!(url: url, schema: schema)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    Trellis.connect!(url: url, schema: schema, staging: true, drain_threads: 1)
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
  end

  defp differences(pg, target, query) do
    SimplePG.scalar!(pg, """
    SELECT count(*) FROM ((TABLE #{target} EXCEPT ALL #{query})
                          UNION ALL (#{query} EXCEPT ALL TABLE #{target})) d
    """)
  end

  defp captured(pg, table),
    do:
      SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgrelid = '#{table}'::regclass")

  test "names holding $trellis$ define, capture and drop cleanly", %{url: url, pg: pg} do
    table = ~s("t$trellis$y")

    SimplePG.query!(pg, """
    CREATE TABLE #{table} ("k$trellis$x" int PRIMARY KEY, "v$$;'" text);
    INSERT INTO #{table} SELECT g, 'v' || g FROM generate_series(1, 20) g;
    """)

    trellis = start(url, "s$trellis$")

    assert {:ok, {:transform_defined, _}} =
             Trellis.define(trellis, ~s(TRANSFORM out FROM #{table} SELECT "v$$;'" AS v))

    assert captured(pg, table) == "4"
    SimplePG.query!(pg, ~s(UPDATE #{table} SET "v$$;'" = 'u' WHERE "k$trellis$x" <= 5))
    SimplePG.query!(pg, ~s(DELETE FROM #{table} WHERE "k$trellis$x" = 20))
    converge(trellis)
    assert differences(pg, "out", ~s(SELECT "k$trellis$x", "v$$;'" FROM #{table})) == "0"

    assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM out")
    assert {:ok, {:dropped, "out"}} = Trellis.apply(trellis, "DROP TRANSFORM out")
    assert captured(pg, table) == "0"

    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = 's$trellis$' AND p.proname LIKE 'capture%'
           """) == "0"

    :ok = Trellis.shutdown(trellis)
  end

  test "a 63-byte multibyte catalog schema captures without pausing anyone", %{url: url, pg: pg} do
    schema = String.duplicate("é", 31) <> "x"
    assert byte_size(schema) == 63

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 20) g;
    """)

    trellis = start(url, schema)

    assert {:ok, {:transform_defined, _}} =
             Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")

    assert captured(pg, "widgets") == "4"
    SimplePG.query!(pg, "UPDATE widgets SET price = -price WHERE id <= 10")
    converge(trellis)
    assert differences(pg, "prices", "SELECT id, price FROM widgets") == "0"
    # The staging worker checks capture every second; it must find it intact.
    Process.sleep(2_500)
    assert {:ok, []} = Trellis.detect_capture_disruptions(trellis)
    assert {:ok, %Trellis.Status{status: status}} = Trellis.status(trellis, "prices")
    assert status in [:live, :catching_up]
    :ok = Trellis.shutdown(trellis)
  end
end
