defmodule Soak.Faults do
  @moduledoc false

  # The faults, one at a time on a schedule, each followed by a wait for the
  # next successful converge (its token taken after the fault): that wait is
  # the fault's recovery time. Kinds rotate so every one recurs.

  alias Soak.{Convergence, Fleet}
  alias Trellis.Test.SimplePG
  alias Trellis.TestCluster

  # PostgreSQL restarts first: a short run (CI) gets to them before a node
  # restart, which takes the longest, holds the schedule.
  @kinds [:pg_restart_fast, :kill_port, :pg_restart_immediate, :terminate_sessions, :kill_node]
  @recovery_deadline_ms 300_000

  def kinds, do: @kinds

  @doc """
  Injects faults every `every_ms` until `stop` is set; returns a list of
  `%{kind, at_ms, detail, recovered_ms}` (`recovered_ms` nil when the fleet
  did not converge within five minutes).
  """
  def run(ctx, every_ms, stop) do
    loop(ctx, every_ms, stop, @kinds, [])
  end

  defp loop(ctx, every_ms, stop, kinds, done) do
    Process.sleep(every_ms)

    if :atomics.get(stop, 1) == 1 do
      Enum.reverse(done)
    else
      [kind | rest] = kinds
      at = Convergence.now() - ctx.started
      {detail, restart} = split(inject(kind, ctx))

      recovered =
        case Convergence.await(@recovery_deadline_ms) do
          {:ok, _} -> Convergence.now() - ctx.started - at
          {:error, reason} -> log("#{kind}: no converge within 5 min: #{inspect(reason)}") && nil
        end

      detail = detail <> restarted(restart)
      log("fault #{kind} (#{detail}) at #{at} ms: recovered in #{inspect(recovered)} ms")
      entry = %{kind: kind, at_ms: at, detail: detail, recovered_ms: recovered}
      loop(ctx, every_ms, stop, if(rest == [], do: @kinds, else: rest), [entry | done])
    end
  end

  defp inject(:kill_port, ctx) do
    i = :rand.uniform(ctx.nodes)
    pid = Fleet.kill_port(i)
    "node #{i}, port pid #{pid}"
  end

  # The node's restart runs beside the wait for convergence (the other two
  # nodes carry on meanwhile, as in a rolling deploy); the next fault waits
  # for it.
  defp inject(:kill_node, ctx) do
    i = :rand.uniform(ctx.nodes)
    :ok = Fleet.kill_node(i)
    killed = Convergence.now()

    restart =
      Task.async(fn ->
        :ok = Fleet.start_node(i)
        Convergence.now() - killed
      end)

    {"node #{i}", restart}
  end

  defp inject(:pg_restart_fast, ctx) do
    :ok = TestCluster.restart!(ctx.cluster, ctx.url, :fast)
    "fast"
  end

  defp inject(:pg_restart_immediate, ctx) do
    :ok = TestCluster.restart!(ctx.cluster, ctx.url, :immediate)
    "immediate"
  end

  defp inject(:terminate_sessions, ctx) do
    pg = SimplePG.connect!(ctx.url)

    n =
      SimplePG.scalar!(pg, """
      SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
      WHERE application_name LIKE 'soak_trellis%'
      """)

    SimplePG.close(pg)
    "#{n} sessions"
  end

  defp split({detail, %Task{} = restart}), do: {detail, restart}
  defp split(detail), do: {detail, nil}

  defp restarted(nil), do: ""
  defp restarted(task), do: ", node back in #{Task.await(task, :infinity)} ms"

  def log(line) do
    IO.puts(
      "[soak #{div(System.monotonic_time(:millisecond) - :persistent_term.get(:soak_t0), 1000)}s] #{line}"
    )

    true
  end
end
