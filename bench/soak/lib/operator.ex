defmodule Soak.Operator do
  @moduledoc false

  # An operator's statements while the writers write, one every `every_ms`,
  # rotating: ALTER TRANSFORM ADD COLUMN then DROP COLUMN (a projection, a
  # grouping, and a transform another reads), PAUSE then RESUME,
  # request_backfill, ALTER TABLE ADD COLUMN on a source, and a rename in
  # the table the joins read. Each is sent through a live node and retried
  # (on another node) until it is done, so the run always ends with the
  # definitions it started with and nothing paused. A Trellis statement that
  # fails with "deadlock detected" (40P01) is retried too, but counts as a
  # failure of the run: an ALTER TRANSFORM once deadlocked with the drains
  # of its transform (bench/README.md "Fleet soak"), and none may.

  alias Soak.{Faults, Fleet}
  alias Trellis.Test.SimplePG

  @actions [
    {:add_drop_column, "soak_by_writer", "max(balance) AS top"},
    :pause_resume,
    :request_backfill,
    {:add_drop_column, "soak_rich", "balance * 2 AS doubled"},
    :alter_source,
    {:add_drop_column, "soak_by_region", "max(a.balance) AS top"},
    :rename_region
  ]
  @hold_ms 3_000
  @retry_deadline_ms 300_000

  @doc """
  Runs actions until `stop` is set; returns `%{done: [{kind, at_ms, ms it
  took}], failures: [text]}`.
  """
  def run(ctx, every_ms, stop) do
    done = loop(ctx, every_ms, stop, @actions, 0, [])
    %{done: done, failures: Enum.reverse(Process.get(:soak_deadlocks, []))}
  end

  defp loop(ctx, every_ms, stop, actions, n, done) do
    Process.sleep(every_ms)

    if :atomics.get(stop, 1) == 1 do
      Enum.reverse(done)
    else
      [action | rest] = actions
      at = System.monotonic_time(:millisecond)
      kind = act(action, ctx, n)
      took = System.monotonic_time(:millisecond) - at
      Faults.log("operator #{kind} took #{took} ms")
      entry = {kind, at - ctx.started, took}
      loop(ctx, every_ms, stop, if(rest == [], do: @actions, else: rest), n + 1, [entry | done])
    end
  end

  defp act({:add_drop_column, target, item}, _ctx, _n) do
    [_, column] = Regex.run(~r/AS (\w+)$/, item)
    statement!("ALTER TRANSFORM #{target} ADD COLUMN #{item}")
    Process.sleep(@hold_ms)
    statement!("ALTER TRANSFORM #{target} DROP COLUMN #{column}")
    "ALTER TRANSFORM #{target} ADD/DROP COLUMN"
  end

  defp act(:pause_resume, _ctx, _n) do
    statement!("PAUSE TRANSFORM soak_placed")
    Process.sleep(@hold_ms)
    statement!("RESUME TRANSFORM soak_placed")
    "PAUSE/RESUME soak_placed"
  end

  defp act(:request_backfill, _ctx, _n) do
    retry(fn -> Fleet.call(:request_backfill, ["soak_event_totals"]) end)
    "request_backfill soak_event_totals"
  end

  defp act(:alter_source, ctx, n) do
    table = Enum.random(["accounts", "events"])
    sql!(ctx, "ALTER TABLE #{table} ADD COLUMN extra_#{n} int DEFAULT #{n}")
    "ALTER TABLE #{table} ADD COLUMN"
  end

  defp act(:rename_region, ctx, n) do
    sql!(ctx, "UPDATE regions SET name = 'region ' || id || ' v#{n}' WHERE id = #{rem(n, 5)}")
    "UPDATE regions (joined side)"
  end

  # A statement that already took effect before its answer was lost comes
  # back as refused the second time (a column that exists, a transform not
  # paused): that counts as done.
  defp statement!(sql) do
    retry(fn ->
      case Fleet.call(:apply, [sql]) do
        {:ok, _} -> :ok
        {:error, %{code: code}} when code in [:already_exists, :not_found] -> :ok
        {:error, %{sqlstate: "40P01"}} = e -> deadlocked(sql, e)
        {:error, %{code: :validation, message: m}} = e -> if already_done?(m), do: :ok, else: e
        other -> other
      end
    end)
  end

  defp deadlocked(sql, error) do
    failure =
      "operator statement deadlocked (40P01): #{sql}: #{Exception.message(elem(error, 1))}"

    Faults.log(failure)
    Process.put(:soak_deadlocks, [failure | Process.get(:soak_deadlocks, [])])
    error
  end

  defp already_done?(message),
    do: message =~ ~r/already|not paused|is not paused|no column|does not have/i

  defp sql!(ctx, sql) do
    retry(fn ->
      try do
        pg = SimplePG.connect!(ctx.url)
        result = SimplePG.query(pg, sql)
        SimplePG.close(pg)
        result
      rescue
        e -> {:error, e}
      end
    end)
  end

  defp retry(fun, deadline \\ nil) do
    deadline = deadline || System.monotonic_time(:millisecond) + @retry_deadline_ms

    case fun.() do
      ok when ok == :ok or elem(ok, 0) == :ok ->
        :ok

      error ->
        if System.monotonic_time(:millisecond) > deadline,
          do: raise("operator statement failed for 5 minutes: #{inspect(error)}")

        Faults.log("operator retry: #{inspect(error) |> String.slice(0, 300)}")
        Process.sleep(500)
        retry(fun, deadline)
    end
  end
end
