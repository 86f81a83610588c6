defmodule Trellis.LogBridgeTest do
  # The engine's log lines reaching Logger through the real port. Not async:
  # the forwarded level and the bridge's configuration are VM-wide.
  use ExUnit.Case, async: false

  import Trellis.Test.Handles, only: [connect!: 2]

  @moduletag :port
  @moduletag :capture_log

  alias Trellis.{LogBridge, TestCluster}

  # A :logger handler that sends the test process every event of the
  # :trellis domain, set up as Trellis.LogBridge's docs say.
  defmodule Forward do
    def log(event, %{config: %{pid: pid}}), do: send(pid, {:trellis_log, event})
  end

  setup do
    previous = LogBridge.level()
    on_exit(fn -> LogBridge.put_level(previous) end)
    :ok = LogBridge.put_level(:debug)
    %{url: TestCluster.url()}
  end

  defp attach(context, opts \\ []) do
    id = :"trellis_test_#{System.unique_integer([:positive])}"

    config = %{
      config: %{pid: self()},
      level: Keyword.get(opts, :level, :all),
      filter_default: :stop,
      filters: [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
    }

    :ok = :logger.add_handler(id, Forward, config)
    on_exit(fn -> :logger.remove_handler(id) end)
    context
  end

  # The next forwarded event whose text contains every one of `needles`.
  # Lines of other tests' handles may still be on their way through the
  # bridge, so tests name their own instance among the needles.
  defp receive_line(needles) do
    receive do
      {:trellis_log, %{msg: {:string, text}} = event} ->
        text = IO.chardata_to_string(text)

        if Enum.all?(List.wrap(needles), &String.contains?(text, &1)),
          do: %{event | msg: text},
          else: receive_line(needles)
    after
      10_000 -> flunk("no log line containing #{inspect(needles)} reached Logger")
    end
  end

  # The first line containing each needle, in whatever order they come.
  defp receive_lines(needles, found \\ %{}) do
    case needles -- Map.keys(found) do
      [] ->
        found

      missing ->
        receive do
          {:trellis_log, %{msg: {:string, text}} = event} ->
            text = IO.chardata_to_string(text)

            case Enum.find(missing, &String.contains?(text, &1)) do
              nil -> receive_lines(needles, found)
              needle -> receive_lines(needles, Map.put(found, needle, %{event | msg: text}))
            end
        after
          10_000 -> flunk("no log line containing #{inspect(missing)} reached Logger")
        end
    end
  end

  defp os_cmdline(handle) do
    {:os_pid, os_pid} = Port.info(handle.port, :os_pid)
    File.read!("/proc/#{os_pid}/cmdline") |> String.split(<<0>>, trim: true)
  end

  defp metric(handle, family, labels) do
    {:ok, %{"families" => families}} = Trellis.Call.call(handle, "metrics", %{})
    %{"series" => series} = Enum.find(families, &(&1["name"] == family))

    case Enum.find(series, &(&1["labels"] == labels)) do
      nil -> 0
      %{"value" => value} -> value
    end
  end

  describe "forwarding" do
    setup :attach

    test "a line of each level reaches Logger with domain, target and instance", %{url: url} do
      handle = connect!(url, schema: "log_levels")

      for level <- [:debug, :info, :warning, :error, :critical] do
        :ok = LogBridge.log_test_line(handle, level, message: "a #{level} line")
        event = receive_line("a #{level} line")

        assert event.level == level
        assert event.msg == "trellis_instance=#{handle.instance} log_test_line: a #{level} line"
        assert event.meta.domain == [:trellis]
        assert event.meta.target == "trellis::port"
        assert event.meta.trellis_instance == handle.instance
        assert String.ends_with?(handle.instance, "/log_levels")
      end
    end

    test "connecting logs at info, naming the instance and never the password", %{url: url} do
      uri = URI.parse(url)
      secret_url = URI.to_string(%{uri | userinfo: "#{uri.userinfo}:bridge-secret-pw"})
      handle = connect!(secret_url, schema: "log_connect")

      event = receive_line("trellis_instance=#{handle.instance} connected to")
      assert event.level == :info
      assert event.meta.target == "trellis::port"
      assert event.msg =~ ":***@"
      refute event.msg =~ "bridge-secret-pw"
    end

    test "lines from two handles name their own instances", %{url: url} do
      one = connect!(url, schema: "log_one")
      two = connect!(url, schema: "log_two")
      assert one.instance != two.instance

      :ok = LogBridge.log_test_line(one, :warning, message: "from one")
      :ok = LogBridge.log_test_line(two, :warning, message: "from two")

      # Two ports: their lines may reach Logger in either order.
      lines = receive_lines(["from one", "from two"])

      assert lines["from one"].msg ==
               "trellis_instance=#{one.instance} log_test_line: from one"

      assert lines["from two"].msg ==
               "trellis_instance=#{two.instance} log_test_line: from two"
    end

    test "put_level/1 chooses the most verbose level forwarded, for live handles too",
         %{url: url} do
      handle = connect!(url, schema: "log_put_level")
      :ok = LogBridge.put_level(:warning)
      assert LogBridge.level() == :warning
      info_lines = metric(handle, "trellis_log_lines_total", ["info"])

      # Lines keep their order, so the warning arriving first shows the info
      # line before it was not forwarded.
      :ok = LogBridge.log_test_line(handle, :info, message: "too verbose")
      :ok = LogBridge.log_test_line(handle, :warning, message: "loud enough")
      own = "trellis_instance=#{handle.instance} log_test_line:"
      assert receive_line(own).msg =~ "log_test_line: loud enough"

      # The port was told: it did not even send the info line.
      assert metric(handle, "trellis_log_lines_total", ["info"]) == info_lines

      :ok = LogBridge.put_level(:none)
      :ok = LogBridge.log_test_line(handle, :critical, message: "not forwarded")
      :ok = LogBridge.put_level(:error)
      :ok = LogBridge.log_test_line(handle, :error, message: "forwarded again")
      assert receive_line(own).msg =~ "log_test_line: forwarded again"
    end

    test "a handle started after put_level/1 starts at the new level", %{url: url} do
      :ok = LogBridge.put_level(:error)
      handle = connect!(url, schema: "log_new_level")
      assert ["--log-level", "error"] == Enum.take(tl(os_cmdline(handle)), 2)
    end
  end

  describe "overload" do
    setup context, do: attach(context, level: :warning)

    test "a flood of lines drops the excess with a warning, and every call is still answered",
         %{url: url} do
      handle = connect!(url, schema: "log_flood")

      # In the background, as the engine's workers log: calls run meanwhile.
      :ok = LogBridge.log_test_line(handle, :debug, count: 200_000, background: true)

      answers =
        1..4
        |> Enum.map(fn n ->
          Task.async(fn ->
            for i <- 1..100, do: Trellis.Call.call(handle, "echo", %{"value" => [n, i]})
          end)
        end)
        |> Enum.flat_map(&Task.await(&1, 30_000))

      assert length(answers) == 400
      assert Enum.all?(answers, &match?({:ok, [_, _]}, &1))

      # Logged on the port's io thread, the lines outrun its 1024-line queue
      # before anything is sent: the rest is dropped, and a warning says so.
      :ok = LogBridge.log_test_line(handle, :debug, count: 5_000, message: "burst")
      warning = receive_line(["trellis_instance=#{handle.instance} ", "dropped"])
      assert warning.level == :warning
      assert warning.meta.domain == [:trellis]
      assert warning.msg =~ ~r/dropped \d+ log line\(s\)/
      assert metric(handle, "trellis_log_lines_dropped_total", []) > 0
    end
  end

  # Holds the process that logs (the bridge) inside Logger at the line
  # "hold here", until that process is sent :release.
  defmodule Hold do
    def log(%{msg: {:string, text}}, %{config: %{pid: pid}}) do
      if IO.chardata_to_string(text) =~ "hold here" do
        send(pid, {:held, self()})

        receive do
          :release -> :ok
        end
      end
    end

    def log(_event, _config), do: :ok
  end

  describe "the bridge's own backlog" do
    setup context, do: attach(context, level: :warning)

    test "lines past it are dropped, and a warning says how many" do
      hold = :"trellis_hold_#{System.unique_integer([:positive])}"
      filters = [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
      config = %{config: %{pid: self()}, filter_default: :stop, filters: filters}
      :ok = :logger.add_handler(hold, Hold, config)
      on_exit(fn -> :logger.remove_handler(hold) end)

      line = fn text ->
        payload = %{
          "level" => "info",
          "target" => "trellis::port",
          "instance" => "db/backlog",
          "message" => "trellis_instance=db/backlog " <> text,
          "time_us" => System.os_time(:microsecond)
        }

        IO.iodata_to_binary(Trellis.Protocol.encode_message({:event, "log", payload}))
      end

      # Frames as an owner hands them over, while Logger holds the bridge.
      LogBridge.forward(line.("hold here"), "db/backlog")
      assert_receive {:held, bridge}, 10_000
      filler = line.("filler")
      for _ <- 1..15_000, do: LogBridge.forward(filler, "db/backlog")
      send(bridge, :release)

      warning = receive_line("trellis_instance=db/backlog Trellis.LogBridge dropped")
      assert warning.level == :warning
      assert warning.meta.trellis_instance == "db/backlog"
      [_, count] = Regex.run(~r/dropped (\d+) log line\(s\): Logger did not keep up/, warning.msg)
      # It drops from 10 000 waiting lines down to 5 000.
      assert String.to_integer(count) >= 5_000
    end
  end

  describe "log_bridge: false" do
    setup do
      Application.put_env(:trellis_pg, :log_bridge, false)
      restart_bridge()

      on_exit(fn ->
        Application.delete_env(:trellis_pg, :log_bridge)
        restart_bridge()
      end)
    end

    defp restart_bridge do
      :ok = Supervisor.terminate_child(Trellis.Supervisor, Trellis.LogBridge)
      {:ok, _pid} = Supervisor.restart_child(Trellis.Supervisor, Trellis.LogBridge)
    end

    test "forwards nothing and tells the port to send nothing", %{url: url} do
      assert LogBridge.level() == :none
      handle = connect!(url, schema: "log_off")
      assert ["--log-level", "off"] == Enum.take(tl(os_cmdline(handle)), 2)

      :ok = LogBridge.log_test_line(handle, :critical, message: "unsent")
      # A later call is answered after the port handled the line; it sent none.
      for level <- ["debug", "info", "warning", "error", "critical"] do
        assert metric(handle, "trellis_log_lines_total", [level]) == 0
      end
    end
  end

  describe "config :trellis_pg, log_level:" do
    # The level as a host's config sets it, read when the application
    # starts: the bridge is restarted as the application would start it.
    setup context do
      previous = Application.fetch_env(:trellis_pg, :log_level)
      Application.put_env(:trellis_pg, :log_level, :error)
      restart_bridge()

      on_exit(fn ->
        case previous do
          {:ok, level} -> Application.put_env(:trellis_pg, :log_level, level)
          :error -> Application.delete_env(:trellis_pg, :log_level)
        end

        restart_bridge()
      end)

      attach(context)
    end

    test "is the level the engine logs at after start", %{url: url} do
      assert LogBridge.level() == :error
      handle = connect!(url, schema: "log_configured")
      assert ["--log-level", "error"] == Enum.take(tl(os_cmdline(handle)), 2)

      for level <- [:debug, :info, :warning, :error, :critical] do
        :ok = LogBridge.log_test_line(handle, level, message: "configured #{level}")
      end

      # The port program itself logs at that level: it sent nothing below it.
      for level <- ["debug", "info", "warning"] do
        assert metric(handle, "trellis_log_lines_total", [level]) == 0, level
      end

      assert metric(handle, "trellis_log_lines_total", ["error"]) == 1
      assert metric(handle, "trellis_log_lines_total", ["critical"]) == 1

      # Lines keep their order: the error line is the first of the test's.
      own = "trellis_instance=#{handle.instance} log_test_line: configured"
      assert %{level: :error, msg: msg} = receive_line(own)
      assert msg =~ "configured error"
      assert %{level: :critical} = receive_line(own)
    end
  end

  describe "arguments" do
    test "log_test_line/3 and put_level/1 refuse what they cannot use", %{url: url} do
      handle = connect!(url, schema: "log_args")
      assert_raise ArgumentError, fn -> LogBridge.log_test_line(handle, :loud) end
      assert_raise ArgumentError, fn -> LogBridge.log_test_line(handle, :info, count: 0) end
      assert_raise ArgumentError, fn -> LogBridge.log_test_line(handle, :info, colour: :red) end
      assert_raise ArgumentError, fn -> LogBridge.put_level(:loud) end
    end
  end
end
