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

    lines =
      family.series
      |> Enum.sort_by(fn {key, _value} -> key end)
      |> Enum.map(fn {key, value} -> render_series(name, family, Enum.zip(names, key), value) end)

    [header | lines]
  end

  defp render_series(name, %{type: "histogram", buckets: bounds}, labels, value) do
    count = Map.get(value, :count, 0)
    counts = Map.get(value, :counts, List.duplicate(0, length(bounds)))

    buckets =
      bounds
      |> Enum.zip(counts)
      |> Enum.map(fn {bound, n} ->
        sample(name <> "_bucket", labels ++ [{"le", number(bound)}], n)
      end)

    [
      buckets,
      sample(name <> "_bucket", labels ++ [{"le", "+Inf"}], count),
      sample(name <> "_sum", labels, Map.get(value, :sum, 0)),
      sample(name <> "_count", labels, count)
    ]
  end

  defp render_series(name, _family, labels, value), do: sample(name, labels, value)

  defp sample(name, labels, value) do
    pairs = Enum.map_intersperse(labels, ",", fn {k, v} -> [k, "=\"", escape_label(v), "\""] end)
    [name, "{", pairs, "} ", number(value), "\n"]
  end

  defp number(n) when is_integer(n), do: Integer.to_string(n)

  defp number(f) when is_float(f) do
    if f == Float.round(f) and abs(f) < 1.0e15,
      do: Integer.to_string(trunc(f)),
      else: Float.to_string(f)
  end

  defp escape_label(value) do
    value
    |> String.replace("\\", "\\\\")
    |> String.replace("\"", "\\\"")
    |> String.replace("\n", "\\n")
  end

  defp escape_help(text), do: text |> String.replace("\\", "\\\\") |> String.replace("\n", "\\n")
end
