defmodule Soak.FinalCheck do
  @moduledoc false

  # What must hold once the writers and the faults have stopped: every
  # transform converges and is live; a full self_check of each finds no
  # divergence; each target equals a fresh recompute of its query; and the
  # sources and the writer-keyed targets hold exactly what the writers'
  # ledgers say committed (no write lost or doubled). Returns a list of
  # failures (empty when all holds) and the figures for the report.

  alias Soak.{Convergence, Faults, Fleet, Schema}
  alias Trellis.Test.SimplePG

  @converge_deadline_ms 600_000
  @check_deadline_ms 600_000

  def run(ctx, ledgers) do
    {converge, failures} = converge()
    Faults.log("final converge: #{inspect(converge)} ms")
    pg = SimplePG.connect!(ctx.url)

    failures =
      failures ++
        Enum.flat_map(Schema.transforms(), &live(&1)) ++
        Enum.flat_map(Schema.transforms(), &self_check(&1)) ++
        Enum.flat_map(Schema.transforms(), &recompute(pg, &1)) ++
        ledger(pg, ledgers)

    SimplePG.close(pg)
    %{failures: failures, final_converge_ms: converge}
  end

  # Nothing is resumed here: a transform the run paused (an ALTER racing a
  # drain once did, bench/README.md "Fleet soak") fails `live/1` below.
  defp converge do
    case Convergence.await(@converge_deadline_ms, 120_000) do
      {:ok, ms} -> {ms, []}
      {:error, reason} -> {nil, ["no final converge in 10 min: #{inspect(reason)}"]}
    end
  end

  defp live({name, _, _, _}) do
    case Fleet.call(:status, [name]) do
      {:ok, %{status: :live, held_keys: 0}} -> []
      {:ok, status} -> ["#{name} is not live with no held keys: #{inspect(status, limit: 12)}"]
      other -> ["status of #{name} failed: #{inspect(other)}"]
    end
  end

  defp self_check({name, _, _, _}), do: self_check(name, Convergence.now() + @check_deadline_ms)

  defp self_check(name, deadline) do
    with {:ok, %{id: id}} <- Fleet.call(:self_check, [name, [mode: :full]]),
         {:ok, report} <- await_job(id, deadline) do
      Faults.log(
        "self_check #{name}: #{report.outcome}, #{report.rows_compared} rows, " <>
          "#{report.divergence_count} divergences"
      )

      cond do
        report.outcome == :clean and report.divergence_count == 0 ->
          []

        report.outcome == :unsettled and Convergence.now() < deadline ->
          self_check(name, deadline)

        true ->
          ["self_check #{name}: #{inspect(report, limit: 20, printable_limit: 2000)}"]
      end
    else
      {:error, {:job_failed, job}} ->
        ["self_check #{name} failed: #{inspect(job.error)}"]

      {:error, %Trellis.Error{code: code} = error} when code in [:validation, :not_found] ->
        ["self_check #{name} refused: #{Exception.message(error)}"]

      other ->
        if Convergence.now() < deadline,
          do: Process.sleep(1_000) && self_check(name, deadline),
          else: ["self_check #{name} failed: #{inspect(other)}"]
    end
  end

  defp await_job(id, deadline) do
    case Fleet.call(:self_check_job, [id]) do
      {:ok, %{state: :done, report: report}} ->
        {:ok, report}

      {:ok, nil} ->
        {:error, :replaced}

      {:ok, %{state: :failed} = job} ->
        {:error, {:job_failed, job}}

      _ ->
        if Convergence.now() > deadline do
          {:error, :job_not_done}
        else
          Process.sleep(500)
          await_job(id, deadline)
        end
    end
  end

  defp recompute(pg, transform) do
    case Schema.differences(pg, transform) do
      0 -> []
      n -> ["#{elem(transform, 0)} differs from a fresh recompute in #{n} rows"]
    end
  end

  # The sources hold exactly the ledgers' rows, and the two writer-keyed
  # targets count and sum exactly them.
  defp ledger(pg, ledgers) do
    expected_accounts =
      for l <- ledgers,
          {id, {region, balance, status}} <- l.accounts,
          into: MapSet.new(),
          do: [id, l.writer, region, balance, status]

    expected_events =
      for l <- ledgers,
          {id, {region, amount}} <- l.events,
          into: MapSet.new(),
          do: [id, l.writer, region, amount]

    accounts = rows(pg, "SELECT id, writer, region, balance, status FROM accounts")

    events = rows(pg, "SELECT id, writer, region, amount FROM events")

    by_writer = for l <- ledgers, do: totals(l.writer, l.accounts, fn {_, b, _} -> b end)
    event_totals = for l <- ledgers, do: totals(l.writer, l.events, fn {_, a} -> a end)

    compare("accounts vs the writers' ledgers", accounts, expected_accounts) ++
      compare("events vs the writers' ledgers", events, expected_events) ++
      compare(
        "soak_by_writer vs the ledgers",
        rows(pg, "SELECT writer, n, total FROM soak_by_writer"),
        MapSet.new(Enum.reject(by_writer, &(Enum.at(&1, 1) == 0)))
      ) ++
      compare(
        "soak_event_totals vs the ledgers",
        rows(pg, "SELECT writer, n, total FROM soak_event_totals"),
        MapSet.new(Enum.reject(event_totals, &(Enum.at(&1, 1) == 0)))
      ) ++ committed(pg, ledgers)
  end

  defp committed(pg, ledgers) do
    Enum.flat_map(ledgers, fn l ->
      n = SimplePG.scalar!(pg, "SELECT count(*) FROM soak_ledger WHERE writer = #{l.writer}")

      if String.to_integer(n) == l.committed,
        do: [],
        else: [
          "writer #{l.writer}: soak_ledger has #{n} transactions, the writer counted #{l.committed}"
        ]
    end)
  end

  defp totals(writer, rows, value) do
    [writer, map_size(rows), rows |> Map.values() |> Enum.map(value) |> Enum.sum()]
  end

  defp rows(pg, sql) do
    pg
    |> SimplePG.query!(sql)
    |> Enum.map(fn row -> Enum.map(row, &parse/1) end)
    |> MapSet.new()
  end

  defp parse(text) do
    case Integer.parse(text) do
      {n, ""} -> n
      _ -> text
    end
  end

  defp compare(what, actual, expected) do
    missing = MapSet.difference(expected, actual)
    extra = MapSet.difference(actual, expected)

    if MapSet.size(missing) == 0 and MapSet.size(extra) == 0 do
      []
    else
      [
        "#{what}: #{MapSet.size(missing)} rows missing (e.g. #{inspect(Enum.take(missing, 3))}), " <>
          "#{MapSet.size(extra)} extra (e.g. #{inspect(Enum.take(extra, 3))})"
      ]
    end
  end
end
