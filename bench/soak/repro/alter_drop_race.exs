# Reproducer of the soak's findings 1 and 2 (bench/README.md, "Fleet
# soak"; fixed: the ALTER takes the transform's drain lock first, and
# elixir/test/trellis/engine/alter_race_test.exs is their regression test),
# ALTER TRANSFORM against drains of the same transform under writes:
#  1. a DROP COLUMN that commits while a drain holds the transform's columns
#     as they were before it: the drain's recompute names the dropped
#     column, fails with 42703, and that pauses the transform as a schema
#     change nobody made;
#  2. an ALTER that fails with "deadlock detected" (40P01): it holds the
#     transform's catalog row and waits for the target, while a drain that
#     wrote the target waits for that row.
# One handle (staging, 2 drains), 8 writers, ADD COLUMN / DROP COLUMN pairs
# on a GROUP BY. Exits 1 at the first pause, or after ROUNDS (default 40)
# pairs if any ALTER deadlocked; 0 when neither happened.
#
#   cd elixir && MIX_ENV=test mix run --no-start ../bench/soak/repro/alter_drop_race.exs

for file <- ~w(schema writer), do: Code.require_file("../lib/#{file}.ex", __DIR__)

alias Trellis.Test.SimplePG

rounds = String.to_integer(System.get_env("ROUNDS", "40"))
{:ok, testkit} = Trellis.TestCluster.testkit_path()
{_cluster, url} = Trellis.TestCluster.start!(testkit)
pg = SimplePG.connect!(url)
Soak.Schema.create!(pg)
{:ok, _} = Application.ensure_all_started(:trellis_pg)
migrator = Trellis.connect!(url: url)
:ok = Trellis.migrate(migrator)
:ok = Trellis.shutdown(migrator)
trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)

{:ok, _} =
  Trellis.define(
    trellis,
    "TRANSFORM by_writer FROM accounts SELECT writer, count(*) AS n, sum(balance) AS total GROUP BY writer"
  )

stop = :atomics.new(1, [])
counter = :counters.new(1, [:atomics])
writers = for w <- 1..8, do: Task.async(fn -> Soak.Writer.run(url, w, 1, counter, stop, 2) end)
Process.sleep(2_000)

deadlocks = :counters.new(1, [])

# An ALTER retried until it is done, counting the deadlocks it met.
alter = fn statement ->
  Stream.repeatedly(fn -> Trellis.apply(trellis, statement) end)
  |> Enum.find(fn
    {:ok, _} ->
      true

    {:error, %Trellis.Error{sqlstate: "40P01"}} ->
      :counters.add(deadlocks, 1, 1)
      IO.puts("#{statement}: deadlock detected (finding 2)")
      false
  end)
end

paused_at =
  Enum.find(1..rounds, fn round ->
    alter.("ALTER TRANSFORM by_writer ADD COLUMN max(balance) AS top")
    Process.sleep(:rand.uniform(300))
    alter.("ALTER TRANSFORM by_writer DROP COLUMN top")
    Process.sleep(500)
    {:ok, status} = Trellis.status(trellis, "by_writer")

    if status.status == :paused do
      IO.puts(
        "round #{round}: paused (#{status.paused_kind}, finding 1): #{status.paused_reason}"
      )

      true
    end
  end)

:atomics.put(stop, 1, 1)
Task.await_many(writers, 60_000)

IO.puts("#{:counters.get(deadlocks, 1)} ALTERs deadlocked")
if paused_at || :counters.get(deadlocks, 1) > 0, do: System.halt(1)
IO.puts("no pause and no deadlock in #{rounds} ADD/DROP pairs")
