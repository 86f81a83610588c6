defmodule Trellis.BatchPaths.StatusTest do
  # The batch path of each drained batch, through the real port: a small
  # write goes by its keys (:recompute) or its groups' deltas (:delta), an
  # UPDATE of every row by a :rebuild of the whole target, and
  # Trellis.status/2 says which, with the batch's rows, time and reason and
  # each path's cost per row. The target equals its query after each.
  # The tables are small (2,000 rows), so that any staging batch of the
  # UPDATE is a large part of the target whatever the machine measures.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  import Trellis.Test.Eventually, only: [eventually: 1]

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 180_000

  setup do
    %{url: url, pg: pg} = Database.open!("batch_paths")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, g int NOT NULL, amount int NOT NULL);
    INSERT INTO orders SELECT i, i % 50, i % 1000 FROM generate_series(1, 2000) i;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM doubled FROM orders SELECT amount * 2 AS twice")

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM totals FROM orders SELECT g, count(*) AS n, sum(amount) AS total GROUP BY g"
      )

    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))
    %{trellis: trellis, pg: pg}
  end

  defp converge(trellis),
    do: :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis))

  defp differences(pg, target, query) do
    pg
    |> SimplePG.scalar!(
      "SELECT count(*) FROM ((#{target} EXCEPT ALL #{query}) UNION ALL (#{query} EXCEPT ALL #{target})) d"
    )
    |> String.to_integer()
  end

  defp last_path(trellis, name) do
    {:ok, %Trellis.Status{last_batch: last}} = Trellis.status(trellis, name)
    last && last.path
  end

  test "a small write goes by keys or deltas, an UPDATE of every row by a rebuild",
       %{trellis: trellis, pg: pg} do
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id = 7")
    converge(trellis)
    assert eventually(fn -> last_path(trellis, "doubled") == :recompute end)
    assert eventually(fn -> last_path(trellis, "totals") == :delta end)

    {:ok, status} = Trellis.status(trellis, "doubled")

    assert %Trellis.LastBatch{path: :recompute, rows: 1, ms: ms, at: %DateTime{}, reason: reason} =
             status.last_batch

    assert ms > 0
    assert reason =~ "recompute"

    assert [%Trellis.PathCost{path: :recompute, batches: batches, us_per_row: us}] =
             status.path_costs

    assert batches >= 1 and us > 0

    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1")
    converge(trellis)

    for name <- ["doubled", "totals"] do
      {:ok, status} = Trellis.status(trellis, name)

      assert Enum.any?(status.path_costs, &(&1.path == :rebuild and &1.batches >= 1)),
             "#{name}: #{inspect(status.path_costs)} #{inspect(status.last_batch)}"
    end

    assert differences(pg, "SELECT id, twice FROM doubled", "SELECT id, amount * 2 FROM orders") ==
             0

    assert differences(
             pg,
             "SELECT g, n, total FROM totals",
             "SELECT g, count(*), sum(amount) FROM orders GROUP BY g"
           ) == 0
  end
end
