defmodule Trellis.Engine.StatementsTest do
  # The statement and catalog API as an app uses it: migrate, define, apply
  # (PAUSE, RESUME, ALTER, DROP), status, definitions, request_backfill, and
  # the errors for bad input, each of which changes nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("statements")

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, name text, price numeric);
    INSERT INTO widgets SELECT g, 'w' || g, g FROM generate_series(1, 50) g;
    CREATE TABLE keyless (a int);
    """)

    migrator = Trellis.connect!(url: url)
    %{url: url, pg: pg, migrator: migrator}
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
  end

  defp nothing_created(pg), do: Trellis.Test.Targets.assert_nothing_created(pg)

  test "catalog calls before migrate say to run migrate/1", %{migrator: trellis} do
    assert {:error, %Trellis.Error{code: :not_migrated, message: message}} =
             Trellis.define(trellis, "TRANSFORM t FROM widgets SELECT price AS p")

    assert message =~ "migrate/1"
    assert {:error, %Trellis.Error{code: :not_migrated}} = Trellis.definitions(trellis)
    assert :ok = Trellis.migrate(trellis)
    assert :ok = Trellis.migrate(trellis)
    assert {:ok, []} = Trellis.definitions(trellis)
  end

  test "bad definitions are refused with a clear error and create nothing",
       %{migrator: trellis, pg: pg} do
    :ok = Trellis.migrate(trellis)

    cases = [
      {"TRANSFORM t FROM nope SELECT a AS b", :not_found, "nope does not exist"},
      {"TRANSFORM t FROM widgets SELECT pricee AS p", :validation, "pricee"},
      {"TRANSFORM t FROM keyless SELECT a AS b", :validation, "no primary key"},
      {"TRANSFORM t FROM widgets SELECT random() AS r", :validation, "volatile"},
      {"TRANSFORM t FROM widgets SELECT price AS p WHERE clock_timestamp() > now()", :validation,
       "volatile"},
      {"TRANSFORM widgets FROM widgets SELECT price AS p", :already_exists, "widgets"},
      {"TRANSFORM t FROM widgets SELECT price AS p GROUP BY name", :validation, "GROUP BY"},
      {"TRANSFORM t FROM widgets SELECT price p", :validation, "position"},
      {"PAUSE TRANSFORM t", :not_found, "no transform"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.apply(trellis, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      nothing_created(pg)
    end

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.define(trellis, "PAUSE TRANSFORM t")

    assert message =~ "only a TRANSFORM"

    assert_raise Trellis.Error, ~r/does not exist/, fn ->
      Trellis.define!(trellis, "TRANSFORM t FROM nope SELECT a AS b")
    end
  end

  test "a transform's whole life through apply/2", %{url: url, migrator: migrator, pg: pg} do
    :ok = Trellis.migrate(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    assert {:ok, {:transform_defined, "t"}} =
             Trellis.define(trellis, "TRANSFORM t FROM widgets SELECT price AS price")

    converge(trellis)

    assert {:ok, %Trellis.Status{name: "t", target_table: "public.t"} = status} =
             Trellis.status(trellis, "t")

    assert status.status in [:catching_up, :live]
    assert status.backfill.rows_total == 50
    assert [%Trellis.ColumnStatus{name: "price", state: :live}] = status.columns
    assert %DateTime{} = status.last_applied_at

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.apply(trellis, "DROP TRANSFORM t")

    assert message =~ "PAUSE TRANSFORM t"

    assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM t")

    assert {:ok, %Trellis.Status{status: :paused, paused_kind: :operator, paused_at: %DateTime{}}} =
             Trellis.status(trellis, "t")

    assert {:ok, {:resumed, ["t"]}} = Trellis.apply(trellis, "RESUME TRANSFORM t")
    assert {:ok, {:resumed, []}} = Trellis.apply(trellis, "RESUME TRANSFORM t")

    assert {:ok, {:altered, "t"}} =
             Trellis.apply(trellis, "ALTER TRANSFORM t ADD COLUMN upper(name) AS shout")

    converge(trellis)
    assert SimplePG.scalar!(pg, "SELECT shout FROM t WHERE id = 7") == "W7"

    assert {:ok, [%Trellis.Definition{name: "t", statement: statement, created_at: %DateTime{}}]} =
             Trellis.definitions(trellis)

    assert statement == "TRANSFORM t FROM widgets SELECT price AS price, upper(name) AS shout"

    SimplePG.query!(pg, "UPDATE t SET price = -1")
    assert :ok = Trellis.request_backfill(trellis, "t")
    converge(trellis)
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM t WHERE price = -1") == "0"

    assert {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM t")
    assert {:ok, {:dropped, "t"}} = Trellis.apply(trellis, "DROP TRANSFORM t")
    nothing_created(pg)
    assert {:ok, true} = Trellis.has_live_staging_worker(trellis)
    assert {:ok, true} = Trellis.has_live_drain_workers(trellis)
    Trellis.shutdown(trellis)
  end

  test "await_converged refuses a token it did not make and times out when it must",
       %{migrator: trellis} do
    :ok = Trellis.migrate(trellis)

    # A generous budget: the refusal must come at once, not when it runs out
    # (a 100 ms budget could expire in the round trip on a loaded machine).
    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.await_converged(trellis, "not a token", timeout_ms: 30_000)

    {:transform_defined, "t"} =
      Trellis.define!(trellis, "TRANSFORM t FROM widgets SELECT price AS p")

    # No drain worker anywhere: the backfill cannot run, so convergence cannot come.
    {:ok, token} = Trellis.watermark_token(trellis)

    assert {:error, %Trellis.Error{code: :timeout}} =
             Trellis.await_converged(trellis, token, timeout_ms: 200)

    assert {:ok, false} = Trellis.has_live_drain_workers(trellis)
  end

  test "capture disabled by a loader pauses the readers; RESUME rebuilds what they missed",
       %{url: url, migrator: migrator, pg: pg} do
    :ok = Trellis.migrate(migrator)
    assert {:ok, []} = Trellis.detect_capture_disruptions(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    {:transform_defined, "t"} =
      Trellis.define!(trellis, "TRANSFORM t FROM widgets SELECT price AS price")

    converge(trellis)

    # A fixture load the way pg_restore --disable-triggers does it.
    SimplePG.query!(pg, """
    ALTER TABLE widgets DISABLE TRIGGER ALL;
    UPDATE widgets SET price = -price WHERE id <= 10;
    ALTER TABLE widgets ENABLE TRIGGER ALL;
    """)

    assert {:ok, ["public.widgets"]} = Trellis.detect_capture_disruptions(trellis)

    assert {:ok, %Trellis.Status{status: :paused, paused_kind: :disruption, paused_reason: why}} =
             Trellis.status(trellis, "t")

    assert why =~ "changed outside Trellis"
    assert why =~ "RESUME TRANSFORM t"
    assert ["public.widgets"] = Trellis.detect_capture_disruptions!(trellis)

    assert {:ok, {:resumed, ["t"]}} = Trellis.apply(trellis, "RESUME TRANSFORM t")
    assert {:ok, []} = Trellis.detect_capture_disruptions(trellis)
    converge(trellis)

    assert SimplePG.scalar!(pg, """
           SELECT count(*) FROM (SELECT id, price FROM widgets
                                 EXCEPT SELECT id, price FROM t) d
           """) == "0"

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM t WHERE price < 0") == "10"
    Trellis.shutdown(trellis)
  end

  test "dump_definitions_sql/1 renders the definitions as SQL to load after a schema dump",
       %{migrator: trellis} do
    assert {:error, %Trellis.Error{code: :not_migrated}} = Trellis.dump_definitions_sql(trellis)
    :ok = Trellis.migrate(trellis)

    {:transform_defined, ~s("it's")} =
      Trellis.define!(trellis, ~s(TRANSFORM "it's" FROM widgets SELECT price AS price))

    assert {:ok, sql} = Trellis.dump_definitions_sql(trellis)
    assert sql =~ "INSERT INTO \"trellis\".catalog_version (version) VALUES ("
    assert sql =~ ~s(INSERT INTO "trellis".sources)
    assert sql =~ ~s('public.widgets'::regclass)
    assert sql =~ "'it''s'"
    assert sql =~ ~s(INSERT INTO "trellis".transform_columns)
    assert Trellis.dump_definitions_sql!(trellis) == sql
  end
end
