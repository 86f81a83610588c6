# Drain throughput of a 100k-key backlog with one poisoned key, against the
# same backlog without it, in the same run (issue 13: >= 0.8x).
#
#   cd elixir && MIX_ENV=test TRELLIS_BENCH_URL=postgresql://... \
#     TRELLIS_PORT_PATH=../build/port/trellis-port mix run ../bench/runtime/poisoned_backlog.exs
#
# Each leg pauses the transform (PAUSE keeps its pages), updates every one
# of the 100k source rows in one statement, waits until the staging worker
# has turned the capture rows into ledger pages, then RESUMEs and times
# RESUME -> await_converged: the drain of the whole backlog. The poisoned
# leg sets qty = 0 on one row, whose `100 / qty` fails: that key is
# narrowed out of its page by bisection and charged to the column
# (quarantine) while every other key is written. Rounds alternate which leg
# goes first; the poisoned row is made good again (and its column resumed)
# after its leg.

defmodule PoisonedBacklogBench do
  alias Trellis.Test.SimplePG

  @rows String.to_integer(System.get_env("POISON_BENCH_ROWS", "100000"))
  @rounds String.to_integer(System.get_env("POISON_BENCH_ROUNDS", "3"))

  def run do
    url = System.fetch_env!("TRELLIS_BENCH_URL")
    pg = SimplePG.connect!(url)

    SimplePG.query!(pg, """
    DROP SCHEMA IF EXISTS poison_bench CASCADE;
    DROP TABLE IF EXISTS poison_items, poison_view CASCADE;
    CREATE TABLE poison_items (id bigint PRIMARY KEY, qty int NOT NULL);
    INSERT INTO poison_items SELECT g, 1 + g % 9 FROM generate_series(1, #{@rows}) g;
    ANALYZE poison_items;
    """)

    migrator = Trellis.connect!(url: url, schema: "poison_bench")
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, schema: "poison_bench", staging: true, drain_threads: 2)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM poison_view FROM poison_items SELECT qty AS qty, 100 / qty AS unit"
      )

    converge(trellis)

    rounds =
      for round <- 1..@rounds do
        legs = [
          clean: fn -> leg(trellis, pg, false) end,
          poisoned: fn -> leg(trellis, pg, true) end
        ]

        legs = if rem(round, 2) == 0, do: Enum.reverse(legs), else: legs
        Map.new(legs, fn {name, fun} -> {name, fun.()} end)
      end

    clean = median(Enum.map(rounds, & &1.clean))
    poisoned = median(Enum.map(rounds, & &1.poisoned))

    IO.puts("""
    backlog #{@rows} keys, #{@rounds} rounds (ms, each round: #{inspect(rounds)})
    clean    median #{clean} ms = #{round(@rows * 1000 / clean)} keys/s
    poisoned median #{poisoned} ms = #{round(@rows * 1000 / poisoned)} keys/s
    throughput with one poisoned key / without: #{Float.round(clean / poisoned, 2)}x (medians),
    #{Float.round(median(Enum.map(rounds, &(&1.clean / &1.poisoned))), 2)}x (median of the rounds' ratios)
    """)

    :ok = Trellis.shutdown(trellis)
  end

  defp leg(trellis, pg, poisoned) do
    {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM poison_view")
    bad = :rand.uniform(@rows)

    qty =
      if poisoned,
        do: "CASE WHEN id = #{bad} THEN 0 ELSE 1 + (qty + 1) % 9 END",
        else: "1 + (qty + 1) % 9"

    SimplePG.query!(pg, "UPDATE poison_items SET qty = #{qty}")
    await_staged(pg)
    started = System.monotonic_time(:millisecond)
    {:ok, {:resumed, _}} = Trellis.apply(trellis, "RESUME TRANSFORM poison_view")
    converge(trellis)
    elapsed = System.monotonic_time(:millisecond) - started

    if poisoned do
      {:ok, [%{rows: 1}]} = Trellis.quarantine_status(trellis, "poison_view.unit")
      SimplePG.query!(pg, "UPDATE poison_items SET qty = 1 WHERE id = #{bad}")
      {:ok, _} = Trellis.apply(trellis, "RESUME TRANSFORM poison_view.unit")
      converge(trellis)
    end

    elapsed
  end

  # Every capture row is in a ledger page.
  defp await_staged(pg) do
    if SimplePG.scalar!(pg, "SELECT count(*) FROM poison_bench.capture") == "0" do
      :ok
    else
      Process.sleep(50)
      await_staged(pg)
    end
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 600_000)
  end

  defp median(values), do: values |> Enum.sort() |> Enum.at(div(length(values), 2))
end

PoisonedBacklogBench.run()
