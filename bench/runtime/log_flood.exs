# The log flood benchmark (issue "Logs and metrics"): does a storm of engine
# debug lines slow the handle's calls, and is the overflow dropped and
# reported rather than queued without bound?
#
#   MIX_ENV=test mix run ../bench/runtime/log_flood.exs   (from elixir/)
#
# Needs TRELLIS_PORT_PATH (trellis-port) and a database URL in
# TRELLIS_BENCH_URL. Lines go through the real path: port program ->
# owner -> Trellis.LogBridge -> Logger, into a :logger_std_h file handler
# that keeps only the :trellis domain (the recipe in Trellis.LogBridge's
# docs), writing to a temporary file; the console backend is removed so the
# terminal is not the bottleneck. Quiet and storm rounds are interleaved and
# each side reports its median, because the machine is shared and noisy.
#
# Reading it: the storm itself keeps a core busy, which on a small VM can
# make the storm rounds *faster* at the median than the quiet ones (the
# quiet rounds pay for waking idle cores). The tail (p99) is the figure that
# shows lines competing with replies; the port caps what it sends at 10 000
# lines/s, so a storm costs the VM a bounded number of messages.

defmodule LogFloodBench do
  @rounds 5
  @calls_per_round 20_000
  # Far more than a round lasts: the storm is stopped by turning the level off.
  @storm_lines 10_000_000

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    quiet_logger()
    :ok = Trellis.LogBridge.put_level(:debug)
    trellis = Trellis.connect!(url: url, schema: "log_flood_bench")
    for _ <- 1..1_000, do: :ok = Trellis.ping(trellis)

    rounds =
      for _ <- 1..@rounds do
        quiet = latencies(trellis)
        storm = storm_round(trellis)
        {quiet, storm}
      end

    quiet = Enum.map(rounds, fn {q, _} -> q end)
    storm = Enum.map(rounds, fn {_, s} -> s end)
    quiet_p50 = median(Enum.map(quiet, & &1.p50))
    storm_p50 = median(Enum.map(storm, &elem(&1, 0).p50))
    quiet_p99 = median(Enum.map(quiet, & &1.p99))
    storm_p99 = median(Enum.map(storm, &elem(&1, 0).p99))
    sent = median(Enum.map(storm, &elem(&1, 1).sent_per_s))
    dropped = median(Enum.map(storm, &elem(&1, 1).dropped_per_s))
    bridge_dropped = Enum.sum(Enum.map(storm, &elem(&1, 1).bridge_dropped))

    IO.puts("""
    | measure (median of #{@rounds} rounds, #{@calls_per_round} sequential pings each) | quiet | during a debug storm | ratio |
    | --- | --- | --- | --- |
    | ping round trip p50 | #{fmt(quiet_p50)} µs | #{fmt(storm_p50)} µs | #{fmt(storm_p50 / quiet_p50)}x |
    | ping round trip p99 | #{fmt(quiet_p99)} µs | #{fmt(storm_p99)} µs | #{fmt(storm_p99 / quiet_p99)}x |

    During the storm the port sent #{round(sent)} lines/s to the VM and dropped
    #{round(dropped)} lines/s (its queue was full); Trellis.LogBridge dropped
    #{bridge_dropped} lines in all (Logger did not keep up). Every ping was answered.
    """)

    Trellis.shutdown(trellis)
    File.rm(log_file())
  end

  defp log_file, do: Path.join(System.tmp_dir!(), "trellis-log-flood-bench.log")

  # Replaces the console with a file handler for the :trellis domain.
  defp quiet_logger do
    Logger.remove_backend(:console)

    :ok =
      :logger.add_handler(:trellis_bench, :logger_std_h, %{
        config: %{file: String.to_charlist(log_file()), filesync_repeat_interval: :no_repeat},
        filter_default: :stop,
        filters: [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
      })

    # Counts the bridge's own drop warnings.
    :counters.new(1, []) |> then(&:persistent_term.put(:log_flood_bridge_drops, &1))

    :ok =
      :logger.add_handler(:trellis_bench_drops, __MODULE__.DropCounter, %{
        level: :warning,
        filter_default: :stop,
        filters: [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
      })
  end

  defmodule DropCounter do
    def log(%{msg: {:string, text}}, _config) do
      case Regex.run(~r/LogBridge dropped (\d+)/, IO.chardata_to_string(text)) do
        [_, n] ->
          :counters.add(:persistent_term.get(:log_flood_bridge_drops), 1, String.to_integer(n))

        nil ->
          :ok
      end
    end

    def log(_event, _config), do: :ok
  end

  defp storm_round(trellis) do
    :ok =
      Trellis.LogBridge.log_test_line(trellis, :debug,
        count: @storm_lines,
        background: true,
        message: "storm"
      )

    # Past the storm's first burst: the steady state is what is measured.
    Process.sleep(200)
    before = counters(trellis)
    bridge_before = :counters.get(:persistent_term.get(:log_flood_bridge_drops), 1)
    t0 = System.monotonic_time(:microsecond)
    stats = latencies(trellis)
    seconds = (System.monotonic_time(:microsecond) - t0) / 1_000_000
    after_ = counters(trellis)
    # Ends the storm: its remaining lines are filtered before formatting, and
    # the VM side drains before the next quiet round.
    {:ok, nil} = Trellis.Call.call(trellis, "set_log_level", %{"level" => "critical"})
    Process.sleep(2_000)
    {:ok, nil} = Trellis.Call.call(trellis, "set_log_level", %{"level" => "debug"})

    {stats,
     %{
       sent_per_s: (after_.sent - before.sent) / seconds,
       dropped_per_s: (after_.dropped - before.dropped) / seconds,
       bridge_dropped:
         :counters.get(:persistent_term.get(:log_flood_bridge_drops), 1) - bridge_before
     }}
  end

  defp counters(trellis) do
    {:ok, %{"families" => families}} = Trellis.Call.call(trellis, "metrics", %{})
    sent = families |> series("trellis_log_lines_total") |> Enum.map(& &1["value"]) |> Enum.sum()
    dropped = families |> series("trellis_log_lines_dropped_total") |> Enum.map(& &1["value"])
    %{sent: sent, dropped: Enum.sum(dropped)}
  end

  defp series(families, name), do: Enum.find(families, &(&1["name"] == name))["series"]

  defp latencies(trellis) do
    samples =
      for _ <- 1..@calls_per_round do
        {us, :ok} = :timer.tc(fn -> Trellis.ping(trellis) end)
        us
      end
      |> Enum.sort()

    %{p50: percentile(samples, 0.5), p99: percentile(samples, 0.99)}
  end

  defp percentile(sorted, q),
    do: Enum.at(sorted, min(round(q * length(sorted)), length(sorted) - 1))

  defp median(list), do: list |> Enum.sort() |> Enum.at(div(length(list), 2))

  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 1)
end

LogFloodBench.run()
