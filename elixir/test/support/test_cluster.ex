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

        # Hold the port (and with it the cluster) until the VM exits.
        receive do
          {^port, {:exit_status, _status}} -> :ok
        end
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

  @doc "The cluster's URL (set by test_helper.exs)."
  def url, do: Application.fetch_env!(:trellis_pg, :test_url)
end
