# Memory the port takes for a large statement, and gives back (issue 17
# item 7).
#
#   cd elixir && MIX_ENV=test TRELLIS_BENCH_URL=postgresql://... \
#     TRELLIS_PORT_PATH=../build/port/trellis-port mix run ../bench/runtime/statement_memory.exs
#
# Works in a scratch database: everything it makes lives in the schemas
# mem_bench (source and targets) and mem_bench_trellis (catalog), dropped
# before and after. Each define is a WHERE with a long `NOT IN (...)` list of
# small numbers (one token per two bytes: about the worst case for the
# lexer and for the server's query tree). The port's peak RSS is the
# kernel's VmHWM, reset through /proc/<pid>/clear_refs before each measure;
# every figure is a ratio against the statement size or against the port's
# idle RSS in the same run, since the machine is shared and noisy.
# MEM_BENCH_SIZES (bytes, comma-separated) overrides the single sizes and
# MEM_BENCH_BURST the number of statements at once (for profiling).

defmodule StatementMemoryBench do
  alias Trellis.Test.{OsMemory, SimplePG}

  @sizes (System.get_env("MEM_BENCH_SIZES") || "1000000,4000000")
         |> String.split(",")
         |> Enum.map(&String.to_integer/1)
  @burst String.to_integer(System.get_env("MEM_BENCH_BURST") || "10")
  @burst_size 1_000_000
  @settle_ms 1_000

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    reset_schemas(url)

    trellis =
      Trellis.connect!(
        url: url,
        schema: "mem_bench_trellis",
        pool_size: max(@burst, 1),
        timeout_ms: 600_000
      )

    :ok = Trellis.migrate(trellis)
    os_pid = trellis.port |> Port.info(:os_pid) |> elem(1)
    # One small call first, so the baseline includes an open session.
    {:ok, _} = Trellis.definitions(trellis)
    Process.sleep(@settle_ms)
    baseline = OsMemory.rss_kb(os_pid)

    singles =
      for size <- @sizes do
        statement = statement("mem_s#{size}", size)

        measure(os_pid, fn -> Trellis.define(trellis, statement) end)
        |> Map.merge(%{size: byte_size(statement)})
      end

    burst =
      measure(os_pid, fn ->
        1..@burst
        |> Task.async_stream(
          fn i -> Trellis.define(trellis, statement("mem_burst#{i}", @burst_size)) end,
          max_concurrency: @burst,
          timeout: :infinity
        )
        |> Enum.map(fn {:ok, result} -> result end)
      end)

    IO.puts("idle RSS after connect (baseline): #{mb(baseline)}\n")

    IO.puts(
      "| statement | result | peak - RSS before | / statement size | idle RSS after | / baseline |"
    )

    IO.puts("| --- | --- | --- | --- | --- | --- |")

    for row <- singles do
      IO.puts(
        "| #{mb(row.size / 1024)} | #{outcome(row.result)} | #{mb(row.peak - row.before)} | " <>
          "#{fmt((row.peak - row.before) * 1024 / row.size)}x | #{mb(row.idle)} | " <>
          "#{fmt(row.idle / baseline)}x |"
      )
    end

    burst_bytes = @burst * @burst_size
    burst_outcomes = burst.result |> Enum.map(&outcome/1) |> Enum.frequencies() |> inspect()

    IO.puts(
      "| #{@burst} x #{mb(@burst_size / 1024)} at once | #{burst_outcomes} | " <>
        "#{mb(burst.peak - burst.before)} | #{fmt((burst.peak - burst.before) * 1024 / burst_bytes)}x " <>
        "(of #{mb(burst_bytes / 1024)}) | #{mb(burst.idle)} | #{fmt(burst.idle / baseline)}x |"
    )

    Trellis.shutdown(trellis)
    reset_schemas(url)
    # A profiler wrapped around the port (heaptrack) needs time to write.
    Process.sleep(String.to_integer(System.get_env("MEM_BENCH_LINGER_MS") || "0"))
  end

  # Runs `fun` and reads the peak RSS during it and the RSS once the port
  # has been idle for @settle_ms.
  defp measure(os_pid, fun) do
    OsMemory.reset_peak(os_pid)
    before = OsMemory.rss_kb(os_pid)
    result = fun.()
    peak = OsMemory.peak_kb(os_pid)
    Process.sleep(@settle_ms)
    %{result: result, before: before, peak: peak, idle: OsMemory.rss_kb(os_pid)}
  end

  # TRANSFORM mem_bench.<name> FROM mem_bench.source SELECT v AS v
  # WHERE v NOT IN (0, 1, 2, ...), padded to `size` bytes.
  defp statement(name, size) do
    head = "TRANSFORM mem_bench.#{name} FROM mem_bench.source SELECT v AS v WHERE v NOT IN ("
    items = div(size - byte_size(head) - 1, 4)
    body = Enum.map_join(1..items, ", ", &Integer.to_string(rem(&1, 90) + 10))
    text = head <> body <> ")"
    text <> String.duplicate(" ", size - byte_size(text))
  end

  defp reset_schemas(url) do
    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    DROP SCHEMA IF EXISTS mem_bench, mem_bench_trellis CASCADE;
    CREATE SCHEMA mem_bench;
    CREATE TABLE mem_bench.source (id int PRIMARY KEY, v int);
    """)

    SimplePG.close(pg)
  end

  defp outcome({:ok, _}), do: "defined"
  defp outcome({:error, %Trellis.Error{code: code, message: message}}), do: "#{code}: #{message}"

  defp mb(kb), do: "#{fmt(kb / 1024)} MB"
  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 1)
end

StatementMemoryBench.run()
