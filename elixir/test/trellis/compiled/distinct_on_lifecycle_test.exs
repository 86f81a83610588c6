defmodule Trellis.Compiled.DistinctOnLifecycleTest do
  # SELECT DISTINCT ON (spec/grammar.md section 12) through the port: the
  # target has one row per key, the first by the ORDER BY; definitions/1
  # and the dump give the statement as written, status and self-check see
  # one transform, PAUSE/RESUME/DROP act on it, ALTER is refused with the
  # fix. The forms Trellis cannot keep (no ORDER BY, an ORDER BY that leaves
  # ties, a source without a primary key, a join, an array column) are
  # refused by name with the fix, and create nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM latest_reading FROM readings r " <>
               "SELECT DISTINCT ON (r.sensor) r.sensor, r.at, r.value, r.value * 10 AS scaled " <>
               "WHERE r.value IS DISTINCT FROM -1 ORDER BY r.sensor, r.at DESC NULLS LAST, r.id"
  @columns "sensor, at, value, scaled"
  @query "SELECT * FROM (SELECT DISTINCT ON (sensor) sensor, at, value, value * 10 " <>
           "FROM readings WHERE value IS DISTINCT FROM -1 " <>
           "ORDER BY sensor, at DESC NULLS LAST, id) q"

  setup do
    %{url: url, pg: pg} = Database.open!("distinct_on_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE readings (id int PRIMARY KEY, sensor text, at int, value numeric, tags int[]);
    CREATE INDEX ON readings (sensor);
    CREATE TABLE keyless (sensor text, at int);
    CREATE TABLE sensors (name text PRIMARY KEY, site text);
    INSERT INTO readings SELECT g, CASE WHEN g % 17 = 0 THEN NULL ELSE 's' || (g % 9) END,
      CASE WHEN g % 13 = 0 THEN NULL ELSE g % 30 END, g % 7, ARRAY[g] FROM generate_series(1, 400) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  test "one row per key: definition as written, writes followed, ALTER refused, DROP",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "latest_reading"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM latest_reading", @query) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM latest_reading") == "10"

    # One transform, no hidden stage; its columns typed as the query types them.
    assert SimplePG.query!(pg, "SELECT target_name FROM trellis.transforms") == [
             ["latest_reading"]
           ]

    assert SimplePG.query!(pg, """
           SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
           WHERE attrelid = 'latest_reading'::regclass AND attnum > 0 AND NOT attisdropped
             AND attname NOT LIKE '\\_\\_trellis%' ORDER BY attnum
           """) == [
             ["sensor", "text"],
             ["at", "integer"],
             ["value", "numeric"],
             ["scaled", "numeric"]
           ]

    assert {:ok, [%Trellis.Definition{name: "latest_reading", statement: shown, status: :live}]} =
             Trellis.definitions(t)

    assert shown =~ "SELECT DISTINCT ON (r.sensor) r.sensor AS sensor"
    assert String.ends_with?(shown, "ORDER BY r.sensor, r.at DESC NULLS LAST, r.id")
    refute shown =~ "__trellis"
    refute shown =~ "array_agg"

    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "ORDER BY r.sensor, r.at DESC NULLS LAST, r.id")) == 2

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "latest_reading")

    # The newest reading of a sensor changes, one is deleted, a sensor
    # moves, NULL times and sensors come and go, a filtered row appears.
    SimplePG.query!(pg, """
    UPDATE readings SET at = 99 WHERE id IN (5, 14, 23);
    DELETE FROM readings WHERE at = 29;
    UPDATE readings SET sensor = 's1' WHERE id % 11 = 0;
    UPDATE readings SET at = NULL WHERE sensor = 's4';
    UPDATE readings SET sensor = NULL WHERE id = 40;
    INSERT INTO readings VALUES (1001, 's9', 500, -1, NULL), (1002, 'new', NULL, 3, NULL);
    """)

    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM latest_reading", @query) == "0"

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "latest_reading", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM latest_reading")
    SimplePG.query!(pg, "UPDATE readings SET value = value + 1 WHERE id % 5 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM latest_reading")
    :ok = Trellis.request_backfill(t, "latest_reading")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM latest_reading", @query) == "0"

    # Every row of a key deleted: the key's row goes.
    SimplePG.query!(pg, "DELETE FROM readings WHERE sensor = 's2'")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM latest_reading", @query) == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM latest_reading WHERE sensor = 's2'") == "0"

    for alter <- [
          "ALTER TRANSFORM latest_reading ADD COLUMN max(r.value) AS m",
          "ALTER TRANSFORM latest_reading DROP COLUMN scaled",
          "ALTER TRANSFORM latest_reading ALTER COLUMN scaled AS min(r.value)"
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.apply(t, alter)

      assert message =~ "ALTER TRANSFORM cannot change transform latest_reading", message
      assert message =~ "DROP TRANSFORM it and define it again", message
    end

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM latest_reading")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM latest_reading")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('latest_reading') IS NULL") == "t"
  end

  test "the forms Trellis cannot keep are refused by name with the fix, creating nothing",
       %{trellis: t, pg: pg} do
    cases = [
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, at", :unsupported,
       "SELECT DISTINCT ON without ORDER BY is not supported"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, at ORDER BY sensor, at",
       :unsupported,
       "end the ORDER BY with the primary key of readings (ORDER BY sensor, at, readings.id)"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, at ORDER BY at, sensor, id",
       :validation, "SELECT DISTINCT ON expressions must match the initial ORDER BY"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) at ORDER BY sensor, id",
       :unsupported, "the DISTINCT ON expression sensor is not a SELECT item"},
      {"TRANSFORM r FROM keyless SELECT DISTINCT ON (sensor) sensor, at ORDER BY sensor, at",
       :unsupported, "which has no primary key, is not supported"},
      {"TRANSFORM r FROM readings x JOIN sensors s ON x.sensor = s.name " <>
         "SELECT DISTINCT ON (s.site) s.site, x.at ORDER BY s.site, x.id", :unsupported,
       "SELECT DISTINCT ON over a JOIN is not supported: define a transform for the join"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, tags ORDER BY sensor, id",
       :unsupported, "the column tags of SELECT DISTINCT ON is an array (integer[])"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, random() AS x " <>
         "ORDER BY sensor, id", :validation, "volatile"},
      {"TRANSFORM r FROM readings SELECT DISTINCT ON (sensor) sensor, at ORDER BY sensor, nope, id",
       :validation, "nope"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(t, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      refute message =~ "__trellis", message
      refute message =~ "array_agg", message
      assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
      assert SimplePG.scalar!(pg, "SELECT to_regclass('r') IS NULL") == "t"
    end
  end
end
