defmodule Trellis.Chains.ChainStageWakeTest do
  # A chain defined while the workers run gets its upstream's writes from
  # the upstream's very first drain: the drain's claim asks the catalog
  # whether another transform reads the target it drains, so no refresh
  # interval (a drain worker once re-read that list every 5 s) delays the
  # hand-off (the drain stages its writes for the reader, or wakes staging
  # with logical capture). Counted (Counters.handoffs/1), not timed.
  use ExUnit.Case, async: false

  alias Trellis.Test.{Counters, Database, SimplePG, Targets}

  @moduletag :port
  @moduletag timeout: 120_000

  @rounds 3

  test "each drain of a chain's upstream defined a moment ago hands its writes on to the next link" do
    %{url: url, pg: pg} = Database.open!("chain_stage_wake")

    SimplePG.query!(pg, """
    CREATE TABLE gadgets (id int PRIMARY KEY, price int NOT NULL);
    CREATE TABLE widgets (id int PRIMARY KEY, price int NOT NULL);
    """)

    Trellis.Test.Handles.with_handle(url, [], fn migrator -> :ok = Trellis.migrate(migrator) end)
    handle = Trellis.Test.Handles.connect!(url, staging: true, drain_threads: 1)

    # The workers run and have drained a lone transform (so each drain
    # worker has taken its first steps) before the chain exists.
    {:ok, _} = Trellis.define(handle, "TRANSFORM widget_prices FROM widgets SELECT price AS p")
    SimplePG.query!(pg, "INSERT INTO widgets VALUES (1, 1)")
    Targets.converge!(handle)
    before = Counters.handoffs(handle)

    {:ok, _} = Trellis.define(handle, "TRANSFORM gadget_prices FROM gadgets SELECT price AS p")

    {:ok, _} =
      Trellis.define(handle, "TRANSFORM gadget_totals FROM gadget_prices SELECT sum(p) AS total")

    for round <- 1..@rounds do
      SimplePG.query!(pg, "INSERT INTO gadgets VALUES (#{round}, #{round * 10})")
      Targets.converge!(handle)
    end

    # Each round's write reached gadget_totals through a drain of
    # gadget_prices, which handed it on.
    assert Counters.handoffs(handle) - before >= @rounds

    assert Targets.differences(
             pg,
             "SELECT total FROM gadget_totals",
             "SELECT sum(price) FROM gadgets"
           ) == "0"
  end
end
