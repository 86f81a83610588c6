# The port runtime benchmark (issue "Port runtime and the Elixir handle").
#
#   MIX_ENV=test mix run ../bench/runtime/port_runtime.exs   (from elixir/)
#
# Needs TRELLIS_PORT_PATH (trellis-port) and TRELLIS_PIPE_ECHO_PATH (the
# baseline, build/bench/runtime/pipe_echo) and a database URL in
# TRELLIS_BENCH_URL. Everything is measured in one run, as ratios against the
# baseline, because the machine is shared and noisy.

defmodule PortRuntimeBench do
  @sequential 20_000
  @callers 16
  @per_caller 10_000
  @rounds 5

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    echo_path = System.fetch_env!("TRELLIS_PIPE_ECHO_PATH")
    trellis = Trellis.connect!(url: url)
    os_pid = trellis.port |> Port.info(:os_pid) |> elem(1)
    idle_rss = rss_kb(os_pid)

    echo = Port.open({:spawn_executable, echo_path}, [:binary, {:packet, 4}, :nouse_stdio])
    ping = fn -> :ok = Trellis.ping(trellis) end
    frame = Trellis.Protocol.encode_request(1, "ping", %{}, 30_000)

    echo_call = fn ->
      Port.command(echo, frame)

      receive do
        {^echo, {:data, _}} -> :ok
      end
    end

    # Interleaved rounds; the median of each side.
    seq =
      for _ <- 1..@rounds do
        {sequential_us(echo_call), sequential_us(ping)}
      end

    {echo_seq, trellis_seq} = medians(seq)
    throughput = for _ <- 1..@rounds, do: parallel_calls_per_s(trellis)
    busy_rss = rss_kb(os_pid)

    IO.puts("""
    | measure | value |
    | --- | --- |
    | sequential round trip, raw pipe echo (baseline) | #{fmt(echo_seq)} µs |
    | sequential round trip, Trellis.ping/1 | #{fmt(trellis_seq)} µs |
    | ratio (target <= 1.5x) | #{fmt(trellis_seq / echo_seq)}x |
    | #{@callers} callers x #{@per_caller} pings, median of #{@rounds} | #{round(median(throughput))} calls/s (target >= 80 000) |
    | port RSS idle (target <= 20 MB) | #{fmt(idle_rss / 1024)} MB |
    | port RSS after the runs | #{fmt(busy_rss / 1024)} MB |
    """)

    Port.close(echo)
    Trellis.shutdown(trellis)
  end

  defp sequential_us(fun) do
    for _ <- 1..1_000, do: fun.()
    {us, _} = :timer.tc(fn -> for _ <- 1..@sequential, do: fun.() end)
    us / @sequential
  end

  defp parallel_calls_per_s(trellis) do
    {us, _} =
      :timer.tc(fn ->
        1..@callers
        |> Enum.map(fn _ ->
          Task.async(fn -> for _ <- 1..@per_caller, do: :ok = Trellis.ping(trellis) end)
        end)
        |> Task.await_many(120_000)
      end)

    @callers * @per_caller / (us / 1_000_000)
  end

  defp rss_kb(os_pid) do
    "/proc/#{os_pid}/status"
    |> File.read!()
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      case String.split(line) do
        ["VmRSS:", kb, "kB"] -> String.to_integer(kb)
        _ -> nil
      end
    end)
  end

  defp medians(pairs) do
    {median(Enum.map(pairs, &elem(&1, 0))), median(Enum.map(pairs, &elem(&1, 1)))}
  end

  defp median(list), do: list |> Enum.sort() |> Enum.at(div(length(list), 2))
  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 2)
end

PortRuntimeBench.run()
