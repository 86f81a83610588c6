defmodule Trellis.Metrics.Exposition do
  @moduledoc false

  # Pure: the VM's registry (Trellis.Metrics.Store.families/0) as Prometheus
  # text exposition, format 0.0.4: families in name order, each with its
  # HELP and TYPE once, every series labelled trellis_instance first, series
  # in label order.

  @doc "The text for `families` (name => family, series keyed by `[instance | labels]`)."
  @spec render(%{String.t() => Trellis.Metrics.Store.family()}) :: String.t()
  def render(families) do
    families
    |> Enum.sort_by(fn {name, _family} -> name end)
    |> Enum.map(fn {name, family} -> render_family(name, family) end)
    |> IO.iodata_to_binary()
  end

  defp render_family(name, family) do
    header = [
      "# HELP ",
      name,
      " ",
      escape_help(family.help),
      "\n# TYPE ",
      name,
      " ",
      family.type,
      "\n"
    ]

    names = ["trellis_instance" | family.labels]
    # A histogram's `le` values are the same for every series: spelled once.
    les = Enum.map(family.buckets, &number/1)

    lines =
      family.series
      |> Enum.sort_by(fn {key, _value} -> key end)
      |> Enum.map(fn {key, value} ->
        pairs = Enum.zip(names, key) |> Enum.map_intersperse(",", &label_pair/1)
        render_series(name, family.type, les, pairs, value)
      end)

    [header | lines]
  end

  defp render_series(name, "histogram", les, pairs, value) do
    count = Map.get(value, :count, 0)
    counts = Map.get(value, :counts, List.duplicate(0, length(les)))

    buckets =
      Enum.zip_with(les, counts, fn le, n ->
        [name, "_bucket{", pairs, ",le=\"", le, "\"} ", number(n), "\n"]
      end)

    [
      buckets,
      [name, "_bucket{", pairs, ",le=\"+Inf\"} ", number(count), "\n"],
      [name, "_sum{", pairs, "} ", number(Map.get(value, :sum, 0)), "\n"],
      [name, "_count{", pairs, "} ", number(count), "\n"]
    ]
  end

  defp render_series(name, _type, _les, pairs, value),
    do: [name, "{", pairs, "} ", number(value), "\n"]

  defp label_pair({key, value}), do: [key, "=\"", escape_label(value), "\""]

  defp number(n) when is_integer(n), do: Integer.to_string(n)

  defp number(f) when is_float(f) do
    if f == Float.round(f) and abs(f) < 1.0e15,
      do: Integer.to_string(trunc(f)),
      else: Float.to_string(f)
  end

  # Most label values need no escaping: they are passed through as they are.
  defp escape_label(value) do
    case :binary.match(value, ["\\", "\"", "\n"]) do
      :nomatch ->
        value

      _found ->
        value
        |> String.replace("\\", "\\\\")
        |> String.replace("\"", "\\\"")
        |> String.replace("\n", "\\n")
    end
  end

  defp escape_help(text), do: text |> String.replace("\\", "\\\\") |> String.replace("\n", "\\n")
end
