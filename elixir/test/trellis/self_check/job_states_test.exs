defmodule Trellis.SelfCheckJobStatesTest do
  # The states a self-check job ends in besides :done (issue 31;
  # spec/engine.md "Self-check", "The job"), through the real port and a
  # real PostgreSQL: :cancelled by a PAUSE TRANSFORM of its target, :failed
  # when a worker claims a job whose transform is paused, and a finished
  # report listing the target's open drain failures.
  use ExUnit.Case, async: true

  import Trellis.Test.Eventually, only: [eventually: 1]

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 180_000

  defp start(url, opts) do
    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    Trellis.connect!([url: url] ++ opts)
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
  end

  # Polls the job until it has finished, one way or another.
  defp await_finished(trellis, id) do
    finished = &(&1.state in [:done, :failed, :cancelled])
    assert eventually(fn -> finished.(Trellis.self_check_job!(trellis, id)) end)
    Trellis.self_check_job!(trellis, id)
  end

  test "PAUSE TRANSFORM cancels the target's unfinished job, naming the pause; " <>
         "after RESUME the next check replaces it and runs" do
    %{url: url, pg: pg} = Database.open!("check_cancel")

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 50) g;
    """)

    # No drain worker anywhere: the job stays queued until one connects.
    idle = start(url, staging: true, drain_threads: 0)
    {:ok, _} = Trellis.define(idle, "TRANSFORM prices FROM widgets SELECT price AS price")
    {:ok, %Trellis.SelfCheckJob{id: id, state: :queued}} = Trellis.self_check(idle, "prices")

    {:ok, :paused} = Trellis.apply(idle, "PAUSE TRANSFORM prices")

    assert {:ok, %Trellis.SelfCheckJob{id: ^id, state: :cancelled, report: nil, error: error}} =
             Trellis.self_check_job(idle, id)

    assert %Trellis.Error{message: message} = error
    assert message =~ "cancelled by PAUSE TRANSFORM prices"
    assert message =~ "RESUME it, then start the check again"

    # A worker that connects now finds nothing to run: cancelled stays so.
    worker = start(url, drain_threads: 1)
    {:ok, {:resumed, ["prices"]}} = Trellis.apply(idle, "RESUME TRANSFORM prices")
    assert eventually(fn -> Trellis.status!(idle, "prices").status == :live end)
    converge(worker)
    assert %Trellis.SelfCheckJob{state: :cancelled} = Trellis.self_check_job!(idle, id)

    # A cancelled job is finished: the next check replaces it.
    {:ok, %Trellis.SelfCheckJob{id: new_id}} = Trellis.self_check(idle, "prices")
    assert new_id != id
    assert {:ok, nil} = Trellis.self_check_job(idle, id)

    assert %Trellis.SelfCheckJob{state: :done, error: nil, report: %{outcome: :clean}} =
             await_finished(idle, new_id)

    # A PAUSE leaves a finished job as it is.
    {:ok, :paused} = Trellis.apply(idle, "PAUSE TRANSFORM prices")
    assert %Trellis.SelfCheckJob{state: :done} = Trellis.self_check_job!(idle, new_id)
    :ok = Trellis.shutdown(worker)
    :ok = Trellis.shutdown(idle)
  end

  test "a job whose transform is paused when a worker claims it fails, saying to RESUME" do
    %{url: url, pg: pg} = Database.open!("check_failed")

    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price int);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 50) g;
    """)

    trellis = start(url, staging: true, drain_threads: 1)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    converge(trellis)
    {:ok, :paused} = Trellis.apply(trellis, "PAUSE TRANSFORM prices")

    # Started on a paused transform, the job is queued; the worker fails it.
    {:ok, %Trellis.SelfCheckJob{id: id, state: :queued}} = Trellis.self_check(trellis, "prices")

    assert %Trellis.SelfCheckJob{state: :failed, report: nil, error: %Trellis.Error{} = error} =
             await_finished(trellis, id)

    assert error.message =~ "the transform prices is paused"
    assert error.message =~ "RESUME it, then start the check again"
    :ok = Trellis.shutdown(trellis)
  end

  test "a finished report lists the target's open drain failures" do
    %{owner: owner, admin: admin} = db = Database.open_owned!("check_drain_failures")

    SimplePG.query!(owner, """
    CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
    INSERT INTO stock SELECT g, g FROM generate_series(1, 100) g;
    """)

    trellis = start(db.owner_url, staging: true, drain_threads: 1)

    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM copies FROM stock SELECT qty AS qty WHERE qty > 0")

    converge(trellis)

    {:ok, %{id: clean_id}} = Trellis.self_check(trellis, "copies")

    assert %{state: :done, report: %{outcome: :clean, drain_failures: []}} =
             await_finished(trellis, clean_id)

    # The drain can no longer write the target. The row written now is one
    # the WHERE leaves out, so target and recompute agree on it and the
    # check has nothing to wait for, while its page keeps failing.
    SimplePG.query!(admin, "REVOKE INSERT, UPDATE, DELETE ON copies FROM #{db.role}")
    SimplePG.query!(owner, "INSERT INTO stock VALUES (1000, 0)")
    assert eventually(fn -> Trellis.status!(trellis, "copies").drain_failure != nil end)

    {:ok, %{id: id}} = Trellis.self_check(trellis, "copies")

    assert %{state: :done, report: %Trellis.SelfCheckReport{} = report} =
             await_finished(trellis, id)

    assert %{outcome: :clean, rows_compared: 100, divergences: []} = report

    assert [%Trellis.DrainFailure{unit: :pages, sqlstate: "42501", failure_class: :other} = f] =
             report.drain_failures

    assert f.attempts >= 1 and f.message =~ "copies"
    :ok = Trellis.shutdown(trellis)
  end
end
