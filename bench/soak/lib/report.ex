defmodule Soak.Report do
  @moduledoc false

  # The soak's figures: writes/s sustained, the lag a reader saw (the wait
  # of a token taken once a second), each fault's recovery (its injection
  # until the next successful converge), the operator's statements, and the
  # final checks. As text for the log and as JSON for the record.

  def build(ledgers, write_ms, faults, operator, samples, check, seed) do
    committed = ledgers |> Enum.map(& &1.committed) |> Enum.sum()
    waits = for {_, ms} <- samples, is_integer(ms), do: ms

    %{
      seed: seed,
      write_seconds: Float.round(write_ms / 1000, 1),
      transactions: committed,
      writes_per_second: Float.round(committed * 1000 / max(write_ms, 1), 1),
      lag_ms: stats(waits),
      lag_failed_samples: Enum.count(samples, fn {_, ms} -> ms == :failed end),
      faults: faults,
      recovery_ms_by_kind:
        faults
        |> Enum.group_by(& &1.kind, & &1.recovered_ms)
        |> Map.new(fn {kind, ms} -> {kind, stats(Enum.reject(ms, &is_nil/1))} end),
      unrecovered_faults: Enum.count(faults, &is_nil(&1.recovered_ms)),
      operator:
        Enum.map(operator, fn {kind, at, took} -> %{kind: kind, at_ms: at, took_ms: took} end),
      final_converge_ms: check.final_converge_ms,
      failures: check.failures,
      load_average: load_average()
    }
  end

  defp stats([]), do: %{count: 0}

  defp stats(values) do
    sorted = Enum.sort(values)
    n = length(sorted)
    pick = fn q -> Enum.at(sorted, min(n - 1, trunc(q * n))) end
    %{count: n, p50: pick.(0.5), p99: pick.(0.99), max: List.last(sorted)}
  end

  defp load_average do
    case File.read("/proc/loadavg") do
      {:ok, text} -> text |> String.split() |> Enum.take(3) |> Enum.join(" ")
      _ -> "unknown"
    end
  end

  def text(r) do
    faults =
      for {kind, s} <- Enum.sort(r.recovery_ms_by_kind) do
        "  #{kind}: #{s.count} recovered, p50 #{s[:p50]} ms, max #{s[:max]} ms"
      end

    Enum.join(
      [
        "== Fleet soak (seed #{r.seed})",
        "writes: #{r.transactions} transactions in #{r.write_seconds} s, #{r.writes_per_second}/s",
        "lag (token to converged, once a second): #{inspect(r.lag_ms)}, " <>
          "#{r.lag_failed_samples} samples failed (during faults)",
        "faults: #{length(r.faults)}, #{r.unrecovered_faults} not recovered within 5 min"
      ] ++
        faults ++
        [
          "operator statements: #{length(r.operator)}",
          "final converge: #{inspect(r.final_converge_ms)} ms; load average at the end: #{r.load_average}",
          "failures: #{length(r.failures)}"
        ],
      "\n"
    )
  end

  def json(term), do: encode(term)

  defp encode(m) when is_map(m),
    do:
      "{" <>
        Enum.map_join(m, ",", fn {k, v} -> encode(to_string(k)) <> ":" <> encode(v) end) <> "}"

  defp encode(l) when is_list(l), do: "[" <> Enum.map_join(l, ",", &encode/1) <> "]"
  defp encode(nil), do: "null"
  defp encode(b) when is_boolean(b), do: to_string(b)
  defp encode(a) when is_atom(a), do: encode(Atom.to_string(a))
  defp encode(n) when is_number(n), do: to_string(n)

  defp encode(s) when is_binary(s),
    do:
      "\"" <>
        (s
         |> String.replace("\\", "\\\\")
         |> String.replace("\"", "\\\"")
         |> String.replace("\n", "\\n")) <> "\""
end
