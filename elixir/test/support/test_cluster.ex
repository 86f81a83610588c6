defmodule Trellis.TestCluster do
  @moduledoc false

  # The suite's one throwaway PostgreSQL cluster, from trellis-testkit. The
  # testkit prints the cluster's URL as its only stdout line and tears the
  # cluster down when its stdin closes, which happens when the process
  # holding the port (or the whole VM) exits.

  @build_command "cmake -S . -B build -G Ninja && ninja -C build trellis-testkit"
  @repo_build Path.expand("../../../build/test/testkit/trellis-testkit", __DIR__)
  @start_timeout_ms 120_000

  def build_command, do: @build_command

  @doc "The testkit binary: $TRELLIS_TESTKIT_PATH, else the repository's build."
  def testkit_path do
    path = System.get_env("TRELLIS_TESTKIT_PATH", @repo_build)

    if File.regular?(path),
      do: {:ok, path},
      else:
        {:error,
         "trellis-testkit not found at #{path}; build it from the repository root with " <>
           "`#{@build_command}`, or set TRELLIS_TESTKIT_PATH"}
  end

  @doc """
  Starts a cluster (with the testkit's command-line `args`, e.g. `["--tls"]`)
  and returns `{holder, url}`; the cluster lives until `holder` exits.
  Raises if it cannot start.
  """
  def start!(path, args \\ []) do
    parent = self()

    holder =
      spawn(fn ->
        port =
          Port.open({:spawn_executable, path}, [:binary, {:line, 4096}, :exit_status, args: args])

        receive do
          {^port, {:data, {:eol, url}}} -> send(parent, {:test_cluster, :ok, url})
          {^port, {:exit_status, status}} -> send(parent, {:test_cluster, :exited, status})
        after
          @start_timeout_ms -> send(parent, {:test_cluster, :timeout, nil})
        end

        # Hold the port (and with it the cluster) until the VM exits; tell
        # restart!/2 the testkit's OS pid.
        hold = fn hold ->
          receive do
            {^port, {:exit_status, _status}} ->
              :ok

            {:os_pid, from} ->
              send(from, {:test_cluster_os_pid, elem(Port.info(port, :os_pid), 1)})
              hold.(hold)
          end
        end

        hold.(hold)
      end)

    receive do
      {:test_cluster, :ok, url} ->
        {holder, url}

      {:test_cluster, :exited, status} ->
        raise "trellis-testkit (#{path}) exited with status #{status} before printing a URL"

      {:test_cluster, :timeout, nil} ->
        raise "trellis-testkit (#{path}) printed no URL within #{@start_timeout_ms} ms"
    end
  end

  @doc """
  Restarts the cluster of `holder` (from `start!/2`) as `pg_ctl restart -m
  fast` (or `-m immediate` with `:immediate`) would, and returns once `url`
  reaches the new server. Sessions open before the restart see the server
  close them.
  """
  def restart!(holder, url, mode \\ :fast) do
    signal = if mode == :immediate, do: "-USR2", else: "-USR1"
    send(holder, {:os_pid, self()})

    os_pid =
      receive do: ({:test_cluster_os_pid, pid} -> pid), after: (5_000 -> raise "no testkit")

    started = start_time(url)
    {_, 0} = System.cmd("kill", [signal, Integer.to_string(os_pid)])
    await_restart(url, started, System.monotonic_time(:millisecond) + @start_timeout_ms)
  end

  defp start_time(url) do
    conn = Trellis.Test.SimplePG.connect!(url)
    time = Trellis.Test.SimplePG.scalar!(conn, "SELECT pg_postmaster_start_time()")
    Trellis.Test.SimplePG.close(conn)
    time
  end

  defp await_restart(url, before, deadline) do
    now =
      try do
        start_time(url)
      rescue
        _ -> before
      end

    cond do
      now != before -> :ok
      System.monotonic_time(:millisecond) > deadline -> raise "the cluster did not restart"
      true -> Process.sleep(100) && await_restart(url, before, deadline)
    end
  end

  @doc "The cluster's URL (set by test_helper.exs)."
  def url, do: Application.fetch_env!(:trellis_pg, :test_url)

  @doc """
  The URL of a cluster running with `wal_level = logical` (capture by
  logical decoding needs it): the suite's own when the run made every
  cluster logical (TRELLIS_TESTKIT_LOGICAL=1), else a second testkit
  started with `--logical` at the first call and shared by every later one
  until the VM exits.
  """
  def logical_url do
    if System.get_env("TRELLIS_TESTKIT_LOGICAL") == "1" do
      url()
    else
      # One start for the whole suite, however many tests ask at once.
      :global.trans({__MODULE__, :logical}, fn ->
        case Application.fetch_env(:trellis_pg, :test_logical_url) do
          {:ok, logical} ->
            logical

          :error ->
            {:ok, path} = testkit_path()
            {_holder, logical} = start!(path, ["--logical"])
            Application.put_env(:trellis_pg, :test_logical_url, logical)
            logical
        end
      end)
    end
  end
end
