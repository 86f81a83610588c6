defmodule Trellis.HandleTest do
  # Handles through the real trellis-port, against the suite's test cluster.
  use ExUnit.Case, async: true

  import Trellis.Test.Handles, only: [connect!: 1, connect!: 2]

  @moduletag :port

  alias Trellis.{Call, Error, TestCluster}

  setup do
    %{url: TestCluster.url()}
  end

  # The URL with a password in it. The test cluster trusts local
  # connections, so the password is never checked, only carried.
  defp with_password(url, password) do
    uri = URI.parse(url)
    URI.to_string(%{uri | userinfo: "#{uri.userinfo}:#{password}"})
  end

  defp echo(handle, value), do: Call.call(handle, "echo", %{"value" => value})

  defp os_pid(handle), do: elem(Port.info(handle.port, :os_pid), 1)

  defp os_process_alive?(os_pid), do: File.exists?("/proc/#{os_pid}")

  # Polls `fun` every 20 ms until it is truthy or the time is up.
  defp eventually(fun, timeout_ms \\ 5_000) do
    poll(fun, System.monotonic_time(:millisecond) + timeout_ms)
  end

  defp poll(fun, deadline) do
    cond do
      fun.() -> true
      System.monotonic_time(:millisecond) >= deadline -> false
      true -> Process.sleep(20) && poll(fun, deadline)
    end
  end

  # Callers that keep a call in flight on the handle until one fails; each
  # reports its first error and when it came.
  defp start_busy_callers(handle, count) do
    parent = self()

    for n <- 1..count do
      spawn_link(fn ->
        loop = fn loop, i ->
          case echo(handle, [n, i]) do
            {:ok, [^n, ^i]} ->
              if i == 1, do: send(parent, {:busy, n})
              loop.(loop, i + 1)

            {:error, error} ->
              send(parent, {:failed, n, error, System.monotonic_time(:millisecond)})
          end
        end

        loop.(loop, 1)
      end)
    end

    for n <- 1..count, do: assert_receive({:busy, ^n}, 5_000)
    :ok
  end

  defp collect_failures(count, timeout_ms) do
    for n <- 1..count do
      assert_receive {:failed, ^n, error, at}, timeout_ms
      {error, at}
    end
  end

  describe "connect/1" do
    test "connects and reports what it is connected to", %{url: url} do
      handle = connect!(url)
      assert {:ok, info} = Trellis.server_info(handle)
      assert info.instance == "postgres/trellis"
      assert info.server_version =~ ~r/^\d+/
      assert is_binary(info.engine_version)
      assert info.protocol_version == {1, 0}
      assert handle.instance == "postgres/trellis"
    end

    test "the schema names the instance", %{url: url} do
      handle = connect!(url, schema: "other_catalog")
      assert %{instance: "postgres/other_catalog"} = Trellis.server_info!(handle)
    end

    test "config/1 gives the options back with the password redacted", %{url: url} do
      handle = connect!(with_password(url, "hunter2"), pool_size: 3, application_name: "cfg-test")
      assert {:ok, config} = Trellis.config(handle)

      assert %{
               schema: "trellis",
               pool_size: 3,
               staging: false,
               drain_threads: 0,
               application_name: "cfg-test",
               timeout_ms: 10_000
             } = config

      assert config.url =~ "127.0.0.1"
      refute config.url =~ "hunter2"
    end

    test "an unreachable database is a connection error without the password", %{url: url} do
      # Port 1 on the same host: nothing listens there.
      bad = url |> with_password("hunter2") |> URI.parse() |> Map.put(:port, 1) |> URI.to_string()

      assert {:error, %Error{code: :connection, message: message}} =
               Trellis.connect(url: bad, timeout_ms: 10_000)

      refute message =~ "hunter2"
      assert_raise Error, ~r/^\(connection\)/, fn -> Trellis.connect!(url: bad) end
    end

    test "a malformed URL is a validation error", %{url: url} do
      assert {:error, %Error{code: :validation, message: message}} =
               Trellis.connect(url: "not a url at all")

      assert message =~ "invalid database URL"

      # One libpq refuses only as it connects still keeps the password out.
      bad = url |> with_password("hunter2") |> String.replace(~r/:\d+\//, ":notaport/")
      assert {:error, %Error{code: :connection, message: message}} = Trellis.connect(url: bad)
      assert message =~ "notaport"
      refute message =~ "hunter2"
    end

    test "record: writes a capture file", %{url: url} do
      path = Path.join(System.tmp_dir!(), "trellis-#{System.unique_integer([:positive])}.capture")
      on_exit(fn -> File.rm(path) end)
      {:ok, handle} = Trellis.connect(url: url, record: path)
      assert :ok = Trellis.ping(handle)
      assert :ok = Trellis.shutdown(handle)
      assert File.stat!(path).size > 0
    end
  end

  describe "calls" do
    test "ping answers without database work", %{url: url} do
      handle = connect!(url)
      assert Trellis.ping(handle) == :ok
      assert Trellis.ping!(handle) == :ok
    end

    test "an unknown op is a validation error naming it", %{url: url} do
      handle = connect!(url)

      assert {:error, %Error{code: :validation, message: message}} =
               Call.call(handle, "no_such_op", %{})

      assert message =~ "no_such_op"
    end

    test "16 processes x 1000 calls on one handle each get their own replies", %{url: url} do
      handle = connect!(url)

      results =
        1..16
        |> Task.async_stream(
          fn n ->
            Enum.count(1..1000, fn i ->
              value = %{"caller" => n, "i" => i, "blob" => {:bin, <<n, i::32>>}}
              echo(handle, value) == {:ok, value}
            end)
          end,
          max_concurrency: 16,
          timeout: 60_000
        )
        |> Enum.map(fn {:ok, matched} -> matched end)

      assert results == List.duplicate(1000, 16)
      assert :ets.info(handle.table, :size) == 0
    end

    test "a caller killed mid-call leaves the handle working", %{url: url} do
      handle = connect!(url)

      callers =
        for n <- 1..8 do
          spawn(fn -> Enum.each(Stream.iterate(1, &(&1 + 1)), &echo(handle, [n, &1])) end)
        end

      Process.sleep(50)
      Enum.each(callers, &Process.exit(&1, :kill))

      assert echo(handle, "still here") == {:ok, "still here"}
      assert Process.alive?(handle.owner)
      # Whatever the killed callers left behind is swept within two passes.
      assert eventually(fn -> :ets.info(handle.table, :size) == 0 end)
    end

    test "a call with no reply returns :timeout at its budget, counted from submission, and is cancelled",
         %{url: url} do
      handle = connect!(url)
      os_pid = os_pid(handle)
      # A stopped port program reads nothing and answers nothing.
      {_, 0} = System.cmd("kill", ["-STOP", to_string(os_pid)])

      try do
        started = System.monotonic_time(:millisecond)

        assert {:error, %Error{code: :timeout, message: message}} =
                 Call.call(handle, "echo", %{"value" => 1}, timeout_ms: 100)

        waited = System.monotonic_time(:millisecond) - started
        assert message =~ "100 ms"
        # No grace past the budget (it used to be 2 s): only the scheduler's
        # wake-up, which a loaded machine can stretch.
        assert waited >= 100 and waited < 100 + 500
        assert :ets.info(handle.table, :size) == 0
      after
        System.cmd("kill", ["-CONT", to_string(os_pid)])
      end

      # The late reply is dropped, never delivered to the caller's mailbox.
      assert echo(handle, "after") == {:ok, "after"}
      Process.sleep(100)
      refute_received _
    end

    test "a caller killed while its call waits is swept and its call cancelled", %{url: url} do
      handle = connect!(url)
      os_pid = os_pid(handle)
      {_, 0} = System.cmd("kill", ["-STOP", to_string(os_pid)])

      try do
        caller = spawn(fn -> echo(handle, "never answered") end)
        assert eventually(fn -> :ets.info(handle.table, :size) == 1 end)
        Process.exit(caller, :kill)

        # Gone within two sweeps, while the port program still has not answered.
        Process.sleep(Trellis.Owner.sweep_interval_ms() * 2 + 50)
        assert :ets.info(handle.table, :size) == 0
      after
        System.cmd("kill", ["-CONT", to_string(os_pid)])
      end

      assert Trellis.ping(handle) == :ok
    end

    test "a request larger than the frame limit is refused before it is written", %{url: url} do
      handle = connect!(url)
      huge = :binary.copy(<<0>>, 16 * 1024 * 1024)

      assert {:error, %Error{code: :validation, message: message}} = echo(handle, {:bin, huge})
      assert message =~ "16 MiB"
      assert Trellis.ping(handle) == :ok
    end
  end

  describe "the port program dying" do
    @tag :capture_log
    test "waiting callers get a connection error promptly, and the supervisor restarts the handle",
         %{url: url} do
      name = :"trellis_kill_#{System.unique_integer([:positive])}"
      start_supervised!({Trellis, name: name, url: url, timeout_ms: 30_000})
      {:ok, handle} = Trellis.resolve(name)
      os_pid = os_pid(handle)

      :ok = start_busy_callers(handle, 8)
      killed_at = System.monotonic_time(:millisecond)
      {_, 0} = System.cmd("kill", ["-KILL", to_string(os_pid)])

      for {error, at} <- collect_failures(8, 5_000) do
        assert %Error{code: :connection, message: message} = error
        assert message =~ "the port program exited"
        assert at - killed_at < 5_000
      end

      refute os_process_alive?(os_pid)

      # The supervisor restarts the owner, which registers a new handle.
      assert eventually(fn -> Trellis.ping(name) == :ok end, 10_000)
      {:ok, restarted} = Trellis.resolve(name)
      assert restarted.owner != handle.owner
      assert os_pid(restarted) != os_pid
    end
  end

  describe "shutdown/1" do
    test "cancels the calls in flight with a validation error and ends the port", %{url: url} do
      {:ok, handle} = Trellis.connect(url: url)
      os_pid = os_pid(handle)
      :ok = start_busy_callers(handle, 8)

      assert Trellis.shutdown(handle) == :ok

      for {error, _at} <- collect_failures(8, 5_000) do
        assert %Error{code: :validation, message: message} = error
        assert message =~ "shut down"
      end

      refute Process.alive?(handle.owner)
      assert eventually(fn -> not os_process_alive?(os_pid) end)

      assert {:error, %Error{code: :validation, message: message}} = Trellis.ping(handle)
      assert message =~ "shut down"
      assert Trellis.shutdown(handle) == :ok
      assert_raise Error, ~r/^\(validation\)/, fn -> Trellis.ping!(handle) end
    end

    test "the handle shuts down when the process that connected it exits", %{url: url} do
      parent = self()

      pid =
        spawn(fn ->
          {:ok, handle} = Trellis.connect(url: url)
          send(parent, {:handle, handle})
          receive do: (:exit -> :ok)
        end)

      assert_receive {:handle, handle}, 10_000
      os_pid = os_pid(handle)
      owner_ref = Process.monitor(handle.owner)
      send(pid, :exit)

      assert_receive {:DOWN, ^owner_ref, :process, _, _}, 10_000
      assert eventually(fn -> not os_process_alive?(os_pid) end)
      assert {:error, %Error{code: :validation}} = Trellis.ping(handle)
    end

    test "a supervisor stopping a named handle shuts it down", %{url: url} do
      name = :"trellis_stop_#{System.unique_integer([:positive])}"
      start_supervised!({Trellis, name: name, url: url})
      {:ok, handle} = Trellis.resolve(name)
      os_pid = os_pid(handle)

      assert {:error, %Error{code: :validation}} = Trellis.shutdown(name)
      assert Trellis.ping(name) == :ok

      :ok = stop_supervised(name)

      assert eventually(fn -> not os_process_alive?(os_pid) end)
      assert {:error, %Error{code: :validation, message: message}} = Trellis.ping(name)
      assert message =~ "no Trellis handle is registered"
    end
  end
end
