defmodule Trellis.Engine.ChainAndFailureTest do
  # Engine v2 through the real port: await_converged waits through a chain
  # of transforms, and a row whose expression fails is charged to its
  # column (quarantine) while other transforms keep flowing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("chain")

    SimplePG.query!(pg, """
    CREATE TABLE items (id int PRIMARY KEY, qty int NOT NULL);
    INSERT INTO items SELECT g, 1 + g % 5 FROM generate_series(1, 300) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    %{trellis: trellis, pg: pg}
  end

  defp converge(trellis) do
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)
  end

  defp differences(pg, target, query) do
    SimplePG.scalar!(
      pg,
      "SELECT count(*) FROM ((TABLE #{target} EXCEPT ALL #{query}) " <>
        "UNION ALL (#{query} EXCEPT ALL TABLE #{target})) d"
    )
  end

  test "a write to the root is in the leaf of a chain when await_converged returns",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM doubled FROM items SELECT qty * 2 AS q2")
    converge(trellis)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM leaf FROM doubled SELECT q2 + 1 AS q3")
    converge(trellis)

    for round <- 1..3 do
      SimplePG.query!(pg, "UPDATE items SET qty = qty + 1 WHERE id % 3 = #{rem(round, 3)}")
      SimplePG.query!(pg, "INSERT INTO items VALUES (#{1000 + round}, #{round})")
      converge(trellis)
      assert differences(pg, "leaf", "SELECT id, qty * 2 + 1 FROM items") == "0"
    end
  end

  test "a failing row is charged to its column; other transforms flow; its fix heals it",
       %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.define(trellis, "TRANSFORM units FROM items SELECT 100 / qty AS unit")
    {:ok, _} = Trellis.define(trellis, "TRANSFORM copies FROM items SELECT qty AS qty")
    converge(trellis)

    SimplePG.query!(pg, "UPDATE items SET qty = 0 WHERE id = 42")
    # Charged, not retried: the wait returns.
    converge(trellis)

    {:ok, status} = Trellis.status(trellis, "units")
    assert %Trellis.Status{status: :live, drain_failure: nil, held_keys: 0} = status
    assert [%Trellis.ColumnStatus{state: :paused, paused_kind: :quarantine}] = status.columns
    assert differences(pg, "copies", "SELECT id, qty FROM items") == "0"

    assert differences(pg, "units", "SELECT id, CASE WHEN qty <> 0 THEN 100 / qty END FROM items") ==
             "0"

    # The write that fixes the row brings its value back; no row fails, so
    # the column is live again without a RESUME.
    SimplePG.query!(pg, "UPDATE items SET qty = 3 WHERE id = 42")
    converge(trellis)
    assert [%Trellis.ColumnStatus{state: :live}] = Trellis.status!(trellis, "units").columns
    assert differences(pg, "units", "SELECT id, 100 / qty FROM items") == "0"
  end
end
