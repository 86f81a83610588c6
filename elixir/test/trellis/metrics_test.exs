defmodule Trellis.MetricsTest do
  # Trellis.Metrics.render_prometheus/0 over real ports. Not async: a render
  # covers every handle of the VM, so other tests' handles would come and go
  # in the middle of these.
  use ExUnit.Case, async: false

  import Trellis.Test.Handles, only: [connect!: 2]

  @moduletag :port

  alias Trellis.{Metrics, TestCluster}
  alias Trellis.Metrics.Exposition

  setup do
    %{url: TestCluster.url()}
  end

  # The value of the sample `name{labels}` in `text` (labels written as in
  # the exposition, trellis_instance first); nil when absent.
  defp sample(text, name, labels) do
    prefix = "#{name}{#{labels}} "

    text
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      if String.starts_with?(line, prefix), do: String.replace_prefix(line, prefix, "")
    end)
  end

  defp number(nil), do: 0
  defp number(text), do: text |> Float.parse() |> elem(0)

  defp promtool_check(text) do
    path = Path.join(System.tmp_dir!(), "trellis-metrics-#{System.unique_integer([:positive])}")
    File.write!(path, text)

    try do
      System.cmd("sh", ["-c", "promtool check metrics < #{path}"], stderr_to_stdout: true)
    after
      File.rm(path)
    end
  end

  test "two handles on two catalog schemas render as distinct instances, and counters move",
       %{url: url} do
    one = connect!(url, schema: "metrics_one", pool_size: 3)
    two = connect!(url, schema: "metrics_two", drain_threads: 1)
    assert one.instance != two.instance

    before = Metrics.render_prometheus()
    one_label = ~s(trellis_instance="#{one.instance}")
    two_label = ~s(trellis_instance="#{two.instance}")
    pings = number(sample(before, "trellis_calls_total", ~s(#{one_label},op="ping",result="ok")))

    for _ <- 1..3, do: :ok = Trellis.ping(one)
    text = Metrics.render_prometheus()

    assert number(sample(text, "trellis_calls_total", ~s(#{one_label},op="ping",result="ok"))) ==
             pings + 3

    assert sample(text, "trellis_calls_total", ~s(#{two_label},op="ping",result="ok")) in [
             nil,
             "0"
           ]

    # Each render asks each handle once.
    assert number(sample(text, "trellis_calls_total", ~s(#{two_label},op="metrics",result="ok"))) >=
             1

    assert sample(text, "trellis_pool_connections_max", one_label) == "3"
    assert sample(text, "trellis_pool_connections_max", two_label) == "10"
    assert sample(text, "trellis_workers", ~s(#{two_label},role="drain")) in ["0", "1"]
    assert sample(text, "trellis_staging_elected", one_label) == "0"
    assert sample(text, "trellis_metrics_scrape_errors", one_label) == "0"
    assert sample(text, "trellis_metrics_scrape_errors", two_label) == "0"

    assert number(sample(text, "trellis_call_duration_seconds_count", ~s(#{one_label},op="ping"))) >=
             3

    assert sample(
             text,
             "trellis_call_duration_seconds_bucket",
             ~s(#{one_label},op="ping",le="+Inf")
           ) ==
             sample(text, "trellis_call_duration_seconds_count", ~s(#{one_label},op="ping"))

    # Each family's HELP and TYPE appear once, however many handles.
    for family <- ["trellis_calls_total", "trellis_workers", "trellis_call_duration_seconds"] do
      assert length(String.split(text, "# TYPE #{family} ")) == 2
      assert length(String.split(text, "# HELP #{family} ")) == 2
    end

    # Every sample names its instance.
    for line <- String.split(text, "\n", trim: true), not String.starts_with?(line, "#") do
      assert line =~ ~r/^[a-z_]+\{trellis_instance="[^"]+"/
    end
  end

  @tag timeout: 120_000
  test "the background workers' series count a real workload" do
    url = Trellis.Test.Database.create!("metrics_work")
    pg = Trellis.Test.SimplePG.connect!(url)
    on_exit(fn -> Trellis.Test.SimplePG.close(pg) end)

    Trellis.Test.SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 200) g;
    """)

    migrator = connect!(url, [])
    :ok = Trellis.migrate(migrator)
    trellis = connect!(url, staging: true, drain_threads: 2)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS p")
    Trellis.Test.SimplePG.query!(pg, "UPDATE widgets SET price = price + 1 WHERE id <= 50")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)

    text = Metrics.render_prometheus()
    label = ~s(trellis_instance="#{trellis.instance}")
    # Both handles are on this instance: their series add up.
    assert number(sample(text, "trellis_backfill_rows_total", label)) >= 200
    assert number(sample(text, "trellis_capture_rows_staged_total", label)) >= 1
    assert number(sample(text, "trellis_drain_pages_total", label)) >= 1
    assert number(sample(text, "trellis_drain_keys_total", label)) >= 50
    assert sample(text, "trellis_staging_elected", label) == "1"
    assert sample(text, "trellis_workers", ~s(#{label},role="staging")) == "1"
    assert sample(text, "trellis_workers", ~s(#{label},role="drain")) == "2"
  end

  @tag :promtool
  test "promtool accepts the rendered text", %{url: url} do
    if System.find_executable("promtool") == nil do
      IO.puts(:stderr, "promtool not installed: the rendered text was not checked by it")
    else
      handle = connect!(url, schema: "metrics_promtool", drain_threads: 1)
      :ok = Trellis.ping(handle)
      {:error, _} = Trellis.status(handle, "no_such_transform")
      text = Metrics.render_prometheus()
      {output, status} = promtool_check(text)
      assert status == 0, output <> "\n" <> text
    end
  end

  test "a port that does not answer is left out within the budget, and the render says so",
       %{url: url} do
    stuck = connect!(url, schema: "metrics_stuck")
    live = connect!(url, schema: "metrics_live")
    {:os_pid, os_pid} = Port.info(stuck.port, :os_pid)

    # A stopped process reads nothing: its metrics request goes unanswered.
    {_, 0} = System.cmd("kill", ["-STOP", "#{os_pid}"])
    text = Metrics.render_prometheus()
    {_, 0} = System.cmd("kill", ["-CONT", "#{os_pid}"])

    stuck_label = ~s(trellis_instance="#{stuck.instance}")
    live_label = ~s(trellis_instance="#{live.instance}")
    assert sample(text, "trellis_metrics_scrape_errors", stuck_label) == "1"
    assert sample(text, "trellis_metrics_scrape_errors", live_label) == "0"

    assert text =~
             "# trellis_metrics: the handle of trellis_instance=#{stuck.instance} is left out: " <>
               "no answer within 1000 ms\n"

    assert sample(text, "trellis_pool_connections_max", stuck_label) == nil
    assert sample(text, "trellis_pool_connections_max", live_label) == "10"

    # Once it runs again it is back in the next render.
    :ok = Trellis.ping(stuck)

    assert sample(Metrics.render_prometheus(), "trellis_metrics_scrape_errors", stuck_label) ==
             "0"
  end

  describe "merging (no port)" do
    defp family(name, type, labels, series, extra \\ %{}) do
      Map.merge(
        %{
          "name" => name,
          "type" => type,
          "help" => "help of #{name}",
          "labels" => labels,
          "series" => series
        },
        extra
      )
    end

    test "series of two handles on one instance add up; label values are escaped" do
      calls = fn n ->
        family("trellis_calls_total", "counter", ["op", "result"], [
          %{"labels" => ["ping", "ok"], "value" => n}
        ])
      end

      latency = fn count ->
        family(
          "trellis_call_duration_seconds",
          "histogram",
          ["op"],
          [%{"labels" => ["a\"b\\c\nd"], "counts" => [1, count], "sum" => 0.5, "count" => count}],
          %{"buckets" => [0.001, 2.5]}
        )
      end

      text =
        Exposition.render(
          [
            {"app/trellis", {:ok, [calls.(2), latency.(3)]}},
            {"app/trellis", {:ok, [calls.(5), latency.(4)]}},
            {"other/trellis", {:error, "no answer within 1000 ms"}}
          ],
          1_000
        )

      assert text =~
               ~s(trellis_calls_total{trellis_instance="app/trellis",op="ping",result="ok"} 7\n)

      escaped = ~S(op="a\"b\\c\nd")

      assert text =~
               ~s(trellis_call_duration_seconds_bucket{trellis_instance="app/trellis",#{escaped},le="0.001"} 2\n)

      assert text =~
               ~s(trellis_call_duration_seconds_bucket{trellis_instance="app/trellis",#{escaped},le="+Inf"} 7\n)

      assert text =~
               ~s(trellis_call_duration_seconds_sum{trellis_instance="app/trellis",#{escaped}} 1\n)

      assert text =~ ~s(trellis_metrics_scrape_errors{trellis_instance="app/trellis"} 0\n)
      assert text =~ ~s(trellis_metrics_scrape_errors{trellis_instance="other/trellis"} 1\n)

      assert text =~
               "# trellis_metrics: the handle of trellis_instance=other/trellis is left out: " <>
                 "no answer within 1000 ms\n"
    end

    test "with no handle, only the scrape-errors family's HELP and TYPE" do
      assert Exposition.render([], 1_000) ==
               "# HELP trellis_metrics_scrape_errors Handles whose port program did not answer " <>
                 "this render's metrics request within 1000 ms (their series are left out).\n" <>
                 "# TYPE trellis_metrics_scrape_errors gauge\n"
    end
  end
end
