defmodule Trellis.Test.Counters do
  @moduledoc false

  # Reading a handle's counters from the Prometheus rendering, for tests
  # that count what the workers did rather than time it.

  alias Trellis.Metrics

  @doc """
  The value of `family` for `handle`'s instance, with `labels` (rendered,
  e.g. `~s(,role="drain")`) after the instance label; 0 when not rendered.
  """
  @spec value(Trellis.t(), String.t(), String.t()) :: float() | integer()
  def value(handle, family, labels \\ "") do
    :ok = Metrics.flush(handle)
    prefix = ~s(#{family}{trellis_instance="#{handle.instance}"#{labels}} )

    Metrics.render_prometheus()
    |> String.split("\n")
    |> Enum.find_value(0, fn line ->
      if String.starts_with?(line, prefix),
        do: line |> String.replace_prefix(prefix, "") |> Float.parse() |> elem(0)
    end)
  end

  @doc """
  How many times `handle`'s drains handed writes to a target another
  transform reads on to that reader: with trigger capture the drain stages
  them itself (`trellis_stage_writes_staged_total`, capture rows); with
  logical capture they reach the reader through the slot and the drain
  wakes staging (`trellis_stage_wakes_total`). The suite's mode decides.
  """
  @spec handoffs(Trellis.t()) :: float() | integer()
  def handoffs(handle) do
    if Application.get_env(:trellis_pg, :capture) == :logical,
      do: value(handle, "trellis_stage_wakes_total"),
      else: value(handle, "trellis_stage_writes_staged_total")
  end
end
