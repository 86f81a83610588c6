defmodule Trellis.Logical.EarlyCommitTest do
  # A replication slot hands a transaction over once its commit record is
  # flushed, but the writer becomes visible to new snapshots only after
  # that (spec/engine.md "Capture feeds", "Commits the slot hands over
  # early"). A synchronous standby that never answers holds a writer in
  # that gap for as long as the test likes: its commit is flushed and
  # decodable, and no other session sees it until its wait is cancelled.
  # Staged in the gap, the change was drained from a snapshot without it
  # and the target kept the old rows for good.
  use ExUnit.Case, async: false

  alias Trellis.Test.SimplePG
  alias Trellis.TestCluster
  import Trellis.Test.Eventually, only: [eventually: 1]
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 180_000

  test "a write the slot hands over before it is visible reaches its targets once it is" do
    {:ok, testkit} = TestCluster.testkit_path()
    # Not durable: every session commits without waiting for a standby
    # unless it asks to.
    {holder, url} = TestCluster.start!(testkit, ["--logical"])
    on_exit(fn -> Process.exit(holder, :kill) end)
    pg = SimplePG.connect!(url)
    SimplePG.query!(pg, "CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)")
    SimplePG.query!(pg, "INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 10) g")

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    a = Trellis.connect!(url: url, staging: true, drain_threads: 1, capture: :logical)

    {:ok, {:transform_defined, _}} =
      Trellis.define(a, "TRANSFORM balances FROM accounts SELECT balance AS balance")

    converge!(a)
    SimplePG.query!(pg, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
    SimplePG.query!(pg, "SELECT pg_reload_conf()")

    for round <- 1..3 do
      writer = SimplePG.connect!(url)
      SimplePG.query!(writer, "SET synchronous_commit = on")
      pid = SimplePG.scalar!(writer, "SELECT pg_backend_pid()")

      task =
        Task.async(fn ->
          SimplePG.query!(
            writer,
            "UPDATE accounts SET balance = balance + #{round} WHERE id <= 3"
          )
        end)

      assert eventually(fn ->
               SimplePG.scalar!(
                 pg,
                 "SELECT count(*) FROM pg_stat_activity WHERE pid = #{pid} AND wait_event = 'SyncRep'"
               ) == "1"
             end)

      # Flushed and decodable now: staging reads the slot every few
      # milliseconds, and a drain would follow within tens of them.
      Process.sleep(1_000)

      assert SimplePG.scalar!(pg, "SELECT sum(balance) FROM accounts WHERE id <= 3") ==
               "#{3 * div(round * (round - 1), 2)}"

      SimplePG.query!(pg, "SELECT pg_cancel_backend(#{pid})")
      Task.await(task, 30_000)
      SimplePG.close(writer)
      converge!(a)

      assert differences(pg, "TABLE balances", "SELECT id, balance FROM accounts") == "0",
             "round #{round}"
    end

    Trellis.shutdown(a)
  end
end
