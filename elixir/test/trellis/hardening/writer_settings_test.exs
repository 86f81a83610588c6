defmodule Trellis.Hardening.WriterSettingsTest do
  # The capture functions turn routed column values (keys, group columns,
  # join columns) into text in the WRITER's session, and the engine reads
  # that text back in its own pinned session (spec/engine.md "Capture").
  # A writer whose DateStyle, IntervalStyle or extra_float_digits differ
  # from the engine's would otherwise route a text that reads back as
  # another value (03.02.2024 is March 2 to an ISO, MDY reader; 0.3 is not
  # 0.30000000000000004; sql_standard's '-1 2:00:00' is -1 day +2 hours to a
  # postgres-style reader) or not at all (31/12/2024), and the targets would
  # keep stale rows for good.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, Handles, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  # Settings a writer session may hold: each changes the text form of a
  # date, an interval or a float.
  @hostile [
    "SET DateStyle = 'SQL, DMY'",
    "SET DateStyle = 'German'",
    "SET DateStyle = 'Postgres, DMY'",
    "SET IntervalStyle = 'sql_standard'",
    "SET extra_float_digits = -3"
  ]

  setup do
    %{url: url, pg: pg} = Database.open!("writer_settings")

    SimplePG.query!(pg, """
    CREATE TABLE days (d date PRIMARY KEY, v int);
    INSERT INTO days VALUES ('2024-02-03', 1), ('2024-12-31', 2), ('2024-03-02', 3);
    CREATE TABLE events (id int PRIMARY KEY, day date, span interval, score float8,
                         at timestamptz, amount int);
    INSERT INTO events VALUES
      (1, '2024-02-03', interval '-1 day -2 hours', 0.30000000000000004,
       '2024-02-03 10:00:00+00', 10),
      (2, '2024-05-06', interval '-1 day +2 hours', 0.3, '2024-05-06 10:00:00+00', 20),
      (3, '2024-11-10', interval '1 year 2 months', 1e-300, '2024-11-10 10:00:00+00', 30);
    CREATE TABLE calendar (day date PRIMARY KEY, label text);
    INSERT INTO calendar VALUES ('2024-02-03', 'a'), ('2024-03-02', 'b'), ('2024-05-06', 'c');
    """)

    :ok = Trellis.migrate(Handles.connect!(url))
    trellis = Handles.connect!(url, staging: true, drain_threads: 2, timeout_ms: 30_000)
    %{url: url, pg: pg, trellis: trellis}
  end

  # A fresh plain session with `settings` applied, as an app's writer.
  defp writer(url, settings) do
    writer = SimplePG.connect!(url)
    ExUnit.Callbacks.on_exit(fn -> SimplePG.close(writer) end)
    SimplePG.query!(writer, Enum.join(settings, "; "))
    writer
  end

  defp settings(writer) do
    [row] =
      SimplePG.query!(
        writer,
        "SELECT current_setting('DateStyle'), current_setting('IntervalStyle'), " <>
          "current_setting('extra_float_digits')"
      )

    row
  end

  test "a projection keyed by a date follows writers with any DateStyle", ctx do
    {:ok, _} = Trellis.define(ctx.trellis, "TRANSFORM day_values FROM days SELECT v AS v")
    converge!(ctx.trellis)

    for {setting, round} <- Enum.with_index(@hostile, 1) do
      writer = writer(ctx.url, [setting])
      before = settings(writer)

      SimplePG.query!(writer, """
      UPDATE days SET v = v + 10 WHERE d IN ('2024-02-03'::date, '2024-12-31'::date);
      DELETE FROM days WHERE d = '2024-03-02'::date;
      INSERT INTO days VALUES ('2024-03-02'::date + #{round}, #{round});
      INSERT INTO days VALUES ('2024-03-02', #{round * 100});
      """)

      # The capture function's settings end with it: the writer keeps its own.
      assert settings(writer) == before

      converge!(ctx.trellis)

      assert differences(ctx.pg, "SELECT d, v FROM day_values", "SELECT d, v FROM days") == "0",
             setting
    end
  end

  @groups [{"by_day", "day"}, {"by_span", "span"}, {"by_score", "score"}, {"by_at", "at"}]

  # TimeZone is not pinned (spec/engine.md "Session settings"): a
  # timestamptz's ISO text carries its offset, so it reads back as the
  # same instant in any zone.
  test "group transforms keyed by a date, an interval, a float and a timestamptz follow writers with any settings",
       ctx do
    for {name, column} <- @groups do
      {:ok, _} =
        Trellis.define(
          ctx.trellis,
          "TRANSFORM #{name} FROM events SELECT #{column}, count(*) AS n, sum(amount) AS total " <>
            "GROUP BY #{column}"
        )
    end

    converge!(ctx.trellis)

    writer =
      writer(ctx.url, [
        "SET DateStyle = 'German'",
        "SET IntervalStyle = 'sql_standard'",
        "SET extra_float_digits = -3",
        "SET TimeZone = 'Asia/Kathmandu'"
      ])

    assert settings(writer) == ["German, DMY", "sql_standard", "-3"]

    # Every write leaves a group or enters one: an update's old version
    # dirties its old group, so a misread old key leaves that group stale.
    # Every day here reads as another valid day with day and month swapped
    # (a date that cannot be read makes the engine rebuild the transform,
    # which would hide the misread).
    SimplePG.query!(writer, """
    UPDATE events SET amount = amount + 1 WHERE id = 1;
    UPDATE events SET day = '2024-10-11', span = interval '1 year 2 months', score = 1e-300,
                      at = '2024-11-10 10:00:00+00'
      WHERE id = 2;
    DELETE FROM events WHERE id = 3;
    INSERT INTO events VALUES
      (4, '2024-02-03', interval '-1 day -2 hours', 0.30000000000000004,
       '2024-02-03 10:00:00+00', 40),
      (5, '2025-01-12', interval '-3 days +4 hours', 0.1, '2025-01-12 10:00:00+00', 50);
    """)

    assert settings(writer) == ["German, DMY", "sql_standard", "-3"]
    converge!(ctx.trellis)

    stale =
      for {name, column} <- @groups,
          differences(
            ctx.pg,
            "SELECT #{column}, n, total FROM #{name}",
            "SELECT #{column}, count(*), sum(amount) FROM events GROUP BY #{column}"
          ) != "0",
          do: name

    assert stale == []
  end

  # A join routes the joined table's key (and any join column) the same
  # way: a misread day would recompute the events of another day.
  test "a join on a date follows writers of the joined table with any DateStyle", ctx do
    {:ok, _} =
      Trellis.define(
        ctx.trellis,
        "TRANSFORM labelled FROM events e LEFT JOIN calendar c ON e.day = c.day SELECT c.label"
      )

    converge!(ctx.trellis)
    query = "SELECT e.id, c.label FROM events e LEFT JOIN calendar c ON e.day = c.day"

    for {setting, round} <- Enum.with_index(@hostile, 1) do
      writer = writer(ctx.url, [setting])

      SimplePG.query!(writer, """
      UPDATE calendar SET label = label || '#{round}';
      DELETE FROM calendar WHERE day = '2024-05-06';
      INSERT INTO calendar VALUES ('2024-05-06', 'back #{round}');
      """)

      converge!(ctx.trellis)
      assert differences(ctx.pg, "TABLE labelled", query) == "0", setting
    end
  end
end
