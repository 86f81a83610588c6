defmodule Trellis.Telemetry do
  @moduledoc """
  `:telemetry` events for every call on a handle, the way Ecto and Postgrex
  report their queries.

  Each call is a span of three events:

    * `[:trellis, :call, :start]` - measurements `%{system_time: t,
      monotonic_time: t}`
    * `[:trellis, :call, :stop]` - measurements `%{duration: d,
      monotonic_time: t}`; the metadata adds `:result`, `:ok` or
      `{:error, %Trellis.Error{}}` (never the call's value, which can be
      large)
    * `[:trellis, :call, :exception]` - measurements `%{duration: d,
      monotonic_time: t}`; the metadata adds `:kind`, `:reason` and
      `:stacktrace` (a call that raises, which is a bug)

  Every event's metadata carries `:op`, the wire operation (`"define"`,
  `"status"`, `"apply"`, ...), and `:instance`, `"<database>/<schema>"` as in
  log lines and metrics, so handles in one VM stay apart. Durations are in
  native time units: `System.convert_time_unit(d, :native, :microsecond)`.
  A call refused before it reaches a handle (an unknown name) emits nothing.

      :telemetry.attach(
        "log-slow-trellis-calls",
        [:trellis, :call, :stop],
        fn _event, %{duration: d}, %{op: op, instance: instance}, _config ->
          ms = System.convert_time_unit(d, :native, :millisecond)
          if ms > 100, do: Logger.warning("trellis \#{op} on \#{instance} took \#{ms} ms")
        end,
        nil
      )

  ## Without `:telemetry`

  `trellis_pg` declares no dependency on `:telemetry`: a package that
  declares one, even as optional, makes every host's `mix deps.get` ask Hex
  for it. The events are emitted when the host has `:telemetry` (every Ecto
  or Phoenix app does) and has started it, as an application's dependencies
  are started before it. Whether it is there is checked once, at the first
  call, and remembered in `:persistent_term`; without it a call costs one
  `:persistent_term` read more and nothing else. A mix task that makes calls
  without starting `:telemetry` (`mix trellis.dump`) emits nothing.
  """

  @enabled_key {__MODULE__, :enabled}

  @doc false
  # Runs `fun` (a call on `handle`, returning {:ok, _} | {:error, _}) inside a
  # [:trellis, :call] span when :telemetry is present. Trellis.Call's one hook.
  @spec span(Trellis.t(), String.t(), (() -> result)) :: result when result: term
  def span(handle, op, fun) do
    if enabled?() do
      metadata = %{op: op, instance: handle.instance}

      # Called through apply/3: :telemetry is the host's, never a dependency
      # of this package (see the moduledoc), so no compile-time reference.
      Kernel.apply(:telemetry, :span, [
        [:trellis, :call],
        metadata,
        fn ->
          result = fun.()
          {result, Map.put(metadata, :result, outcome(result))}
        end
      ])
    else
      fun.()
    end
  end

  defp outcome({:error, _} = error), do: error
  defp outcome(_ok), do: :ok

  @doc """
  Whether the events are emitted: `true` when, at the first call in this VM,
  the `:telemetry` module could be loaded and its application was running.

  ## Example

      true = Trellis.Telemetry.enabled?()
  """
  @spec enabled?() :: boolean
  def enabled? do
    case :persistent_term.get(@enabled_key, nil) do
      nil ->
        enabled =
          Code.ensure_loaded?(:telemetry) and
            List.keymember?(Application.started_applications(), :telemetry, 0)

        :persistent_term.put(@enabled_key, enabled)
        enabled

      enabled ->
        enabled
    end
  end
end
