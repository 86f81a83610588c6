defmodule Trellis.Test.Writers do
  @moduledoc false

  # The writers of a randomized workload: each on its own connection,
  # seeded, counting what committed; and schema changes (a partition
  # attached, one detached) made while they write.

  alias Trellis.Test.SimplePG

  @doc """
  Runs `rounds` statements made by `statement` (called after seeding the
  process's random state with `seed`) on a connection of its own, adding
  one to `counter` (a :counters ref, or nil) after each. A statement that
  fails is rolled back (a failure inside BEGIN ... COMMIT leaves the
  transaction aborted, which would fail every later statement) and
  skipped. Returns how many committed.
  """
  @spec run(String.t(), tuple, pos_integer, (() -> String.t()), :counters.counters_ref() | nil) ::
          non_neg_integer
  def run(url, seed, rounds, statement, counter \\ nil) do
    :rand.seed(:exsss, seed)
    pg = SimplePG.connect!(url)

    committed =
      Enum.count(1..rounds, fn _ ->
        result = SimplePG.query(pg, statement.())
        if match?({:error, _}, result), do: SimplePG.query!(pg, "ROLLBACK")
        if counter, do: :counters.add(counter, 1, 1)
        match?({:ok, _}, result)
      end)

    SimplePG.close(pg)
    committed
  end

  @doc """
  Calls `write` `rounds` times, then keeps calling it until
  `opts[:until]` (a zero-arity function; by default nothing more) returns
  true, adding one to `opts[:counter]` (a :counters ref) after each call.
  A test that must change something while writers still write holds them
  with `:until` instead of hoping a fixed count outlasts the change.
  """
  @spec repeat(pos_integer, keyword, (() -> any)) :: :ok
  def repeat(rounds, opts, write) do
    until = Keyword.get(opts, :until, fn -> true end)
    counter = Keyword.get(opts, :counter)

    call = fn ->
      write.()
      if counter, do: :counters.add(counter, 1, 1)
    end

    Enum.each(1..rounds, fn _ -> call.() end)
    keep_on(until, call)
  end

  defp keep_on(until, call) do
    if until.() do
      :ok
    else
      call.()
      keep_on(until, call)
    end
  end

  @doc """
  Starts `count` writers, `write.(writer, counter)` each (1 to `count`,
  returning how many of its writes committed, adding to the counter as it
  goes), and makes each `{after, change}` of `changes` in order, on a
  connection of its own, once `after` writes were made in all. Returns
  `{committed, made}`: the writes that committed, and how many had been
  made when the last change was done (for the caller to check that the
  changes happened while the writers wrote).
  """
  @spec with_changes(
          String.t(),
          pos_integer,
          (pos_integer, :counters.counters_ref() -> non_neg_integer),
          [{non_neg_integer, (SimplePG.t() -> any)}]
        ) :: {non_neg_integer, non_neg_integer}
  def with_changes(url, count, write, changes) do
    counter = :counters.new(1, [:atomics])
    writers = Enum.map(1..count, fn w -> Task.async(fn -> write.(w, counter) end) end)
    ddl = SimplePG.connect!(url)

    for {after_writes, change} <- changes do
      wait_for(counter, after_writes)
      change.(ddl)
    end

    made = :counters.get(counter, 1)
    SimplePG.close(ddl)
    {writers |> Task.await_many(400_000) |> Enum.sum(), made}
  end

  defp wait_for(counter, n) do
    if :counters.get(counter, 1) < n, do: Process.sleep(5) && wait_for(counter, n)
  end
end
