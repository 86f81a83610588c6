defmodule Soak.Writer do
  @moduledoc false

  # One of the soak's writers: random inserts, updates and deletes of rows
  # it alone owns (ids from its own range), one to four per transaction,
  # each transaction also inserting (writer, seq) into soak_ledger. Its
  # ledger (what it knows committed) is the expected content of its rows:
  # after a failure it asks soak_ledger whether the transaction committed,
  # since a restart or a terminated session can end a COMMIT whose outcome
  # the client never heard. So the ledger is exact, and the final check can
  # tell a write lost or doubled by Trellis from one that never committed.

  alias Trellis.Test.SimplePG

  @id_range 100_000_000
  @regions 0..5
  @event_regions 0..3
  @statuses ~w(new open closed)

  defstruct [:writer, :url, :pg, seq: 0, next_id: 0, accounts: %{}, events: %{}, committed: 0]

  @doc """
  Runs until `stop` (an :atomics ref) is set, adding each committed
  transaction to `counter`, pausing about `pace_ms` between transactions.
  Returns the final state: its ledger (`accounts`, `events`) and counts.
  """
  def run(url, writer, seed, counter, stop, pace_ms) do
    :rand.seed(:exsss, {seed, writer, 41})
    state = %__MODULE__{writer: writer, url: url, next_id: writer * @id_range}
    loop(%{state | pg: connect(url)}, counter, stop, pace_ms)
  end

  defp loop(state, counter, stop, pace_ms) do
    if :atomics.get(stop, 1) == 1 do
      SimplePG.close(state.pg)
      %{state | pg: nil}
    else
      state = transaction(state, counter)
      if pace_ms > 0, do: Process.sleep(:rand.uniform(2 * pace_ms))
      loop(state, counter, stop, pace_ms)
    end
  end

  defp transaction(state, counter) do
    seq = state.seq + 1
    {ops, planned} = plan(state, :rand.uniform(4))

    sql =
      "BEGIN; #{Enum.join(ops, "; ")}; " <>
        "INSERT INTO soak_ledger (writer, seq) VALUES (#{state.writer}, #{seq}); COMMIT"

    state = %{state | seq: seq}

    case run_sql(state, sql) do
      {:ok, state} ->
        :counters.add(counter, 1, 1)
        %{planned | seq: seq, pg: state.pg, committed: state.committed + 1}

      {:unknown, state} ->
        if committed?(state, seq) do
          :counters.add(counter, 1, 1)
          %{planned | seq: seq, pg: state.pg, committed: state.committed + 1}
        else
          state
        end
    end
  end

  # {:ok, state} when the COMMIT answered; {:unknown, state} (with a
  # working connection) after any error, whatever ended the transaction.
  defp run_sql(state, sql) do
    try do
      case SimplePG.query(state.pg, sql) do
        {:ok, _} ->
          {:ok, state}

        {:error, _} ->
          _ = SimplePG.query(state.pg, "ROLLBACK")
          {:unknown, state}
      end
    rescue
      _ -> {:unknown, %{state | pg: reconnect(state.pg, state.url)}}
    catch
      :exit, _ -> {:unknown, %{state | pg: reconnect(state.pg, state.url)}}
    end
  end

  defp committed?(state, seq) do
    sql = "SELECT count(*) FROM soak_ledger WHERE writer = #{state.writer} AND seq = #{seq}"

    try do
      SimplePG.scalar!(state.pg, sql) == "1"
    rescue
      _ -> committed?(%{state | pg: reconnect(state.pg, state.url)}, seq)
    end
  end

  defp reconnect(pg, url) do
    try do
      :gen_tcp.close(pg.socket)
    catch
      _, _ -> :ok
    end

    connect(url)
  end

  # The server may be restarting: retry for up to two minutes.
  defp connect(url, tries \\ 600) do
    try do
      SimplePG.connect!(url)
    rescue
      error ->
        if tries <= 1, do: reraise(error, __STACKTRACE__)
        Process.sleep(200)
        connect(url, tries - 1)
    end
  end

  # `count` statements, and the state as it is if they all commit.
  defp plan(state, count) do
    Enum.map_reduce(1..count, state, fn _, s -> operation(s) end)
  end

  defp operation(s) do
    case :rand.uniform(100) do
      n when n <= 28 -> insert_account(s)
      n when n <= 50 -> update_account(s)
      n when n <= 60 -> delete_account(s)
      n when n <= 80 -> insert_event(s)
      n when n <= 93 -> update_event(s)
      _ -> delete_event(s)
    end
  end

  defp insert_account(s) do
    id = s.next_id + 1
    row = {Enum.random(@regions), :rand.uniform(1000), Enum.random(@statuses)}
    {region, balance, status} = row

    {"INSERT INTO accounts (id, writer, region, balance, status) VALUES " <>
       "(#{id}, #{s.writer}, #{region}, #{balance}, '#{status}')",
     %{s | next_id: id, accounts: Map.put(s.accounts, id, row)}}
  end

  defp update_account(s) do
    case owned(s.accounts, s) do
      nil ->
        insert_account(s)

      {id, {region, balance, status}} ->
        {set, row} = account_change(region, balance, status)

        {"UPDATE accounts SET #{set} WHERE id = #{id}",
         %{s | accounts: Map.put(s.accounts, id, row)}}
    end
  end

  defp account_change(region, balance, status) do
    case :rand.uniform(4) do
      1 -> (r = Enum.random(@regions)) && {"region = #{r}", {r, balance, status}}
      2 -> (t = Enum.random(@statuses)) && {"status = '#{t}'", {region, balance, t}}
      3 -> {"balance = balance + 7", {region, balance + 7, status}}
      4 -> (b = :rand.uniform(1000)) && {"balance = #{b}", {region, b, status}}
    end
  end

  defp delete_account(s) do
    case owned(s.accounts, s) do
      nil ->
        insert_account(s)

      {id, _} ->
        {"DELETE FROM accounts WHERE id = #{id}", %{s | accounts: Map.delete(s.accounts, id)}}
    end
  end

  defp insert_event(s) do
    id = s.next_id + 1
    row = {Enum.random(@event_regions), :rand.uniform(100)}
    {region, amount} = row

    {"INSERT INTO events (id, writer, region, amount) VALUES " <>
       "(#{id}, #{s.writer}, #{region}, #{amount})",
     %{s | next_id: id, events: Map.put(s.events, id, row)}}
  end

  # Half of the updates move the row to another partition.
  defp update_event(s) do
    case owned(s.events, s) do
      nil ->
        insert_event(s)

      {id, {region, amount}} ->
        {set, row} =
          if :rand.uniform(2) == 1 do
            r = Enum.random(@event_regions)
            {"region = #{r}", {r, amount}}
          else
            d = :rand.uniform(9)
            {"amount = amount + #{d}", {region, amount + d}}
          end

        {"UPDATE events SET #{set} WHERE id = #{id}", %{s | events: Map.put(s.events, id, row)}}
    end
  end

  defp delete_event(s) do
    case owned(s.events, s) do
      nil -> insert_event(s)
      {id, _} -> {"DELETE FROM events WHERE id = #{id}", %{s | events: Map.delete(s.events, id)}}
    end
  end

  # A random row of the writer's (a few draws from its id range; most ids
  # are still there since inserts outnumber deletes), or nil.
  defp owned(rows, s, tries \\ 4) do
    first = s.writer * @id_range + 1

    cond do
      s.next_id < first or tries == 0 ->
        nil

      true ->
        id = first + :rand.uniform(s.next_id - first + 1) - 1

        case rows do
          %{^id => row} -> {id, row}
          _ -> owned(rows, s, tries - 1)
        end
    end
  end
end
