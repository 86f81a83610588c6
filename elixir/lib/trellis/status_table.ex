defmodule Trellis.StatusTable do
  @moduledoc false

  # Pure: the table `mix trellis.status` prints, and the problems that make it
  # exit non-zero, from each transform's `Trellis.Status` and its lag (ms,
  # from the transform reports, spec/protocol.md `transform_reports`). No I/O.

  alias Trellis.Status

  @headers ["TRANSFORM", "STATUS", "LAG", "BACKLOG", "HELD", "QUARANTINED", "DRAIN FAILURE"]

  @typedoc "One thing a deploy gate should stop on, named for the operator."
  @type problem :: {transform :: String.t(), reason :: String.t()}

  @typedoc "A transform's status and its lag in milliseconds."
  @type row :: {Status.t(), non_neg_integer}

  @doc """
  The problems in `statuses`: a transform paused, a column paused (in
  quarantine or by an operator), a drain failure open, capture disrupted,
  keys held, or lag over `max_lag_s` seconds.
  """
  @spec problems([row], number) :: [problem]
  def problems(rows, max_lag_s) do
    for {s, lag_ms} <- rows, reason <- reasons(s, lag_ms, max_lag_s), do: {s.name, reason}
  end

  defp reasons(s, lag_ms, max_lag_s) do
    [
      s.status == :paused && "paused (#{s.paused_kind})",
      s.capture_failure && "capture disrupted",
      paused_columns(s) != [] && "columns paused: #{Enum.join(paused_columns(s), ", ")}",
      s.drain_failure && "drain failing (#{s.drain_failure.attempts} attempts)",
      s.held_keys > 0 && "#{s.held_keys} keys held",
      lag_ms > max_lag_s * 1000 &&
        "lag #{lag(lag_ms)} over the limit of #{lag(round(max_lag_s * 1000))}"
    ]
    |> Enum.filter(& &1)
  end

  defp paused_columns(s), do: for(%{state: :paused, name: name} <- s.columns, do: name)

  @doc """
  The table as text, one line per transform under a header, each cell
  coloured by how it reads (`colors?`: with ANSI escapes).
  """
  @spec render([row], number, boolean) :: String.t()
  def render(rows, max_lag_s, colors?) do
    cells = Enum.map(rows, fn {s, lag_ms} -> cells(s, lag_ms, max_lag_s) end)
    plain = [Enum.map(@headers, &{&1, :bright}) | cells]

    widths =
      plain
      |> Enum.map(fn cells -> Enum.map(cells, fn {text, _} -> String.length(text) end) end)
      |> Enum.zip_with(&Enum.max/1)

    plain
    |> Enum.map(fn cells ->
      cells
      |> Enum.zip(widths)
      |> Enum.map_intersperse("  ", fn {{text, color}, width} ->
        paint(String.pad_trailing(text, width), color, colors?)
      end)
      |> IO.iodata_to_binary()
      |> String.trim_trailing()
    end)
    |> Enum.join("\n")
  end

  defp paint(text, :plain, _colors?), do: text
  defp paint(text, _color, false), do: text

  defp paint(text, color, true),
    do: IO.iodata_to_binary([IO.ANSI.format_fragment(color, true), text, IO.ANSI.reset()])

  defp cells(s, lag_ms, max_lag_s) do
    [
      {s.name, :plain},
      status_cell(s),
      {lag(lag_ms), if(lag_ms > max_lag_s * 1000, do: :red, else: :plain)},
      {backlog(s), :plain},
      {Integer.to_string(s.held_keys), if(s.held_keys > 0, do: :red, else: :plain)},
      quarantined_cell(s),
      drain_failure_cell(s.drain_failure)
    ]
  end

  defp status_cell(%Status{status: :paused} = s), do: {"paused (#{s.paused_kind})", :red}
  defp status_cell(%Status{status: :live}), do: {"live", :green}
  defp status_cell(%Status{status: status}), do: {Atom.to_string(status), :yellow}

  defp backlog(s) do
    "#{s.backlog_pages} pages / #{s.backlog_keys} keys" <>
      if s.capture_backlog > 0, do: " + #{s.capture_backlog} captured", else: ""
  end

  defp quarantined_cell(s) do
    case for(%{paused_kind: :quarantine, name: name} <- s.columns, do: name) do
      [] -> {"-", :plain}
      names -> {Enum.join(names, ","), :red}
    end
  end

  defp drain_failure_cell(nil), do: {"-", :plain}

  defp drain_failure_cell(failure) do
    state = if failure.sqlstate, do: " #{failure.sqlstate}", else: ""
    {"#{failure.unit}#{state} x#{failure.attempts}: #{short(failure.message)}", :red}
  end

  defp short(message) do
    line = message |> String.split("\n") |> hd()
    if String.length(line) > 60, do: String.slice(line, 0, 57) <> "...", else: line
  end

  @doc "Milliseconds as an operator reads a lag: `0s`, `1.2s`, `95s`, `12m05s`, `3h02m`."
  @spec lag(non_neg_integer) :: String.t()
  def lag(ms) when ms < 10_000, do: "#{Float.round(ms / 1000, 1) |> format_tenths()}s"
  def lag(ms) when ms < 600_000, do: "#{div(ms, 1000)}s"

  def lag(ms) when ms < 3_600_000 do
    s = div(ms, 1000)
    "#{div(s, 60)}m#{pad(rem(s, 60))}s"
  end

  def lag(ms) do
    m = div(ms, 60_000)
    "#{div(m, 60)}h#{pad(rem(m, 60))}m"
  end

  defp format_tenths(f) when f == trunc(f), do: Integer.to_string(trunc(f))
  defp format_tenths(f), do: Float.to_string(f)
  defp pad(n), do: n |> Integer.to_string() |> String.pad_leading(2, "0")
end
