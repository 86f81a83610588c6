# Scrape latency of Trellis.Metrics.render_prometheus/0 with 8 handles under
# load (issue 18, item 1).
#
#   cd elixir && MIX_ENV=test TRELLIS_BENCH_URL=postgresql://... \
#     TRELLIS_PORT_PATH=../build/port/trellis-port mix run ../bench/runtime/metrics_scrape.exs
#
# Each handle is kept busy by callers pinging it as fast as they can, and one
# handle's port program is stopped (SIGSTOP) for a round. Measured in the same
# run, as ratios: the render (which reads the VM's ETS registry only) against
# the way scrapes worked before, asking each handle's port for its `metrics`
# snapshot in parallel with a 1 s budget, and against the render with the
# handles idle.

defmodule MetricsScrapeBench do
  @handles 8
  @callers_per_handle 4
  @scrapes 500
  @old_budget_ms 1_000

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")

    handles =
      for i <- 1..@handles,
          do: Trellis.connect!(url: url, schema: "scrape_bench_#{i}", pool_size: 2)

    for handle <- handles, do: :ok = Trellis.Metrics.flush(handle)

    idle_new = latencies(&Trellis.Metrics.render_prometheus/0)
    idle_old = latencies(fn -> old_scrape(handles) end)

    load = start_load(handles)
    busy_new = latencies(&Trellis.Metrics.render_prometheus/0)
    busy_old = latencies(fn -> old_scrape(handles) end)

    # One port program stopped: the old way waits out its budget.
    {:os_pid, os_pid} = Port.info(hd(handles).port, :os_pid)
    System.cmd("kill", ["-STOP", "#{os_pid}"])
    stuck_new = latencies(&Trellis.Metrics.render_prometheus/0)
    stuck_old = latencies(fn -> old_scrape(handles) end, 5)
    System.cmd("kill", ["-CONT", "#{os_pid}"])

    calls = stop_load(load)
    lines = Trellis.Metrics.render_prometheus() |> String.split("\n") |> length()

    IO.puts("""
    #{@handles} handles, #{@callers_per_handle} pinging callers each (#{calls} pings during the run); the render has #{lines} lines.

    | scrape | p50 | p99 | p99 vs idle render |
    | --- | --- | --- | --- |
    | render_prometheus/0, idle handles | #{ms(p(idle_new, 50))} | #{ms(p(idle_new, 99))} | 1.0x |
    | render_prometheus/0, handles under load | #{ms(p(busy_new, 50))} | #{ms(p(busy_new, 99))} | #{ratio(busy_new, idle_new)} |
    | render_prometheus/0, one port stopped | #{ms(p(stuck_new, 50))} | #{ms(p(stuck_new, 99))} | #{ratio(stuck_new, idle_new)} |
    | before: ask every port, idle handles | #{ms(p(idle_old, 50))} | #{ms(p(idle_old, 99))} | #{ratio(idle_old, idle_new)} |
    | before: ask every port, under load | #{ms(p(busy_old, 50))} | #{ms(p(busy_old, 99))} | #{ratio(busy_old, idle_new)} |
    | before: ask every port, one port stopped | #{ms(p(stuck_old, 50))} | #{ms(p(stuck_old, 99))} | #{ratio(stuck_old, idle_new)} |
    """)

    for handle <- handles, do: Trellis.shutdown(handle)
  end

  defp latencies(scrape, count \\ @scrapes) do
    for _ <- 1..count do
      {us, _} = :timer.tc(scrape)
      us
    end
  end

  # The pre-#18 scrape: every handle's `metrics` op, in parallel, 1 s each,
  # then the replies merged and rendered as text (the same exposition).
  defp old_scrape(handles) do
    handles
    |> Task.async_stream(&Trellis.Call.call(&1, "metrics", %{}, timeout_ms: @old_budget_ms),
      timeout: @old_budget_ms + 100,
      on_timeout: :kill_task,
      max_concurrency: length(handles)
    )
    |> Enum.zip(handles)
    |> Enum.reduce(%{}, fn
      {{:ok, {:ok, %{"families" => families}}}, handle}, acc ->
        Enum.reduce(families, acc, &merge_family(&2, handle.instance, &1))

      _failed, acc ->
        acc
    end)
    |> Trellis.Metrics.Exposition.render()
  end

  defp merge_family(acc, instance, wire) do
    family =
      Map.get(acc, wire["name"]) ||
        %{
          type: wire["type"],
          help: wire["help"],
          labels: wire["labels"],
          buckets: wire["buckets"] || [],
          series: %{}
        }

    series =
      Enum.reduce(wire["series"], family.series, fn s, series ->
        value =
          if family.type == "histogram",
            do: %{counts: s["counts"], sum: s["sum"], count: s["count"]},
            else: s["value"]

        Map.put(series, [instance | s["labels"]], value)
      end)

    Map.put(acc, wire["name"], %{family | series: series})
  end

  defp start_load(handles) do
    counter = :counters.new(1, [])

    tasks =
      for handle <- handles, _ <- 1..@callers_per_handle do
        Task.async(fn -> ping_loop(handle, counter) end)
      end

    {tasks, counter}
  end

  defp ping_loop(handle, counter) do
    receive do
      :stop -> :ok
    after
      0 ->
        Trellis.ping(handle)
        :counters.add(counter, 1, 1)
        ping_loop(handle, counter)
    end
  end

  defp stop_load({tasks, counter}) do
    for task <- tasks, do: send(task.pid, :stop)
    Task.await_many(tasks, 30_000)
    :counters.get(counter, 1)
  end

  defp p(list, q) do
    sorted = Enum.sort(list)
    Enum.at(sorted, min(length(sorted) - 1, div(length(sorted) * q, 100)))
  end

  defp ratio(a, b), do: "#{:erlang.float_to_binary(p(a, 99) / max(p(b, 99), 1), decimals: 1)}x"
  defp ms(us), do: "#{:erlang.float_to_binary(us / 1000, decimals: 2)} ms"
end

MetricsScrapeBench.run()
