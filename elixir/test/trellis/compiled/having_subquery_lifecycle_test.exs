defmodule Trellis.Compiled.HavingSubqueryLifecycleTest do
  # A statement with a subquery in HAVING (TPC-H Q11's shape) runs as its
  # grouping in a hidden stage, the subquery's one-row grouping and a
  # projection comparing them; a user sees one transform, and every message
  # about a part names the part of the statement it comes from (the
  # grouping, the subquery in HAVING), never the hidden stages or the alias
  # the parser gave the grouping: refusals at define, ALTER refused with the
  # fix, a failing grouped column in quarantine under the user's
  # transform and column (quarantined/1, status/2, sample_quarantined/3,
  # RESUME), source index gaps. Issue 26.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets
  import ExUnit.CaptureLog

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM big_parts FROM ps SELECT ps.k, sum(ps.v) AS value, " <>
               "sum(100 / ps.q) AS per GROUP BY ps.k " <>
               "HAVING sum(ps.v) > (SELECT sum(x.v) * 0.01 FROM ps x)"
  @query "SELECT k, sum(v), sum(100 / q) FROM ps GROUP BY k " <>
           "HAVING sum(v) > (SELECT sum(x.v) * 0.01 FROM ps x)"

  setup do
    %{url: url, pg: pg} = Database.open!("having_subquery_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE ps (id int PRIMARY KEY, k int, v int, q int);
    INSERT INTO ps SELECT g, g % 30, g % 17, 1 + g % 5 FROM generate_series(1, 600) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  # The hidden stage that groups `ps` by `k` (the statement's grouping) and
  # its stage order.
  defp grouping_stage!(pg) do
    [[stage, order]] =
      SimplePG.query!(pg, """
      SELECT s.target_name, s.stage_order FROM trellis.transforms s
      JOIN trellis.transforms u ON u.id = s.owner_id
      JOIN trellis.transform_columns c ON c.transform_id = s.id AND c.name = 'per'
      WHERE u.target_name = 'big_parts' AND s.kind = 'group_by'
      """)

    {stage, order}
  end

  defp refute_hidden(message) do
    refute message =~ "__trellis", message
    refute message =~ "trellis_grouped", message
    refute message =~ "trellis_having", message
  end

  test "refusals name the grouping or the subquery in HAVING; ALTER names the subquery and the fix",
       %{trellis: t, pg: pg} do
    having = "HAVING sum(ps.v) > (SELECT sum(x.v) * 0.01 FROM ps x)"
    grouping = "(in the statement's grouping (its FROM, WHERE, GROUP BY and SELECT list"

    refusals = [
      {"TRANSFORM bad FROM ps SELECT ps.k, sum(ps.nope) AS value GROUP BY ps.k " <> having,
       ["column ps.nope does not exist", grouping]},
      {"TRANSFORM bad FROM ps SELECT ps.k, sum(ps.v) + random() AS value GROUP BY ps.k " <>
         having, ["volatile function random()", grouping]},
      {"TRANSFORM bad FROM ps SELECT ps.k, sum(ps.v) AS value GROUP BY ps.k " <>
         "HAVING sum(ps.v) > (SELECT sum(x.nope) * 0.01 FROM ps x)",
       ["column x.nope does not exist (in the subquery in HAVING)"]}
    ]

    for {statement, parts} <- refusals do
      assert {:error, %Trellis.Error{code: :validation, message: message}} =
               Trellis.define(t, statement)

      for part <- parts, do: assert(message =~ part, message)
      refute_hidden(message)
    end

    assert_nothing_created(pg)

    assert {:ok, {:transform_defined, "big_parts"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT k, value, per FROM big_parts", @query) == "0"

    for alter <- [
          "ALTER TRANSFORM big_parts ADD COLUMN max(ps.v) AS top",
          "ALTER TRANSFORM big_parts DROP COLUMN per"
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.apply(t, alter)

      assert message =~ "a statement with a subquery in HAVING", message
      assert message =~ "DROP TRANSFORM big_parts and define it again", message
      refute message =~ "FROM or WITH", message
      refute_hidden(message)
    end

    {:ok, status} = Trellis.status(t, "big_parts")

    for gap <- status.source_index_gaps do
      refute_hidden(gap.table <> " " <> gap.fix)
    end
  end

  test "a grouped column failing for a row is in quarantine under the user's transform and column",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "big_parts"}} = Trellis.define(t, @statement)
    converge!(t)

    log =
      capture_log(fn ->
        SimplePG.query!(pg, "UPDATE ps SET q = 0 WHERE id = 7")
        converge!(t)
      end)

    # The port's log line names the user's transform, the stage, and the
    # addresses the user passes back.
    {stage, order} = grouping_stage!(pg)

    assert log =~ "transform big_parts (its stage #{order}, catalog name #{stage}) column per: ",
           log

    assert log =~ ~s|Trellis.sample_quarantined(handle, "big_parts.per")|, log
    assert log =~ "RESUME TRANSFORM big_parts.per rebuilds the column", log
    refute log =~ "transform #{stage} ", log
    refute log =~ "#{stage}.per", log

    assert {:ok, [entry]} = Trellis.quarantined(t)
    assert %Trellis.QuarantineEntry{target: "big_parts.per", transform: "big_parts"} = entry
    assert entry.column == "per" and entry.rows == 1
    assert entry.reason =~ "division by zero", entry.reason
    assert entry.reason =~ "\"big_parts.per\"", entry.reason
    assert entry.reason =~ "RESUME TRANSFORM big_parts.per", entry.reason
    refute_hidden(entry.reason)

    # Read back by the names it is listed under.
    assert {:ok, [%Trellis.QuarantineEntry{target: "big_parts.per"}]} =
             Trellis.quarantine_status(t, "big_parts.per")

    assert {:ok, [%Trellis.QuarantineEntry{target: "big_parts.per"}]} =
             Trellis.quarantine_status(t, "big_parts")

    assert {:ok, %Trellis.SamplePage{samples: [sample]}} =
             Trellis.sample_quarantined(t, "big_parts.per")

    assert sample.target == "big_parts.per"
    assert sample.key == ["7"]

    # status/2 shows the user's column in quarantine, and no hidden column.
    {:ok, status} = Trellis.status(t, "big_parts")
    per = Enum.find(status.columns, &(&1.name == "per"))
    assert %Trellis.ColumnStatus{state: :paused, paused_kind: :quarantine} = per
    refute_hidden(per.paused_reason)
    assert Enum.find(status.columns, &(&1.name == "value")).state == :live
    refute_hidden(Enum.join(status.paused_upstream_columns, " "))

    # The fix is a write: the row leaves the quarantine by itself.
    SimplePG.query!(pg, "UPDATE ps SET q = 2 WHERE id = 7")
    converge!(t)
    assert {:ok, []} = Trellis.quarantined(t)
    assert differences(pg, "SELECT k, value, per FROM big_parts", @query) == "0"

    # RESUME of the user's column reaches the stage's (it says so).
    SimplePG.query!(pg, "UPDATE ps SET q = 0 WHERE id = 8")
    converge!(t)
    assert {:ok, [%Trellis.QuarantineEntry{target: "big_parts.per"}]} = Trellis.quarantined(t)

    assert {:ok, {:resumed, ["big_parts.per"]}} =
             Trellis.apply(t, "RESUME TRANSFORM big_parts.per")

    # Rebuilt with the row still failing: the rebuild goes by groups, so
    # the failing group is in quarantine again, every other group is
    # written, and the wait returns.
    assert :ok = Trellis.await_converged(t, Trellis.watermark_token!(t), timeout_ms: 60_000)

    assert {:ok, [%Trellis.QuarantineEntry{target: "big_parts.per", rows: 1}]} =
             Trellis.quarantined(t)

    # Fixed by a write, the group leaves the quarantine.
    SimplePG.query!(pg, "UPDATE ps SET q = 3 WHERE id = 8")
    converge!(t)

    assert {:ok, []} = Trellis.quarantined(t)
    assert differences(pg, "SELECT k, value, per FROM big_parts", @query) == "0"
  end

  test "a key the statement's grouping holds is logged, counted and released by the user's " <>
         "transform's name",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "big_parts"}} = Trellis.define(t, @statement)
    converge!(t)
    {stage, order} = grouping_stage!(pg)

    # The grouping's target refuses group 7's row whatever its values: no
    # column explains it, so the stage holds the key.
    SimplePG.query!(
      pg,
      "ALTER TABLE trellis.#{stage} ADD CONSTRAINT no_7 CHECK (k <> 7) NOT VALID"
    )

    log =
      capture_log(fn ->
        SimplePG.query!(pg, "UPDATE ps SET v = v + 1 WHERE k = 7")
        converge!(t)
      end)

    assert log =~ "transform big_parts (its stage #{order}, catalog name #{stage}) holds key {7}",
           log

    assert log =~ ~s|Trellis.release_key(handle, "big_parts", key)|, log
    refute log =~ "transform #{stage} ", log

    assert %Trellis.Status{held_keys: 1} = Trellis.status!(t, "big_parts")

    # Released by the user's transform's name; still failing, it stays held
    # and the error names the user's transform.
    assert {:error, %Trellis.Error{code: :database, message: message}} =
             Trellis.release_key(t, "big_parts", [7])

    # PostgreSQL's own error names the table whose constraint refused the
    # row (the stage's, here); everything Trellis says names the user's.
    assert message =~ "stays held" and message =~ "no_7", message
    assert message =~ "key {7} of transform big_parts failed again", message
    refute message =~ "transform __trellis", message

    assert {:error, %Trellis.Error{code: :not_found, message: message}} =
             Trellis.release_key(t, "big_parts", [8])

    assert message =~ "transform big_parts holds no key", message
    refute_hidden(message)

    SimplePG.query!(pg, "ALTER TABLE trellis.#{stage} DROP CONSTRAINT no_7")
    assert :ok = Trellis.release_key(t, "big_parts", ["7"])
    assert %Trellis.Status{held_keys: 0} = Trellis.status!(t, "big_parts")
    converge!(t)
    assert differences(pg, "SELECT k, value, per FROM big_parts", @query) == "0"
  end
end
