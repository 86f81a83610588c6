defmodule Trellis.SelfCheck.CompositeTest do
  # Self-check of a transform of several stages (spec/engine.md "Stages",
  # "Self-check"): a GROUP BY over a join runs as a hidden join stage and the
  # grouping over it, and the check compares each stage with its own
  # definition, then the grouping, in one report. A join stage tampered with
  # is found at its own row, named as a stage, beside the group it made
  # wrong; the fix rebuilds every stage and the next check is clean.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 300_000

  setup do
    %{url: url, pg: pg} = Database.open!("self_check_composite")

    SimplePG.query!(pg, """
    CREATE TABLE customers (id int PRIMARY KEY, name text);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    CREATE INDEX ON orders (customer_id);
    INSERT INTO customers SELECT g, 'c' || (g % 7) FROM generate_series(1, 50) g;
    INSERT INTO orders SELECT g, 1 + g % 50, g % 13 FROM generate_series(1, 600) g;
    """)

    migrator = Trellis.connect!(url: url)
    :ok = Trellis.migrate(migrator)
    :ok = Trellis.shutdown(migrator)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM totals FROM orders o JOIN customers c ON o.customer_id = c.id " <>
          "SELECT c.name, sum(o.amount) AS total, count(*) AS n GROUP BY c.name"
      )

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
    %{pg: pg, trellis: trellis}
  end

  defp check(trellis, opts \\ []) do
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(trellis, "totals", opts)
    await_job(trellis, id, 3000)
  end

  defp await_job(trellis, id, left) do
    job = Trellis.self_check_job!(trellis, id)

    cond do
      job.state in [:done, :failed, :cancelled] -> job
      left == 0 -> flunk("self-check job #{id} did not finish: #{inspect(job)}")
      true -> Process.sleep(50) && await_job(trellis, id, left - 1)
    end
  end

  test "a tampered join stage is found, named by its stage, and fixed by one backfill",
       %{pg: pg, trellis: trellis} do
    # Every stage's rows are compared: the join stage's 600 and the 7 groups.
    assert %{state: :done, report: %{outcome: :clean, rows_compared: compared}} = check(trellis)
    assert compared >= 600 + 7

    stage =
      SimplePG.scalar!(
        pg,
        "SELECT target_name FROM trellis.transforms WHERE owner_id IS NOT NULL"
      )

    # One joined row changed behind the engine's back; the grouping follows
    # the change (the stage is its source).
    SimplePG.query!(
      pg,
      ~s{UPDATE trellis."#{stage}" SET "o.amount" = "o.amount" + 1000 WHERE id = 7}
    )

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)

    assert %{state: :done, report: report} = check(trellis)
    assert %{outcome: :diverged, divergence_count: 2, divergences: [in_stage, in_group]} = report
    # The stage's row, by the stage's key (order 7), then the group it feeds
    # (order 7 is customer 8's, named c1).
    assert %{kind: :differs, key: ["7"]} = in_stage
    assert in_stage.fix =~ ~s{Trellis.request_backfill(handle, "totals")}
    assert in_stage.fix =~ "stage 1"
    assert %{kind: :differs, key: ["c1"], columns: [%{name: "total"}]} = in_group
    assert in_group.fix == ~s{Trellis.request_backfill(handle, "totals")}

    assert :ok = Trellis.request_backfill(trellis, "totals")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 60_000)
    assert %{state: :done, report: %{outcome: :clean}} = check(trellis)

    assert %{state: :done, report: %{outcome: :clean}} =
             check(trellis, mode: :sample, sample_size: 50)

    Trellis.shutdown(trellis)
  end
end
