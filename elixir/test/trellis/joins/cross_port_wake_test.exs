defmodule Trellis.Joins.CrossPortWakeTest do
  # Wake-ups across ports (LISTEN/NOTIFY): in a fleet whose staging runs in
  # one handle and whose drains run only in the other, a grouped join (two
  # stages: its join, then its groups) converges, and the drain handle was
  # woken by the staging handle's batches. The join stage's writes reach
  # the groups without the staging handle: its drain stages them in its own
  # transaction (trigger capture); with logical capture they come through
  # the slot, so the drain handle's commits of the join stage wake the
  # staging handle. Without the wakes each crossing waits for a poll.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Counters, Database, Handles, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  @statement "TRANSFORM tier_totals FROM orders o JOIN customers c ON o.buyer_id = c.id " <>
               "SELECT c.tier, count(*) AS n, sum(o.amount) AS total GROUP BY c.tier"
  @query "SELECT c.tier, count(*), sum(o.amount) FROM orders o " <>
           "JOIN customers c ON o.buyer_id = c.id GROUP BY c.tier"

  # The handle's count of wakes of `role` sent by another handle.
  defp remote_wakes(handle, role),
    do: Counters.value(handle, "trellis_remote_wakes_total", ~s(,role="#{role}"))

  test "a grouped join converges with staging in one handle and drains in the other, woken across",
       %{} do
    %{url: url, pg: pg} = Database.open!("cross_port_wake")

    SimplePG.query!(pg, """
    CREATE TABLE customers (id int PRIMARY KEY, tier text);
    CREATE TABLE orders (id int PRIMARY KEY, buyer_id int, amount numeric);
    INSERT INTO customers SELECT g, 't' || (g % 3) FROM generate_series(1, 20) g;
    """)

    # Defined before the workers start (a drain's claim asks whether others
    # read its target, and wakes staging only for those).
    Handles.with_handle(url, [], fn definer ->
      :ok = Trellis.migrate(definer)
      {:ok, {:transform_defined, _}} = Trellis.define(definer, @statement)
    end)

    {stager, drainer} = Handles.fleet!(url, [staging: true, drain_threads: 0], drain_threads: 1)
    on_exit(fn -> Enum.each([stager, drainer], &Trellis.shutdown/1) end)

    converge = fn ->
      assert :ok == Trellis.await_converged(drainer, Trellis.watermark_token!(drainer))

      assert SimplePG.scalar!(pg, """
             SELECT count(*) FROM ((SELECT tier, n, total FROM tier_totals EXCEPT ALL #{@query})
                                   UNION ALL (#{@query} EXCEPT ALL SELECT tier, n, total FROM tier_totals)) d
             """) == "0"
    end

    converge.()
    staging_before = remote_wakes(stager, "staging")
    drain_before = remote_wakes(drainer, "drain")
    handoffs_before = Counters.handoffs(drainer)

    for round <- 1..5 do
      SimplePG.query!(
        pg,
        "INSERT INTO orders SELECT g, g % 20 + 1, g FROM generate_series(#{round * 100}, #{round * 100 + 49}) g"
      )

      converge.()
    end

    SimplePG.query!(pg, "UPDATE customers SET tier = 'moved' WHERE id <= 5")
    converge.()

    # The two handles are one instance, so a render adds their counters up
    # (Trellis.Metrics); still, only the drain handle listens for `drain`
    # and only the staging handle for `staging`. Staging made pages in one
    # handle: the other handle's drains were woken.
    assert remote_wakes(drainer, "drain") > drain_before

    # The join stage's drains in the drain handle handed its writes on for
    # the groups: staged them themselves, or (logical capture, through the
    # slot) woke the staging handle across.
    assert Counters.handoffs(drainer) > handoffs_before

    if Application.get_env(:trellis_pg, :capture) == :logical do
      assert remote_wakes(stager, "staging") > staging_before
    end
  end
end
