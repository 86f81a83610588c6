# One node of the soak's fleet: a BEAM of its own (an OS process the
# conductor starts, SIGKILLs and starts again) with one supervised Trellis
# handle that runs staging (one node's worker stages, the others stand by)
# and drain threads. The conductor reaches the handle through Erlang
# distribution by its registered name, Soak.Trellis.
#
# The node ends itself when the conductor's node goes away (SOAK_CONDUCTOR),
# so a conductor that fails leaves no node behind.
#
# Environment: SOAK_URL (the database), SOAK_APP_NAME (the sessions'
# application_name, so the conductor can find and terminate them),
# SOAK_RECORD_PREFIX (each port program the node starts writes a capture,
# for `trellis-port replay`, to PREFIX-<n>.cap), TRELLIS_PORT_PATH.

defmodule Soak.Node do
  # The handle's supervisor gives up after a few restarts in a row (while
  # PostgreSQL is down every start fails at once); the keeper then waits a
  # second and starts a new one, so a database restart never ends the node.
  @restart_pause_ms 1_000

  def run do
    {:ok, _} = Application.ensure_all_started(:trellis_pg)
    Logger.configure(level: :info)
    conductor = String.to_atom(System.fetch_env!("SOAK_CONDUCTOR"))
    spawn(fn -> follow(conductor) end)
    keep(handle_options())
  end

  defp follow(conductor) do
    if Node.connect(conductor) != true, do: System.halt(2)
    Node.monitor(conductor, true)

    receive do
      {:nodedown, ^conductor} -> System.halt(2)
    end
  end

  defp handle_options do
    [
      name: Soak.Trellis,
      url: System.fetch_env!("SOAK_URL"),
      staging: true,
      drain_threads: 2,
      pool_size: 4,
      timeout_ms: 30_000,
      application_name: System.fetch_env!("SOAK_APP_NAME")
    ]
  end

  @doc "Starts the handle with a capture file of its own (a restart must not overwrite the last one)."
  def start_handle(options) do
    n = System.unique_integer([:positive, :monotonic])
    Trellis.start_link([record: "#{System.fetch_env!("SOAK_RECORD_PREFIX")}-#{n}.cap"] ++ options)
  end

  defp keep(options) do
    Process.flag(:trap_exit, true)

    child = %{Trellis.child_spec(options) | start: {__MODULE__, :start_handle, [options]}}

    case Supervisor.start_link([child],
           strategy: :one_for_one,
           max_restarts: 5,
           max_seconds: 5
         ) do
      {:ok, supervisor} ->
        receive do
          {:EXIT, ^supervisor, reason} ->
            IO.puts(
              :stderr,
              "soak node: handle supervisor ended (#{inspect(reason)}); restarting"
            )
        end

      {:error, reason} ->
        IO.puts(:stderr, "soak node: handle did not start (#{inspect(reason)}); retrying")
    end

    Process.sleep(@restart_pause_ms)
    keep(options)
  end
end

Soak.Node.run()
