defmodule Trellis.GroupBy.SelfCheckTest do
  # Self-check of GROUP BY and whole-table transforms through the real port
  # and PostgreSQL, in both modes: clean on a correct target, and every
  # planted divergence found (a wrong value, a missing group, the missing
  # NULL group, an extra group). Sample mode draws the definition side's
  # keys from a sample of the source's groups (GroupPlan::SampleBoundaries).
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets, only: [converge!: 1, await_self_check!: 2]

  @moduletag :port
  @moduletag timeout: 180_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_self_check")

    SimplePG.query!(pg, """
    CREATE TABLE stock (id int PRIMARY KEY, g int, qty int NOT NULL);
    INSERT INTO stock
    SELECT n, CASE WHEN n % 11 = 0 THEN NULL ELSE n % 5 END, 1 + n % 7
    FROM generate_series(1, 500) n;
    CREATE INDEX ON stock (g);
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM per_g FROM stock SELECT g, count(*) AS c, sum(qty) AS s GROUP BY g"
      )

    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM whole FROM stock SELECT count(*) AS c, max(qty) AS top")

    converge!(trellis)
    %{trellis: trellis, pg: pg}
  end

  defp report(trellis, name, opts) do
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(trellis, name, opts)
    assert %Trellis.SelfCheckJob{state: :done, report: report} = await_self_check!(trellis, id)
    report
  end

  @modes [[mode: :sample, sample_size: 1000], [mode: :full]]

  test "a correct group target is clean in both modes; every planted divergence is found",
       %{trellis: trellis, pg: pg} do
    for opts <- @modes, name <- ["per_g", "whole"] do
      assert %{outcome: :clean, divergence_count: 0} = report(trellis, name, opts),
             "#{name} #{inspect(opts)}"
    end

    # A wrong value, a missing group, the missing NULL group, an extra group.
    SimplePG.query!(pg, """
    UPDATE per_g SET s = -1 WHERE g = 1;
    DELETE FROM per_g WHERE g = 2;
    DELETE FROM per_g WHERE g IS NULL;
    INSERT INTO per_g (g, c, s) VALUES (99, 1, 1);
    UPDATE whole SET top = -5;
    """)

    for opts <- @modes do
      report = report(trellis, "per_g", opts)
      assert %{outcome: :diverged, divergence_count: 4} = report, inspect(opts)
      by_key = Map.new(report.divergences, &{&1.key, &1})

      assert %Trellis.Divergence{kind: :differs, columns: [%{name: "s", target: "-1"}]} =
               by_key[["1"]]

      assert %{kind: :missing} = by_key[["2"]]
      # A NULL key element is nil, never the text "NULL".
      assert %{kind: :missing} = by_key[[nil]]
      assert %{kind: :extra} = by_key[["99"]]

      assert %{outcome: :diverged, divergences: [%{kind: :differs, columns: [column]}]} =
               report(trellis, "whole", opts)

      assert %{name: "top", target: "-5", recomputed: "7"} = column
    end

    # The fix the report names makes both clean again.
    :ok = Trellis.request_backfill(trellis, "per_g")
    :ok = Trellis.request_backfill(trellis, "whole")
    converge!(trellis)

    for opts <- @modes, name <- ["per_g", "whole"] do
      assert %{outcome: :clean} = report(trellis, name, opts), "#{name} #{inspect(opts)}"
    end
  end

  test "a target whose maintenance lacks a source index is refused until the index exists or it opts out",
       %{trellis: trellis, pg: pg} do
    SimplePG.query!(pg, "CREATE TABLE bins (id int PRIMARY KEY, b int, v int)")

    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM per_b FROM bins SELECT b, sum(v) AS s GROUP BY b")

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM per_b_scan FROM bins SELECT b, count(*) AS n GROUP BY b WITHOUT SOURCE INDEX"
      )

    converge!(trellis)
    jobs_before = SimplePG.query!(pg, "SELECT count(*) FROM trellis.self_check_jobs")

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.self_check(trellis, "per_b")

    assert message =~ "CREATE INDEX CONCURRENTLY ON \"public\".\"bins\" (\"b\")"
    assert message =~ "WITHOUT SOURCE INDEX"
    # Refused before anything is recorded.
    assert SimplePG.query!(pg, "SELECT count(*) FROM trellis.self_check_jobs") == jobs_before

    # Opted out: checked, scans and all.
    assert %{outcome: :clean} = report(trellis, "per_b_scan", [])

    # The fix the message names lifts the refusal.
    SimplePG.query!(pg, "CREATE INDEX ON bins (b)")
    assert %{outcome: :clean} = report(trellis, "per_b", [])
  end
end
