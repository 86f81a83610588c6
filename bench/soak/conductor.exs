# The fleet soak's conductor (bench/soak/run.sh starts it; bench/README.md,
# "Fleet soak", says what it proves). It starts a durable PostgreSQL through
# the testkit, three fleet nodes (bench/soak/node.exs), defines one
# transform of every kind, runs 8 writers with exact ledgers, an operator's
# statements and a fault schedule for SOAK_MINUTES, then checks that every
# transform converges, self-checks clean, equals a fresh recompute, and that
# no committed write was lost or doubled. Writes a JSON summary to
# $SOAK_DIR/result.json and exits non-zero on any failure.

for file <-
      ~w(fleet schema writer convergence faults operator prober final_check report) do
  Code.require_file("lib/#{file}.ex", __DIR__)
end

alias Soak.{Convergence, Faults, FinalCheck, Fleet, Operator, Prober, Report, Schema, Writer}
alias Trellis.Test.SimplePG
alias Trellis.TestCluster

env = fn name, default -> System.get_env(name, default) end
minutes = env.("SOAK_MINUTES", "3") |> Float.parse() |> elem(0)
writers = env.("SOAK_WRITERS", "8") |> String.to_integer()
fault_every_ms = env.("SOAK_FAULT_EVERY_MS", "20000") |> String.to_integer()
operator_every_ms = env.("SOAK_OPERATOR_EVERY_MS", "12000") |> String.to_integer()
pace_ms = env.("SOAK_PACE_MS", "5") |> String.to_integer()
seed = env.("SOAK_SEED", "#{:rand.uniform(1_000_000)}") |> String.to_integer()
dir = System.fetch_env!("SOAK_DIR")
:persistent_term.put(:soak_t0, System.monotonic_time(:millisecond))

Faults.log(
  "#{minutes} min, #{writers} writers, a fault every #{fault_every_ms} ms, an operator " <>
    "statement every #{operator_every_ms} ms, seed #{seed} (SOAK_SEED replays it), logs in #{dir}"
)

:rand.seed(:exsss, {seed, 0, 7})
{:ok, testkit} = TestCluster.testkit_path()
{cluster, url} = TestCluster.start!(testkit, ["--durable"])
Faults.log("PostgreSQL at #{url}")
pg = SimplePG.connect!(url)
Schema.create!(pg)

# The catalog is migrated once before a staging handle connects.
{:ok, _} = Application.ensure_all_started(:trellis_pg)
migrator = Trellis.connect!(url: url)
:ok = Trellis.migrate(migrator)

for {name, statement, _, _} <- Schema.transforms() do
  {:ok, _} = Trellis.define(migrator, statement)
  # The indexes maintenance and self_check need (a chain's source is a
  # target, which has none but its key).
  {:ok, status} = Trellis.status(migrator, name)
  for gap <- status.source_index_gaps, do: SimplePG.query!(pg, gap.fix)
  Faults.log("defined #{name}, #{length(status.source_index_gaps)} source index(es) added")
end

:ok = Trellis.shutdown(migrator)

{:ok, _} =
  Fleet.start_link(%{
    nodes: 3,
    url: url,
    dir: dir,
    cookie: Atom.to_string(Node.get_cookie()),
    prefix: "soak#{System.pid()}",
    ebin: Path.expand("_build/test/lib/trellis_pg/ebin"),
    port_path: System.fetch_env!("TRELLIS_PORT_PATH")
  })

Faults.log("fleet up: #{inspect(Fleet.nodes())}")
{:ok, _} = Convergence.await(120_000)
started = Convergence.now()
ctx = %{url: url, cluster: cluster, nodes: 3, started: started}
stop = :atomics.new(1, [])
counter = :counters.new(1, [:atomics])

writer_tasks =
  for w <- 1..writers,
      do: Task.async(fn -> Writer.run(url, w, seed, counter, stop, pace_ms) end)

prober = Task.async(fn -> Prober.run(ctx, stop) end)
faults = Task.async(fn -> Faults.run(ctx, fault_every_ms, stop) end)
operator = Task.async(fn -> Operator.run(ctx, operator_every_ms, stop) end)

run_ms = round(minutes * 60_000)

Enum.reduce_while(Stream.interval(10_000), 0, fn _, last ->
  made = :counters.get(counter, 1)
  Faults.log("#{made} transactions committed (#{div(made - last, 10)}/s)")
  if Convergence.now() - started >= run_ms, do: {:halt, made}, else: {:cont, made}
end)

:atomics.put(stop, 1, 1)
ledgers = Task.await_many(writer_tasks, :infinity)
write_ms = Convergence.now() - started
fault_log = Task.await(faults, :infinity)
%{done: operator_log, failures: operator_failures} = Task.await(operator, :infinity)
samples = Task.await(prober, :infinity)
Faults.log("writers, faults and operator stopped after #{write_ms} ms; final checks")

check = FinalCheck.run(ctx, ledgers)
check = %{check | failures: operator_failures ++ check.failures}
:ok = Fleet.stop()

result = Report.build(ledgers, write_ms, fault_log, operator_log, samples, check, seed)
File.write!(Path.join(dir, "result.json"), Report.json(result))
IO.puts(Report.text(result))

if check.failures == [] do
  Faults.log("PASSED")
else
  Enum.each(check.failures, &IO.puts("FAILED: #{&1}"))
  System.halt(1)
end
