defmodule Trellis.Metrics.Exposition do
  @moduledoc false

  # Pure: merges the `metrics` replies of several handles (spec/protocol.md,
  # op `metrics`) into one Prometheus text exposition, format 0.0.4: each
  # family's HELP and TYPE once, every series labelled trellis_instance first,
  # series with the same labels (two handles on one instance) summed.

  @scrape_errors "trellis_metrics_scrape_errors"

  # How the msgpack decoder gives floats Erlang cannot hold.
  @special [:nan, :infinity, :neg_infinity]

  @typedoc "A handle's instance and its families, or why it has none."
  @type result :: {String.t(), {:ok, [map]} | {:error, String.t()}}

  @doc "The text for `results`; `budget_ms` is named in the scrape-error help."
  @spec render([result], pos_integer) :: String.t()
  def render(results, budget_ms) do
    families =
      Enum.reduce(results, %{}, fn
        {instance, {:ok, families}}, acc ->
          Enum.reduce(families, acc, &add_family(&2, instance, &1))

        {_instance, {:error, _}}, acc ->
          acc
      end)

    comments =
      for {instance, {:error, reason}} <- results do
        "# trellis_metrics: the handle of trellis_instance=#{instance} is left out: " <>
          single_line(reason) <> "\n"
      end

    body =
      families
      |> Map.put(@scrape_errors, scrape_errors(results, budget_ms))
      |> Enum.sort_by(fn {name, _family} -> name end)
      |> Enum.map(fn {name, family} -> render_family(name, family) end)

    IO.iodata_to_binary([comments | body])
  end

  ## Merging

  defp add_family(acc, instance, %{"name" => name, "type" => type} = wire)
       when is_binary(name) and type in ["counter", "gauge", "histogram"] do
    labels = string_list(wire["labels"])
    family = Map.get(acc, name) || new_family(type, wire, labels)

    if family.type == type and family.labels == labels do
      series =
        Enum.reduce(List.wrap(wire["series"]), family.series, &add_series(&2, instance, type, &1))

      Map.put(acc, name, %{family | series: series})
    else
      # Two port programs disagree about a family: keep the first one's.
      acc
    end
  end

  defp add_family(acc, _instance, _malformed), do: acc

  defp new_family(type, wire, labels) do
    %{
      type: type,
      help: if(is_binary(wire["help"]), do: wire["help"], else: ""),
      labels: labels,
      buckets: if(type == "histogram", do: number_list(wire["buckets"]), else: []),
      series: %{}
    }
  end

  defp add_series(series, instance, type, %{"labels" => labels} = wire) when is_list(labels) do
    key = [instance | string_list(labels)]

    case value(type, wire) do
      nil -> series
      value -> Map.update(series, key, value, &sum(&1, value))
    end
  end

  defp add_series(series, _instance, _type, _malformed), do: series

  defp value("histogram", %{"counts" => counts, "sum" => sum, "count" => count})
       when is_list(counts) and (is_number(sum) or sum in @special) and is_integer(count),
       do: %{counts: counts, sum: sum, count: count}

  defp value("histogram", _wire), do: nil
  defp value(_type, %{"value" => value}) when is_number(value) or value in @special, do: value
  defp value(_type, _wire), do: nil

  defp sum(a, b) when is_number(a) and is_number(b), do: a + b

  defp sum(%{counts: a, sum: s1} = x, %{counts: b, sum: s2} = y)
       when length(a) == length(b) and is_number(s1) and is_number(s2) do
    %{counts: Enum.zip_with(a, b, &(&1 + &2)), sum: s1 + s2, count: x.count + y.count}
  end

  defp sum(first, _other), do: first

  defp scrape_errors(results, budget_ms) do
    series =
      Enum.reduce(results, %{}, fn {instance, outcome}, acc ->
        failed = if match?({:error, _}, outcome), do: 1, else: 0
        Map.update(acc, [instance], failed, &(&1 + failed))
      end)

    %{
      type: "gauge",
      help:
        "Handles whose port program did not answer this render's metrics request within " <>
          "#{budget_ms} ms (their series are left out).",
      labels: [],
      buckets: [],
      series: series
    }
  end

  ## Rendering

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
    buckets =
      bounds
      |> Enum.zip(value.counts)
      |> Enum.map(fn {bound, count} ->
        sample(name <> "_bucket", labels ++ [{"le", number(bound)}], count)
      end)

    [
      buckets,
      sample(name <> "_bucket", labels ++ [{"le", "+Inf"}], value.count),
      sample(name <> "_sum", labels, value.sum),
      sample(name <> "_count", labels, value.count)
    ]
  end

  defp render_series(name, _family, labels, value), do: sample(name, labels, value)

  defp sample(name, labels, value) do
    pairs = Enum.map_intersperse(labels, ",", fn {k, v} -> [k, "=\"", escape_label(v), "\""] end)
    [name, "{", pairs, "} ", number(value), "\n"]
  end

  defp number(n) when is_integer(n), do: Integer.to_string(n)
  defp number(:nan), do: "NaN"
  defp number(:infinity), do: "+Inf"
  defp number(:neg_infinity), do: "-Inf"

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

  defp single_line(text), do: String.replace(text, ~r/\s+/, " ")

  defp string_list(list) when is_list(list), do: Enum.map(list, &to_string/1)
  defp string_list(_other), do: []

  defp number_list(list) when is_list(list), do: Enum.filter(list, &is_number/1)
  defp number_list(_other), do: []
end
