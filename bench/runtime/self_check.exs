# Full self-check of a 1M-row projection target (issue 14), against a plain
# EXCEPT query of the target against its definition, in the same run.
#
#   cd elixir && MIX_ENV=test TRELLIS_BENCH_URL=postgresql://... \
#     TRELLIS_PORT_PATH=../build/port/trellis-port mix run ../bench/runtime/self_check.exs
#
# Rounds alternate which leg goes first. The EXCEPT leg runs both
# directions (target EXCEPT ALL definition, definition EXCEPT ALL target),
# the least a comparison that finds missing and extra rows must do; the
# self-check leg is a job from self_check/3 to :done on one drain worker.
# During each self-check a writer updates random source rows one statement
# at a time: its slowest write during the check, against its slowest write
# with no check running, shows whether the check holds a lock that blocks
# writers.

defmodule SelfCheckBench do
  alias Trellis.Test.SimplePG

  @rows String.to_integer(System.get_env("SELF_CHECK_BENCH_ROWS", "1000000"))
  @rounds String.to_integer(System.get_env("SELF_CHECK_BENCH_ROUNDS", "3"))

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    DROP SCHEMA IF EXISTS self_check_bench CASCADE;
    DROP TABLE IF EXISTS bench_items, bench_view CASCADE;
    CREATE TABLE bench_items (id bigint PRIMARY KEY, price int, label text);
    INSERT INTO bench_items SELECT g, g % 1000, 'item ' || g FROM generate_series(1, #{@rows}) g;
    ANALYZE bench_items;
    """)

    migrator = Trellis.connect!(url: url, schema: "self_check_bench")
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)

    trellis =
      Trellis.connect!(url: url, schema: "self_check_bench", staging: true, drain_threads: 1)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM bench_view FROM bench_items SELECT price * 2 AS twice, label AS label"
      )

    await_live(trellis)
    SimplePG.query!(pg, "ANALYZE bench_view")

    quiet = writer_max_ms(url, fn -> Process.sleep(3_000) end)

    rounds =
      for round <- 1..@rounds do
        legs = [
          except: fn -> except(pg) end,
          one_way: fn -> one_way(pg) end,
          check: fn -> check(trellis, url) end
        ]

        legs = if rem(round, 2) == 0, do: Enum.reverse(legs), else: legs
        Map.new(legs, fn {name, leg} -> {name, leg.()} end)
      end

    median = fn key ->
      rounds |> Enum.map(&elem(&1[key], 0)) |> Enum.sort() |> Enum.at(div(@rounds, 2))
    end

    except_s = median.(:except)
    check_s = median.(:check)
    one_way_s = median.(:one_way)
    slowest = rounds |> Enum.map(&elem(&1[:check], 1)) |> Enum.max()

    IO.puts("""
    #{@rows} rows, #{@rounds} rounds (median), one drain worker.

    | leg | seconds | rows/s | vs EXCEPT |
    | --- | --- | --- | --- |
    | EXCEPT ALL both ways | #{f(except_s)} | #{round(@rows / except_s)} | 1.00x |
    | EXCEPT ALL one way (target EXCEPT ALL definition) | #{f(one_way_s)} | #{round(@rows / one_way_s)} | #{f(except_s / one_way_s)}x |
    | self-check, full | #{f(check_s)} | #{round(@rows / check_s)} | #{f(except_s / check_s)}x |

    Rounds (EXCEPT both ways s, one way s, check s): #{inspect(Enum.map(rounds, &{f(elem(&1.except, 0)), f(elem(&1.one_way, 0)), f(elem(&1.check, 0))}))}

    Slowest single-row writer UPDATE: #{f(quiet)} ms with no check running, #{f(slowest)} ms during the checks.
    """)

    :ok = Trellis.shutdown(trellis)
  end

  defp except(pg) do
    definition = "SELECT id, price * 2 AS twice, label FROM bench_items"

    {s, _} =
      timed(fn ->
        "0" =
          SimplePG.scalar!(pg, """
          SELECT count(*) FROM ((TABLE bench_view EXCEPT ALL #{definition})
                                UNION ALL (#{definition} EXCEPT ALL TABLE bench_view)) d
          """)
      end)

    {s, nil}
  end

  defp one_way(pg) do
    {s, _} =
      timed(fn ->
        "0" =
          SimplePG.scalar!(pg, """
          SELECT count(*) FROM (TABLE bench_view
                                EXCEPT ALL SELECT id, price * 2 AS twice, label FROM bench_items) d
          """)
      end)

    {s, nil}
  end

  defp check(trellis, url) do
    parent = self()

    max_ms =
      writer_max_ms(url, fn ->
        {s, job} =
          timed(fn ->
            {:ok, %{id: id}} = Trellis.self_check(trellis, "bench_view")
            await_done(trellis, id)
          end)

        %{report: %{outcome: :clean, rows_compared: @rows}} = job
        send(parent, {:check_s, s})
      end)

    receive do
      {:check_s, s} -> {s, max_ms}
    end
  end

  # Runs `body` while a writer updates random rows; the writer's slowest
  # statement in ms.
  defp writer_max_ms(url, body) do
    stop = :atomics.new(1, [])

    writer =
      Task.async(fn ->
        w = SimplePG.connect!(url)

        Stream.repeatedly(fn ->
          id = :rand.uniform(@rows)

          {s, _} =
            timed(fn ->
              SimplePG.query!(w, "UPDATE bench_items SET label = label WHERE id = #{id}")
            end)

          Process.sleep(5)
          s * 1000
        end)
        |> Enum.reduce_while(0.0, fn ms, acc ->
          if :atomics.get(stop, 1) == 1, do: {:halt, max(ms, acc)}, else: {:cont, max(ms, acc)}
        end)
      end)

    body.()
    :atomics.put(stop, 1, 1)
    Task.await(writer, 60_000)
  end

  defp await_done(trellis, id) do
    case Trellis.self_check_job!(trellis, id) do
      %{state: :done} = job ->
        job

      %{state: state} = job when state in [:failed, :cancelled] ->
        raise "check failed: #{inspect(job)}"

      _ ->
        Process.sleep(20) && await_done(trellis, id)
    end
  end

  defp await_live(trellis) do
    case Trellis.status!(trellis, "bench_view") do
      %{status: :live} -> :ok
      _ -> Process.sleep(200) && await_live(trellis)
    end
  end

  defp timed(fun) do
    t0 = System.monotonic_time(:microsecond)
    value = fun.()
    {(System.monotonic_time(:microsecond) - t0) / 1.0e6, value}
  end

  defp f(x), do: :erlang.float_to_binary(x / 1, decimals: 2)
end

SelfCheckBench.run()
