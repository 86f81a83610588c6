defmodule Trellis.Observability.StatusTaskTest do
  # mix trellis.status through the real port against the suite's cluster:
  # the table, and the exit status a deploy script gates on, read from a
  # real `mix` process.
  use ExUnit.Case, async: true

  import ExUnit.CaptureIO
  import Trellis.Test.Eventually, only: [eventually: 1]

  alias Trellis.Test.{Database, SimplePG}
  alias Trellis.StatusTable

  @moduletag :capture_log
  @moduletag timeout: 300_000

  # `mix trellis.status` in its own OS process, as a deploy script runs it:
  # {output, exit status}. --no-compile: this test run compiled everything.
  defp mix_status(args) do
    System.cmd("mix", ["trellis.status", "--no-compile" | args],
      cd: Path.expand("../../..", __DIR__),
      env: [{"MIX_ENV", "test"}],
      stderr_to_stdout: true
    )
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  describe "through the real port" do
    @describetag :port

    setup do
      %{url: url, pg: pg} = Database.open!("status_task")

      SimplePG.query!(pg, """
      CREATE TABLE widgets (id int PRIMARY KEY, price int NOT NULL);
      INSERT INTO widgets SELECT g, g FROM generate_series(1, 50) g;
      CREATE TABLE gadgets (id int PRIMARY KEY, weight int NOT NULL);
      INSERT INTO gadgets SELECT g, g FROM generate_series(1, 50) g;
      """)

      :ok = Trellis.migrate(Trellis.connect!(url: url))
      trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
      on_exit(fn -> Trellis.shutdown(trellis) end)

      {:ok, _} =
        Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

      {:ok, _} =
        Trellis.define(trellis, "TRANSFORM gadget_weights FROM gadgets SELECT weight AS w")

      converge(trellis)
      %{url: url, pg: pg, trellis: trellis}
    end

    test "every transform live: one row each, exit status 0", %{url: url} do
      {output, status} = mix_status(["--url", url, "--no-color"])
      assert status == 0, output
      lines = String.split(output, "\n")
      assert Enum.any?(lines, &String.starts_with?(&1, "TRANSFORM"))

      assert Enum.any?(
               lines,
               &(&1 =~ ~r/^widget_prices\s+live\s+0s\s+0 pages \/ 0 keys\s+0\s+-\s+-$/)
             )

      assert Enum.any?(lines, &(&1 =~ ~r/^gadget_weights\s+live\s/))
      # No colours were asked for.
      refute output =~ "\e["
    end

    test "a paused transform with writes waiting: its lag grows, exit status 1 names it",
         %{url: url, pg: pg, trellis: trellis} do
      {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM widget_prices")
      SimplePG.query!(pg, "UPDATE widgets SET price = price + 1 WHERE id <= 5")
      # Staged: the write waits in the paused transform's ledger.
      assert eventually(fn -> Trellis.status!(trellis, "widget_prices").backlog_pages > 0 end)
      Process.sleep(1500)

      {output, status} = mix_status(["--url", url, "--no-color", "--max-lag", "3600"])
      assert status == 1, output
      assert output =~ ~r/^widget_prices\s+paused \(operator\)\s+\d/m
      assert output =~ ~r/^widget_prices: paused \(operator\)$/m
      # The other transform is fine, and named nowhere below the table.
      refute output =~ ~r/^gadget_weights:/m

      # The lag limit alone fails a transform too.
      {output, 1} = mix_status(["--url", url, "--no-color", "--max-lag", "0.5"])
      assert output =~ ~r/^widget_prices: lag \d+(\.\d)?s over the limit of 0\.5s$/m

      {:ok, {:resumed, _}} = Trellis.apply(trellis, "RESUME TRANSFORM widget_prices")
      converge(trellis)
      assert eventually(fn -> Trellis.status!(trellis, "widget_prices").status == :live end)
      assert {_output, 0} = mix_status(["--url", url, "--no-color"])
    end

    test "in this VM: colours on request, and a bad schema or option fails with the reason",
         %{url: url} do
      output = capture_io(fn -> Mix.Tasks.Trellis.Status.run(["--url", url, "--color"]) end)

      assert output =~ IO.ANSI.green() <> "live"

      assert_raise Mix.Error, ~r/has no Trellis catalog.*--schema/, fn ->
        capture_io(fn ->
          Mix.Tasks.Trellis.Status.run(["--url", url, "--schema", "nothing_here"])
        end)
      end

      assert_raise Mix.Error, ~r/--max-lag takes a number of seconds/, fn ->
        Mix.Tasks.Trellis.Status.run(["--url", url, "--max-lag", "soon"])
      end
    end
  end

  describe "the table and its problems (no database)" do
    defp status(fields, lag_ms \\ 0),
      do: {struct!(%Trellis.Status{name: "t", status: :live}, fields), lag_ms}

    test "lags read as an operator reads them" do
      assert Enum.map([0, 1200, 9_960, 95_000, 725_000, 10_920_000], &StatusTable.lag/1) ==
               ["0s", "1.2s", "10s", "95s", "12m05s", "3h02m"]
    end

    test "colours only when asked for, and columns line up either way" do
      rows = [
        status(name: "a"),
        status(name: "longer_name", status: :paused, paused_kind: :operator)
      ]

      plain = StatusTable.render(rows, 60, false)
      coloured = StatusTable.render(rows, 60, true)
      refute plain =~ "\e["
      assert coloured =~ IO.ANSI.green() <> "live"
      assert coloured =~ IO.ANSI.red() <> "paused (operator)"
      # Without the escapes, the coloured table is the plain one.
      assert String.replace(coloured, ~r/\e\[[0-9;]*m/, "") == plain
      [header, a, _] = String.split(plain, "\n")
      assert elem(:binary.match(header, "STATUS"), 0) == elem(:binary.match(a, "live"), 0)
    end

    test "each kind of trouble is a problem, building is not" do
      assert StatusTable.problems([status([status: :backfilling], 59_000)], 60) == []

      failure = %Trellis.DrainFailure{unit: :pages, attempts: 3, message: "denied"}

      problems =
        StatusTable.problems(
          [
            status(name: "a", status: :paused, paused_kind: :operator),
            status(name: "b", drain_failure: failure),
            status(name: "c", held_keys: 2),
            status([name: "d"], 61_000),
            status(name: "e", columns: [%Trellis.ColumnStatus{name: "x", state: :paused}])
          ],
          60
        )

      assert problems == [
               {"a", "paused (operator)"},
               {"b", "drain failing (3 attempts)"},
               {"c", "2 keys held"},
               {"d", "lag 61s over the limit of 60s"},
               {"e", "columns paused: x"}
             ]
    end
  end
end
