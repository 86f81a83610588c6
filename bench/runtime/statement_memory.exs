# Memory the port takes for a large statement, and gives back (issue 17
# item 7).
#
#   MIX_ENV=test mix run ../bench/runtime/statement_memory.exs   (from elixir/)
#
# Needs TRELLIS_PORT_PATH (trellis-port) and a database URL in
# TRELLIS_BENCH_URL (a scratch database: the script creates and drops tables
# named mem_*). Peak RSS is the kernel's VmHWM, reset before each measure
# through /proc/<pid>/clear_refs; each figure is a ratio against the port's
# own idle RSS in the same run and against the statement size, since the
# machine is shared and noisy.

defmodule StatementMemoryBench do
  @sizes [64 * 1024, 256 * 1024, 1_000_000]
  @burst 10
  @burst_size 1_000_000

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    trellis = Trellis.connect!(url: url, pool_size: @burst, timeout_ms: 300_000)
    :ok = Trellis.migrate(trellis)
    os_pid = trellis.port |> Port.info(:os_pid) |> elem(1)
    setup_source(url)
    # One small call first, so the idle figure includes an open session.
    {:ok, _} = Trellis.definitions(trellis)
    idle = status_kb(os_pid, "VmRSS")

    rows =
      for size <- @sizes do
        statement = statement("mem_s#{size}", size)
        reset_peak(os_pid)
        before = status_kb(os_pid, "VmRSS")
        {:ok, _} = Trellis.define(trellis, statement)
        peak = status_kb(os_pid, "VmHWM")
        Process.sleep(300)
        after_kb = status_kb(os_pid, "VmRSS")
        {size, before, peak, after_kb}
      end

    over_limit = Trellis.define(trellis, statement("mem_big", 4_000_000))

    reset_peak(os_pid)
    burst_before = status_kb(os_pid, "VmRSS")

    1..@burst
    |> Task.async_stream(
      fn i -> {:ok, _} = Trellis.define(trellis, statement("mem_burst#{i}", @burst_size)) end,
      max_concurrency: @burst,
      timeout: :infinity
    )
    |> Stream.run()

    burst_peak = status_kb(os_pid, "VmHWM")
    Process.sleep(1_000)
    burst_idle = status_kb(os_pid, "VmRSS")

    IO.puts(
      "| statement | RSS before | peak | peak - before | (peak - before) / size | RSS 300 ms after |"
    )

    IO.puts("| --- | --- | --- | --- | --- | --- |")

    for {size, before, peak, after_kb} <- rows do
      IO.puts(
        "| #{mb(size / 1024)} | #{mb(before)} | #{mb(peak)} | #{mb(peak - before)} | " <>
          "#{fmt((peak - before) * 1024 / size)}x | #{mb(after_kb)} |"
      )
    end

    IO.puts("""

    | measure | value |
    | --- | --- |
    | idle RSS after connect | #{mb(idle)} |
    | 4 MB statement | #{inspect_result(over_limit)} |
    | #{@burst} concurrent #{mb(@burst_size / 1024)} statements: RSS before | #{mb(burst_before)} |
    | the same: peak | #{mb(burst_peak)} (#{fmt((burst_peak - burst_before) * 1024 / (@burst * @burst_size))}x their total size) |
    | the same: idle RSS 1 s after | #{mb(burst_idle)} |
    """)

    Trellis.shutdown(trellis)
    drop_tables(url)
  end

  # TRANSFORM <name> FROM mem_source SELECT v AS v WHERE v NOT IN (0, 1, 2, ...)
  # padded to `size` bytes: about one token per three bytes.
  defp statement(name, size) do
    head = "TRANSFORM #{name} FROM mem_source SELECT v AS v WHERE v NOT IN ("

    body =
      Stream.iterate(0, &(&1 + 1))
      |> Stream.map(&Integer.to_string(rem(&1, 100)))
      |> Enum.reduce_while({[], byte_size(head) + 1}, fn n, {acc, len} ->
        if len + byte_size(n) + 2 > size,
          do: {:halt, {acc, len}},
          else: {:cont, {[n | acc], len + byte_size(n) + 2}}
      end)
      |> elem(0)
      |> Enum.reverse()
      |> Enum.join(", ")

    head <> body <> ")"
  end

  defp setup_source(url) do
    pg = Trellis.Test.SimplePG.connect!(url)
    Trellis.Test.SimplePG.query!(pg, "DROP TABLE IF EXISTS mem_source CASCADE")
    Trellis.Test.SimplePG.query!(pg, "CREATE TABLE mem_source (id int PRIMARY KEY, v int)")
    Trellis.Test.SimplePG.close(pg)
  end

  defp drop_tables(_url), do: :ok

  defp reset_peak(os_pid), do: File.write!("/proc/#{os_pid}/clear_refs", "5")

  defp status_kb(os_pid, field) do
    prefix = field <> ":"

    "/proc/#{os_pid}/status"
    |> File.read!()
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      case String.split(line) do
        [^prefix, kb, "kB"] -> String.to_integer(kb)
        _ -> nil
      end
    end)
  end

  defp inspect_result({:error, %Trellis.Error{code: code, message: message}}),
    do: "refused: :#{code}, \"#{message}\""

  defp inspect_result(other), do: "accepted (#{inspect(other, limit: 3)})"

  defp mb(kb), do: "#{fmt(kb / 1024)} MB"
  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 1)
end

StatementMemoryBench.run()
