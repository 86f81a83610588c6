defmodule Trellis.LogBridge do
  @moduledoc """
  Forwards the engine's log lines to Logger.

  The engine runs in each handle's `trellis-port` program, outside the VM.
  Its lines travel to the handle's owner process as `log` events and from
  there to this process, which the `:trellis_pg` application starts. Each line
  becomes a Logger event:

    * at the line's level (`:debug`, `:info`, `:warning`, `:error` or
      `:critical`);
    * with `domain: [:trellis]`, so handlers and filters can route or drop
      the engine's lines as a group;
    * with the engine component that logged it as `:target` metadata (for
      example `"trellis::drain"`, `"trellis::staging"`, `"trellis::port"`),
      and its instance as `:trellis_instance` metadata;
    * with the time the engine logged it as the event's time.

  Every line names its instance in its text as
  `trellis_instance=<database>/<catalog schema>`, so the lines of several
  handles in one VM stay apart (`trellis_instance=-` before the handle has
  connected). Lines never carry a password: URLs are shown with `***`. Row
  values appear only in `:debug` lines.

  ## Configuration

      # config/config.exs
      config :trellis_pg, log_level: :info

    * `:log_level` - the most verbose level forwarded: any Logger level, or
      `:none` (default: `Logger.level()`, read once when the application
      starts). Each port program is told the level, so lines nobody wants are
      never even formatted. `put_level/1` changes it at run time.
    * `:log_bridge` - `false` forwards nothing, and tells every port program
      to send nothing (default: `true`).

  ## Routing the engine's lines

  The lines are ordinary Logger events, so the usual tools apply. To write
  them to a file of their own, add a handler that keeps only the `:trellis`
  domain:

      # config/config.exs
      config :my_app, :logger, [
        {:handler, :trellis_file, :logger_std_h,
         %{
           config: %{file: ~c"log/trellis.log"},
           filter_default: :stop,
           filters: [trellis: {&:logger_filters.domain/2, {:log, :sub, [:trellis]}}]
         }}
      ]

      # in MyApp.Application.start/2
      Logger.add_handlers(:my_app)

  To keep them out of the console, filter the domain out of the console's
  handler (its id is `:default` on Elixir 1.15 and later, `Logger` before):

      :logger.add_handler_filter(:default, :no_trellis,
        {&:logger_filters.domain/2, {:stop, :sub, [:trellis]}})

  A filter on the whole of Logger (`:logger.add_primary_filter/2`) drops the
  lines for every handler at once.

  ## Overload

  Logging never slows the engine or the handle's calls. A port program sends
  at most 10 000 lines a second, keeps at most 1024 more waiting, and drops
  the rest; this process drops lines while more than 10 000 wait for Logger.
  Either way a warning says how many lines were dropped (the port's are also
  counted by its `trellis_log_lines_dropped_total` metric, see
  `Trellis.Metrics`). A debug-level storm therefore reaches Logger as a
  sample, followed by the count of what was left out.
  """

  use GenServer

  alias Trellis.{Call, Error, Protocol}

  @typedoc "The most verbose level forwarded, or `:none` for nothing."
  @type level :: Logger.level() | :all | :none

  # Lines waiting in this process's mailbox: past the high mark it drops
  # lines until the backlog is under the low mark.
  @high_water 10_000
  @low_water 5_000

  # How long put_level/1 waits for each port to take the new level.
  @put_level_budget_ms 1_000

  @logger_levels [:emergency, :alert, :critical, :error, :warning, :warn, :notice, :info, :debug]
  @test_line_levels [:debug, :info, :warning, :error, :critical]

  @line_levels %{
    "debug" => :debug,
    "info" => :info,
    "warning" => :warning,
    "error" => :error,
    "critical" => :critical
  }

  @level_key {__MODULE__, :level}

  ## Public API

  @doc """
  The most verbose level forwarded now, or `:none` when nothing is.

  ## Example

      :info = Trellis.LogBridge.level()
  """
  @spec level() :: level
  def level do
    case :persistent_term.get(@level_key, :unset) do
      :unset -> configured_level()
      level -> level
    end
  end

  @doc """
  Changes the most verbose level forwarded, for this VM's handles now and
  for those started later. `:none` forwards nothing.

  Every live handle's port program is told the new level; one that does not
  take it within 1 second keeps sending at its old level, and this process
  still drops what the new level leaves out.

  ## Example

      :ok = Trellis.LogBridge.put_level(:debug)
  """
  @spec put_level(level) :: :ok
  def put_level(level) do
    unless valid_level?(level) do
      raise ArgumentError,
            "Trellis.LogBridge.put_level/1 expects a Logger level or :none, got: #{inspect(level)}"
    end

    :persistent_term.put(@level_key, level)
    args = %{"level" => port_level(level)}
    handles = Trellis.Handles.list()

    handles
    |> Task.async_stream(
      fn handle -> Call.call(handle, "set_log_level", args, timeout_ms: @put_level_budget_ms) end,
      timeout: @put_level_budget_ms,
      on_timeout: :kill_task,
      max_concurrency: max(length(handles), 1)
    )
    |> Stream.run()

    :ok
  end

  @doc """
  Asks the handle's port program to log a line at `level`, as a check that
  the engine's lines reach your Logger handlers. The line's target is
  `"trellis::port"` and its text starts with `log_test_line:`.

  ## Options

    * `:message` - the line's text (default: `"test line"`)
    * `:count` - how many lines, 1 to 10 000 000 (default: `1`); with more
      than one, each text ends in `(n/count)`
    * `:background` - log from a thread of the port program's own, as the
      engine's workers do, and return at once (default: `false`: the lines
      are logged before the call returns)

  ## Example

      :ok = Trellis.LogBridge.log_test_line(trellis, :warning, message: "hello")
  """
  @spec log_test_line(Trellis.handle(), :debug | :info | :warning | :error | :critical, keyword) ::
          :ok | {:error, Error.t()}
  def log_test_line(handle, level, opts \\ []) do
    unless level in @test_line_levels do
      raise ArgumentError,
            "log_test_line/3 expects one of #{inspect(@test_line_levels)}, got: #{inspect(level)}"
    end

    opts = Keyword.validate!(opts, message: "test line", count: 1, background: false)
    message = Keyword.fetch!(opts, :message)
    count = Keyword.fetch!(opts, :count)
    background = Keyword.fetch!(opts, :background)

    unless is_binary(message), do: raise(ArgumentError, ":message must be a string")

    unless is_integer(count) and count in 1..10_000_000,
      do: raise(ArgumentError, ":count must be an integer in 1..10000000")

    unless is_boolean(background), do: raise(ArgumentError, ":background must be a boolean")

    args = %{
      "level" => Atom.to_string(level),
      "message" => message,
      "count" => count,
      "background" => background
    }

    with {:ok, nil} <- Call.call(handle, "log_test_line", args), do: :ok
  end

  ## For the owner process

  @doc false
  # The --log-level the owner starts a port program with.
  @spec port_level() :: String.t()
  def port_level, do: port_level(level())

  @doc false
  # Called by an owner with a log event's frame; never blocks the owner.
  @spec forward(binary, String.t() | nil) :: :ok
  def forward(body, instance) do
    case Process.whereis(__MODULE__) do
      nil -> :ok
      pid -> send(pid, {:log, instance, body})
    end

    :ok
  end

  ## The process

  @doc false
  def start_link(opts \\ []), do: GenServer.start_link(__MODULE__, opts, name: __MODULE__)

  @impl true
  def init(_opts) do
    :persistent_term.put(@level_key, validated_configured_level())
    {:ok, %{dropping: false, dropped: %{}}}
  end

  @impl true
  def handle_info({:log, instance, body}, state) do
    state = update_dropping(state)

    if state.dropping do
      {:noreply, count_drop(state, instance), 0}
    else
      state = report_drops(state)
      log_line(body, instance)
      {:noreply, state}
    end
  end

  # The backlog is gone: say how much of it was dropped.
  def handle_info(:timeout, state), do: {:noreply, report_drops(%{state | dropping: false})}

  def handle_info(_message, state), do: {:noreply, state}

  defp update_dropping(state) do
    {:message_queue_len, waiting} = Process.info(self(), :message_queue_len)

    cond do
      not state.dropping and waiting > @high_water -> %{state | dropping: true}
      state.dropping and waiting < @low_water -> %{state | dropping: false}
      true -> state
    end
  end

  defp count_drop(state, instance) do
    %{state | dropped: Map.update(state.dropped, instance || "-", 1, &(&1 + 1))}
  end

  defp report_drops(%{dropped: dropped} = state) when map_size(dropped) == 0, do: state

  defp report_drops(state) do
    for {instance, count} <- state.dropped do
      :logger.log(
        :warning,
        "trellis_instance=#{instance} Trellis.LogBridge dropped #{count} log line(s): " <>
          "Logger did not keep up",
        %{domain: [:trellis], target: inspect(__MODULE__), trellis_instance: instance}
      )
    end

    %{state | dropped: %{}}
  end

  defp log_line(body, owner_instance) do
    with {:ok, {:event, "log", payload}} <- Protocol.decode_message(body),
         %{"message" => message} when is_binary(message) <- payload do
      level = Map.get(@line_levels, payload["level"], :info)

      if forwarded?(level, level()) do
        :logger.log(level, message, metadata(payload, owner_instance))
      end
    end

    :ok
  end

  defp metadata(payload, owner_instance) do
    instance =
      case payload["instance"] do
        instance when is_binary(instance) and instance != "-" -> instance
        _ -> owner_instance
      end

    meta = %{domain: [:trellis], target: payload["target"], trellis_instance: instance}

    case payload["time_us"] do
      time when is_integer(time) -> Map.put(meta, :time, time)
      _ -> meta
    end
  end

  ## Levels

  defp forwarded?(_line, :none), do: false
  defp forwarded?(_line, :all), do: true
  defp forwarded?(line, :warn), do: forwarded?(line, :warning)
  defp forwarded?(line, threshold), do: Logger.compare_levels(line, threshold) != :lt

  # The port program knows debug, info, warning, error, critical and off.
  defp port_level(level) when level in [:all, :debug], do: "debug"
  defp port_level(:info), do: "info"
  defp port_level(level) when level in [:notice, :warning, :warn], do: "warning"
  defp port_level(:error), do: "error"
  defp port_level(level) when level in [:critical, :alert, :emergency], do: "critical"
  defp port_level(:none), do: "off"

  defp valid_level?(level), do: level in @logger_levels or level in [:all, :none]

  defp configured_level do
    if Application.get_env(:trellis_pg, :log_bridge, true) == false,
      do: :none,
      else: Application.get_env(:trellis_pg, :log_level) || Logger.level()
  end

  defp validated_configured_level do
    bridge = Application.get_env(:trellis_pg, :log_bridge, true)

    unless is_boolean(bridge) do
      raise ArgumentError,
            "config :trellis_pg, log_bridge: expects a boolean, got: #{inspect(bridge)}"
    end

    level = configured_level()

    unless valid_level?(level) do
      raise ArgumentError,
            "config :trellis_pg, log_level: expects a Logger level or :none, got: #{inspect(level)}"
    end

    level
  end
end
