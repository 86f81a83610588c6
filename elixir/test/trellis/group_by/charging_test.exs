defmodule Trellis.GroupBy.ChargingTest do
  # Failure charging of GROUP BY transforms (issue 11 with issue 13's
  # machinery), through the real port and PostgreSQL: an aggregate whose
  # argument fails for a row is quarantined for that row's group, a WHERE
  # that fails holds the group, a group expression that fails for a row
  # stalls nothing (its transform is rebuilt, and the rebuild's failure shows
  # in status). Every other group and transform keeps flowing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  import Trellis.Test.Eventually, only: [eventually: 1, eventually: 2]
  import Trellis.Test.Targets, only: [differences: 3]

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 300_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_charging")

    SimplePG.query!(pg, """
    CREATE TABLE stock (id int PRIMARY KEY, g int, qty int NOT NULL);
    INSERT INTO stock SELECT n, n % 5, 1 + n % 7 FROM generate_series(1, 500) n;
    CREATE TABLE other (id int PRIMARY KEY, v int NOT NULL);
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM other SELECT v AS v")
    %{trellis: trellis, pg: pg}
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  defp state(trellis, name) do
    {:ok, status} = Trellis.status(trellis, name)
    status
  end

  defp column(trellis, name, column) do
    Enum.find(state(trellis, name).columns, &(&1.name == column))
  end

  defp quarantined_keys(trellis, target) do
    {:ok, %Trellis.SamplePage{samples: samples}} =
      Trellis.sample_quarantined(trellis, target, limit: 100)

    samples |> Enum.map(& &1.key) |> Enum.sort()
  end

  defp copies_flow(trellis, pg, id) do
    SimplePG.query!(pg, "INSERT INTO other VALUES (#{id}, #{id})")
    _ = trellis

    assert eventually(fn ->
             differences(pg, "SELECT id, v FROM copies", "SELECT id, v FROM other") == "0"
           end)
  end

  test "an aggregate whose argument fails for a row is quarantined for that group only; " <>
         "RESUME rebuilds it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM per_g FROM stock SELECT g, sum(100 / qty) AS s, count(*) AS c, " <>
          "max(qty) AS top GROUP BY g"
      )

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM whole FROM stock SELECT sum(100 / qty) AS s, count(*) AS c"
      )

    converge(trellis)

    # Row 7 is in group 2: its group's sum fails.
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id = 7")
    converge(trellis)

    assert %{state: :paused, paused_kind: :quarantine} = column(trellis, "per_g", "s")
    assert %{state: :live} = column(trellis, "per_g", "c")
    assert quarantined_keys(trellis, "per_g.s") == [["2"]]
    assert quarantined_keys(trellis, "whole.s") == [["true"]]
    assert %{held_keys: 0, drain_failure: nil} = state(trellis, "per_g")

    {:ok, %Trellis.SamplePage{samples: [sample]}} = Trellis.sample_quarantined(trellis, "per_g.s")

    assert %Trellis.QuarantineSample{key: ["2"], inputs: %{"g" => "2"}, sqlstate: "22012"} =
             sample

    # NULL for group 2 only; its other columns and every other group exact.
    expected =
      "SELECT g, CASE WHEN g = 2 THEN NULL ELSE sum(100 / nullif(qty, 0)) END, count(*), " <>
        "max(qty) FROM stock GROUP BY g"

    assert differences(pg, "SELECT g, s, c, top FROM per_g", expected) == "0"

    assert differences(pg, "SELECT s, c FROM whole", "SELECT NULL::bigint, count(*) FROM stock") ==
             "0"

    # Later writes to group 2 and others flow: group 2 stays NULL in s only.
    SimplePG.query!(
      pg,
      "UPDATE stock SET qty = 50 WHERE id IN (12, 13); DELETE FROM stock WHERE id = 14"
    )

    SimplePG.query!(pg, "INSERT INTO stock VALUES (1001, 2, 3), (1002, 9, 4)")
    converge(trellis)
    assert differences(pg, "SELECT g, s, c, top FROM per_g", expected) == "0"
    assert quarantined_keys(trellis, "per_g.s") == [["2"]]

    # Fixed by a write: both groups compute again and leave the quarantine,
    # and the columns are live again without a RESUME, equal to the query.
    SimplePG.query!(pg, "UPDATE stock SET qty = 4 WHERE id = 7")
    converge(trellis)
    assert eventually(fn -> column(trellis, "per_g", "s").state == :live end)
    assert %{state: :live} = column(trellis, "whole", "s")
    assert {:ok, []} = Trellis.quarantined(trellis)

    assert differences(
             pg,
             "SELECT g, s, c, top FROM per_g",
             "SELECT g, sum(100 / qty), count(*), max(qty) FROM stock GROUP BY g"
           ) == "0"

    assert differences(pg, "SELECT s, c FROM whole", "SELECT sum(100 / qty), count(*) FROM stock") ==
             "0"
  end

  test "a WHERE that fails for a row holds its group; other groups flow; a fixing write " <>
         "releases it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM big FROM stock SELECT g, count(*) AS c WHERE 100 / qty > 20 GROUP BY g"
      )

    converge(trellis)
    query = "SELECT g, count(*) FROM stock WHERE 100 / qty > 20 GROUP BY g"
    assert differences(pg, "SELECT g, c FROM big", query) == "0"
    before = SimplePG.scalar!(pg, "SELECT c::text FROM big WHERE g = 2")

    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id = 7")
    SimplePG.query!(pg, "UPDATE stock SET qty = 1 WHERE id IN (8, 9, 12)")
    converge(trellis)

    assert %{held_keys: 1, drain_failure: nil} = state(trellis, "big")
    # Group 2 stays as it was; groups 3 and 4 (rows 8, 9) moved on.
    assert SimplePG.scalar!(pg, "SELECT c::text FROM big WHERE g = 2") == before

    assert differences(
             pg,
             "SELECT g, c FROM big WHERE g <> 2",
             "SELECT g, count(*) FROM stock WHERE g <> 2 AND 100 / nullif(qty, 0) > 20 GROUP BY g"
           ) == "0"

    copies_flow(trellis, pg, 1)

    # A write that fixes the row recomputes the group and releases it.
    SimplePG.query!(pg, "UPDATE stock SET qty = 2 WHERE id = 7")
    converge(trellis)
    assert eventually(fn -> state(trellis, "big").held_keys == 0 end)
    assert differences(pg, "SELECT g, c FROM big", query) == "0"
  end

  test "a group expression that fails for a row stalls no staging: the transform is " <>
         "rebuilt, its failure shows in status and await_converged names it; fixed, it converges",
       %{trellis: trellis, pg: pg} do
    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM ratios FROM stock SELECT 100 / qty AS r, count(*) AS c GROUP BY 100 / qty"
      )

    converge(trellis)
    SimplePG.query!(pg, "UPDATE stock SET qty = 0 WHERE id = 7")

    # Other transforms keep being staged and drained.
    copies_flow(trellis, pg, 1)

    assert eventually(fn -> state(trellis, "ratios").drain_failure != nil end, 500)

    assert %Trellis.DrainFailure{sqlstate: "22012", failure_class: :data_error} =
             state(trellis, "ratios").drain_failure

    assert {:error, %Trellis.Error{code: :database, message: message}} =
             Trellis.await_converged(trellis, Trellis.watermark_token!(trellis),
               timeout_ms: 60_000
             )

    assert message =~ "ratios" and message =~ "22012"
    copies_flow(trellis, pg, 2)

    # Fixed: the write is staged (the old version fails again, so the
    # transform is rebuilt once more) and the rebuild succeeds.
    SimplePG.query!(pg, "UPDATE stock SET qty = 3 WHERE id = 7")
    assert eventually(fn -> state(trellis, "ratios").drain_failure == nil end, 4000)
    converge(trellis)
    assert %{held_keys: 0} = state(trellis, "ratios")

    assert differences(
             pg,
             "SELECT r, c FROM ratios",
             "SELECT 100 / qty, count(*) FROM stock GROUP BY 100 / qty"
           ) == "0"
  end
end
