defmodule Trellis.SelfCheckTest do
  # Self-check jobs through the real port and a real PostgreSQL (issue 14;
  # spec/engine.md "Self-check"): a clean target under live writes is
  # clean every time; a tampered one is reported key by key and clean after
  # the fix it names; the job's lifecycle across workers that come and go.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG, Workload}

  @moduletag :port
  @moduletag timeout: 300_000

  setup do
    %{url: url, pg: pg} = Database.open!("self_check")
    %{url: url, pg: pg}
  end

  defp start(url, opts) do
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    Trellis.connect!([url: url] ++ opts)
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  defp await_live(trellis, name, deadline \\ 60_000) do
    case Trellis.status!(trellis, name) do
      %Trellis.Status{status: :live} ->
        converge(trellis)

      _ when deadline > 0 ->
        Process.sleep(50)
        await_live(trellis, name, deadline - 50)

      status ->
        flunk("#{name} is not live: #{inspect(status)}")
    end
  end

  # Polls the job until `done?` holds for it.
  defp await_job(trellis, id, done? \\ &(&1.state in [:done, :failed, :cancelled]), left \\ 3000) do
    job = Trellis.self_check_job!(trellis, id)

    cond do
      done?.(job) -> job
      left == 0 -> flunk("self-check job #{id} did not get there: #{inspect(job)}")
      true -> Process.sleep(50) && await_job(trellis, id, done?, left - 1)
    end
  end

  defp check(trellis, name, opts \\ []) do
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(trellis, name, opts)
    await_job(trellis, id)
  end

  # Random writes (Trellis.Test.Workload) in a loop until stop/1.
  defp steady_writes(url, writer) do
    stop = :atomics.new(1, [])

    task =
      Task.async(fn ->
        Stream.iterate(1, &(&1 + 1))
        |> Enum.reduce_while(0, fn round, _ ->
          Workload.run(url, writer, round, 20, truncate: false)
          if :atomics.get(stop, 1) == 1, do: {:halt, round}, else: {:cont, round}
        end)
      end)

    {stop, task}
  end

  defp stop_writes({stop, task}) do
    :atomics.put(stop, 1, 1)
    Task.await(task, 60_000)
  end

  test "a clean target under a steady random write load checks clean, 20 runs in a row",
       %{url: url, pg: pg} do
    Workload.create_source!(pg)
    trellis = start(url, staging: true, drain_threads: 2)

    {:ok, _} =
      Trellis.define(trellis, """
      TRANSFORM item_view FROM items
      SELECT name AS name, amount * 2 AS twice, doc AS doc, flag AS flag, at AS at
      """)

    await_live(trellis, "item_view")
    writers = [steady_writes(url, 1), steady_writes(url, 2)]

    reports =
      for run <- 1..20 do
        job = check(trellis, "item_view")
        assert %Trellis.SelfCheckJob{state: :done, report: report} = job, "run #{run}"
        assert report.outcome == :clean, "run #{run}: #{inspect(report)}"
        assert report.divergence_count == 0 and report.divergences == []
        assert report.rows_compared > 0
        report
      end

    rounds = Enum.map(writers, &stop_writes/1)
    assert Enum.all?(rounds, &(&1 > 1)), "the writers kept writing through the checks"
    assert length(reports) == 20
    # The checks ran against lag, not a quiet table.
    converge(trellis)

    assert Workload.differences(pg, "item_view", """
           SELECT id, name, amount * 2, doc, flag, at FROM items
           """) == 0

    :ok = Trellis.shutdown(trellis)
  end

  test "a held key is not a divergence: its row is kept as it was on purpose", %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 500) g;
    """)

    trellis = start(url, staging: true, drain_threads: 2)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    await_live(trellis, "prices")
    # The target refuses key 13 whatever its values: the key is held.
    SimplePG.query!(pg, "ALTER TABLE prices ADD CONSTRAINT no_13 CHECK (id <> 13) NOT VALID")
    SimplePG.query!(pg, "UPDATE widgets SET price = price + 100 WHERE id BETWEEN 10 AND 16")
    converge(trellis)
    assert %Trellis.Status{held_keys: 1} = Trellis.status!(trellis, "prices")
    # A tampered key still is.
    SimplePG.query!(pg, "UPDATE prices SET price = -1 WHERE id = 20")

    assert %Trellis.SelfCheckJob{state: :done, report: report} = check(trellis, "prices")
    assert %{outcome: :diverged, unsettled_keys: 0, divergence_count: 1} = report
    assert [%Trellis.Divergence{key: ["20"], kind: :differs}] = report.divergences
  end

  test "every key tampered with behind the engine's back is reported exactly; clean after the fix",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int, label text);
    INSERT INTO widgets SELECT g, g, 'w' || g FROM generate_series(1, 3000) g;
    """)

    trellis = start(url, staging: true, drain_threads: 2)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM prices FROM widgets SELECT price AS price, label AS label"
      )

    await_live(trellis, "prices")

    # The writers' batches go by pages: a rebuild of the whole target (which
    # the chooser may pick for a target this small) would mend the tampered
    # rows before the check reads them. A rebuild that failed a day from now
    # keeps the chooser off rebuilds (spec/engine.md "Batch paths").
    SimplePG.query!(pg, """
    INSERT INTO trellis.batch_paths (transform_id, path, factor, us_per_row, failed_at)
    SELECT id, 'rebuild', 1, 0, now() + interval '1 day' FROM trellis.transforms
    ON CONFLICT (transform_id, path) DO UPDATE SET failed_at = EXCLUDED.failed_at
    """)

    # Writers keep changing keys 1001..3000 while the target is tampered
    # with on keys 1..1000 and beyond the source's keys.
    writer =
      Task.async(fn ->
        w = SimplePG.connect!(url)

        for i <- 1..400 do
          k = 1001 + rem(i * 7919, 2000)
          SimplePG.query!(w, "UPDATE widgets SET price = price + 1 WHERE id = #{k}")
        end

        SimplePG.close(w)
      end)

    SimplePG.query!(pg, """
    UPDATE prices SET price = -1 WHERE id = 5;
    UPDATE prices SET price = -2, label = 'x' WHERE id = 6;
    UPDATE prices SET label = NULL WHERE id = 700;
    DELETE FROM prices WHERE id IN (7, 999);
    INSERT INTO prices (id, price, label) VALUES (50000, 1, 'ghost');
    """)

    job = check(trellis, "prices")
    Task.await(writer, 60_000)
    assert %Trellis.SelfCheckJob{state: :done, report: report} = job
    assert report.outcome == :diverged
    assert report.divergence_count == 6
    refute report.truncated

    by_key = Map.new(report.divergences, &{&1.key, &1})

    assert Map.keys(by_key) |> Enum.sort() ==
             Enum.sort([["5"], ["6"], ["700"], ["7"], ["999"], ["50000"]])

    assert %Trellis.Divergence{
             kind: :differs,
             columns: [%{name: "price", target: "-1", recomputed: "5"}]
           } = by_key[["5"]]

    assert %Trellis.Divergence{
             kind: :differs,
             columns: [
               %{name: "price", target: "-2", recomputed: "6"},
               %{name: "label", target: "x", recomputed: "w6"}
             ]
           } = by_key[["6"]]

    assert %{kind: :differs, columns: [%{name: "label", target: nil, recomputed: "w700"}]} =
             by_key[["700"]]

    assert %{kind: :missing, columns: [%{name: "price", target: nil, recomputed: "7"}, _]} =
             by_key[["7"]]

    assert %{kind: :missing} = by_key[["999"]]

    assert %{kind: :extra, columns: [%{name: "price", target: "1", recomputed: nil}, _]} =
             by_key[["50000"]]

    assert Enum.all?(
             report.divergences,
             &(&1.fix == ~S|Trellis.request_backfill(handle, "prices")|)
           )

    # The fix it names.
    :ok = Trellis.request_backfill(trellis, "prices")
    await_live(trellis, "prices")

    assert %{state: :done, report: %{outcome: :clean, rows_compared: 3000}} =
             check(trellis, "prices")

    :ok = Trellis.shutdown(trellis)
  end

  test "a report past its limit is truncated with the exact count; a sample reads its bound",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 5000) g;
    """)

    trellis = start(url, staging: true, drain_threads: 1)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    await_live(trellis, "prices")
    SimplePG.query!(pg, "UPDATE prices SET price = 0 WHERE id <= 250")

    report = check(trellis, "prices").report
    assert %{outcome: :diverged, divergence_count: 250, truncated: true} = report
    assert length(report.divergences) == 100
    assert report.rows_compared == 5000

    # Every row of the target diverges: a sample finds some, and compares
    # about the bound from each side.
    SimplePG.query!(pg, "UPDATE prices SET price = -price")
    sample = check(trellis, "prices", mode: :sample, sample_size: 200)
    assert sample.mode == :sample and sample.sample_size == 200
    assert sample.report.outcome == :diverged
    assert sample.report.rows_compared in 1..400
    assert sample.report.divergence_count == sample.report.rows_compared
    :ok = Trellis.shutdown(trellis)
  end

  test "job lifecycle: queued with no drain worker, picked up when one connects, replaced, nil after DROP",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price int)")
    # No drain worker anywhere: define of an empty source is live at once.
    idle = start(url, staging: true, drain_threads: 0)
    {:ok, _} = Trellis.define(idle, "TRANSFORM prices FROM widgets SELECT price AS price")

    assert {:ok, %Trellis.SelfCheckJob{id: id, state: :queued, target: "prices", mode: :full}} =
             Trellis.self_check(idle, "prices")

    Process.sleep(1500)

    assert %Trellis.SelfCheckJob{state: :queued, rows_compared: 0} =
             Trellis.self_check_job!(idle, id)

    # Unfinished: the same job comes back, whatever the options.
    assert %Trellis.SelfCheckJob{id: ^id} =
             Trellis.self_check!(idle, "prices", mode: :sample, sample_size: 5)

    SimplePG.query!(pg, "INSERT INTO widgets SELECT g, g FROM generate_series(1, 100) g")
    worker = start(url, drain_threads: 1)
    assert %{state: :done, report: %{outcome: :clean, rows_compared: 100}} = await_job(idle, id)

    # Finished: the next call replaces it; the old id reads as nil.
    assert {:ok, %Trellis.SelfCheckJob{id: new_id}} = Trellis.self_check(idle, "prices")
    assert new_id != id
    assert {:ok, nil} = Trellis.self_check_job(idle, id)
    assert %{state: :done} = await_job(idle, new_id)

    {:ok, :paused} = Trellis.apply(idle, "PAUSE TRANSFORM prices")
    {:ok, {:dropped, "prices"}} = Trellis.apply(idle, "DROP TRANSFORM prices")
    assert {:ok, nil} = Trellis.self_check_job(idle, new_id)
    :ok = Trellis.shutdown(worker)
    :ok = Trellis.shutdown(idle)
  end

  test "a job whose port is killed mid-run is taken over and finishes", %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 400000) g;
    """)

    first = start(url, staging: true, drain_threads: 1)
    {:ok, _} = Trellis.define(first, "TRANSFORM prices FROM widgets SELECT price AS price")
    await_live(first, "prices", 240_000)
    Process.flag(:trap_exit, true)
    reader = start(url, [])
    # Holds the check in its first range: claimed, it reads these tables and
    # waits. Without it the kill below could land after the whole check (400k
    # rows are compared in well under a second on a quiet machine), and the
    # test would see a finished job instead of a job taken over.
    locker = SimplePG.connect!(url)
    SimplePG.query!(locker, "BEGIN; LOCK TABLE widgets, prices IN ACCESS EXCLUSIVE MODE")

    {:ok, %{id: id}} = Trellis.self_check(reader, "prices")
    await_job(reader, id, &(&1.state == :running))
    {_, 0} = System.cmd("kill", ["-KILL", to_string(elem(Port.info(first.port, :os_pid), 1))])

    # Nobody holds it now; it stays running until another worker takes it
    # over, once the dead worker's heartbeat is stale.
    assert %{state: :running} = Trellis.self_check_job!(reader, id)
    SimplePG.query!(locker, "COMMIT")
    SimplePG.close(locker)
    second = start(url, drain_threads: 1)
    job = await_job(reader, id, &(&1.state == :done), 1200)
    assert %{report: %{outcome: :clean, rows_compared: 400_000}} = job
    :ok = Trellis.shutdown(second)
    :ok = Trellis.shutdown(reader)
  end

  test "bad arguments: types raise, values are :validation errors, unknown targets :not_found",
       %{url: url} do
    trellis = start(url, [])
    assert_raise ArgumentError, ~r/:mode/, fn -> Trellis.self_check(trellis, "x", mode: :fast) end
    assert_raise ArgumentError, ~r/unknown/, fn -> Trellis.self_check(trellis, "x", depth: 1) end
    assert_raise ArgumentError, fn -> Trellis.self_check(trellis, :x) end
    assert_raise ArgumentError, fn -> Trellis.self_check_job(trellis, "1") end

    assert {:error, %Trellis.Error{code: :validation, message: m}} =
             Trellis.self_check(trellis, "x", mode: :sample)

    assert m =~ ":sample_size"

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.self_check(trellis, "x", mode: :sample, sample_size: 0)

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.self_check(trellis, "x", sample_size: 10)

    assert {:error, %Trellis.Error{code: :not_found}} = Trellis.self_check(trellis, "nope")
    assert {:ok, nil} = Trellis.self_check_job(trellis, 123_456)
    assert_raise Trellis.Error, fn -> Trellis.self_check!(trellis, "nope") end
    :ok = Trellis.shutdown(trellis)
  end
end
