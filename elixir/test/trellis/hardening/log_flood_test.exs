defmodule Trellis.Hardening.LogFloodTest do
  # Issue 17 item 11: workers that cannot connect log one line when that
  # starts (and a reminder at a slow interval), not one per retry, and one
  # line when they connect again. Not async: the forwarded log level is
  # VM-wide.
  use ExUnit.Case, async: false

  alias Trellis.{LogBridge, TestCluster}
  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 120_000

  defmodule Forward do
    @moduledoc false
    def log(event, %{config: %{pid: pid}}), do: send(pid, {:trellis_log, event})
  end

  setup do
    previous = LogBridge.level()
    on_exit(fn -> LogBridge.put_level(previous) end)
    :ok = LogBridge.put_level(:info)

    id = :"log_flood_#{System.unique_integer([:positive])}"

    :ok =
      :logger.add_handler(id, Forward, %{
        config: %{pid: self()},
        level: :all,
        filter_default: :stop,
        filters: [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
      })

    on_exit(fn -> :logger.remove_handler(id) end)
    :ok
  end

  # Every forwarded line of `instance` containing `needle` within `ms`.
  defp collect(instance, needle, ms) do
    deadline = System.monotonic_time(:millisecond) + ms
    collect(instance, needle, deadline, [])
  end

  defp collect(instance, needle, deadline, acc) do
    wait = max(deadline - System.monotonic_time(:millisecond), 0)

    receive do
      {:trellis_log, %{msg: {:string, text}}} ->
        text = IO.chardata_to_string(text)
        mine = String.contains?(text, "trellis_instance=#{instance} ")
        acc = if mine and String.contains?(text, needle), do: [text | acc], else: acc
        collect(instance, needle, deadline, acc)
    after
      wait -> Enum.reverse(acc)
    end
  end

  defp await(fun, tries \\ 100) do
    cond do
      fun.() -> :ok
      tries == 0 -> flunk("timed out")
      true -> Process.sleep(100) && await(fun, tries - 1)
    end
  end

  test "workers that cannot connect log once, not at every retry, and once when they recover" do
    url = Database.create!("log_flood")
    database = url |> URI.parse() |> Map.fetch!(:path) |> String.trim_leading("/")
    :ok = Trellis.migrate(Trellis.Test.Handles.connect!(url))
    workers = Trellis.Test.Handles.connect!(url, staging: true, drain_threads: 2)
    await(fn -> Trellis.has_live_drain_workers(workers) == {:ok, true} end)

    admin = SimplePG.connect!(TestCluster.url())
    on_exit(fn -> SimplePG.close(admin) end)
    SimplePG.query!(admin, "ALTER DATABASE #{database} ALLOW_CONNECTIONS false")

    SimplePG.query!(admin, """
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = '#{database}' AND application_name LIKE 'trellis %'
    """)

    # Retrying with backoff from 100 ms to 5 s, three workers used to log
    # about six lines each in these 8 seconds.
    lines = collect(workers.instance, "worker cannot connect", 8_000)
    assert length(lines) in 1..3, Enum.join(lines, "\n")
    assert Enum.all?(lines, &(&1 =~ "a reminder follows every 60 s"))

    SimplePG.query!(admin, "ALTER DATABASE #{database} ALLOW_CONNECTIONS true")
    recovered = collect(workers.instance, "worker connected again after", 12_000)
    assert length(recovered) == length(lines), Enum.join(recovered, "\n")
  end
end
