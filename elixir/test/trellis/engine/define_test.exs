defmodule Trellis.Engine.DefineTest do
  # define/2 as the guide promises it, through the real port: a define over
  # an empty table is :live when it returns, and a define stuck behind a
  # lock on its own source delays nothing else.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Eventually, only: [eventually: 1]

  @moduletag :port
  @moduletag timeout: 120_000

  setup do
    %{url: url, pg: pg} = Database.open!("define")
    %{url: url, pg: pg}
  end

  test "a define over a table with no rows is :live when define/2 returns", %{url: url, pg: pg} do
    SimplePG.query!(pg, "CREATE TABLE widgets (id int PRIMARY KEY, price numeric)")
    # No workers: nothing but define itself can build the target.
    trellis = Trellis.connect!(url: url, staging: false, drain_threads: 0)
    :ok = Trellis.migrate(trellis)

    {:ok, _} =
      Trellis.define(trellis, "TRANSFORM widget_prices FROM widgets SELECT price AS price")

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(trellis, "widget_prices")
  end

  test "an unrelated transform stays fresh while a define waits on its locked source",
       %{url: url, pg: pg} do
    SimplePG.query!(pg, """
    CREATE TABLE widgets (id int PRIMARY KEY, price numeric);
    INSERT INTO widgets SELECT g, g FROM generate_series(1, 100) g;
    CREATE TABLE gadgets (id int PRIMARY KEY, v int);
    INSERT INTO gadgets VALUES (1, 1);
    """)

    definer = Trellis.connect!(url: url)
    :ok = Trellis.migrate(definer)
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    {:ok, _} = Trellis.define(trellis, "TRANSFORM prices FROM widgets SELECT price AS price")
    :ok = Trellis.await_converged(trellis, Trellis.watermark_token!(trellis), timeout_ms: 30_000)

    # A transaction left open after writing to gadgets.
    holder = SimplePG.connect!(url)
    SimplePG.query!(holder, "BEGIN; UPDATE gadgets SET v = 2")

    define =
      Task.async(fn -> Trellis.define(definer, "TRANSFORM g FROM gadgets SELECT v AS v") end)

    assert eventually(fn -> blocked_on?(pg, "gadgets") end)

    for price <- 1001..1003 do
      SimplePG.query!(pg, "UPDATE widgets SET price = #{price} WHERE id = 1")
      token = Trellis.watermark_token!(trellis)
      assert :ok = Trellis.await_converged(trellis, token, timeout_ms: 10_000)
      assert SimplePG.scalar!(pg, "SELECT price FROM prices WHERE id = 1") == "#{price}"
    end

    assert Task.yield(define, 0) == nil
    SimplePG.query!(holder, "COMMIT")
    assert {:ok, _} = Task.await(define, 30_000)
    SimplePG.close(holder)
  end

  defp blocked_on?(pg, table) do
    SimplePG.scalar!(pg, """
    SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE NOT l.granted AND c.relname = '#{table}'
    """) != "0"
  end
end
