defmodule Trellis.GroupBy.LifecycleTest do
  # Every statement and read that works for a projection works for a GROUP BY
  # transform, through the real port: pause/resume of the transform and of
  # one aggregate column, ALTER ADD/DROP/ALTER COLUMN (with their hidden
  # state), request_backfill, status (no hidden column shows), definitions,
  # the definitions dump, and DROP.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  setup do
    %{url: url, pg: pg} = Database.open!("group_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int, note text);
    INSERT INTO orders SELECT g, g % 9, g, 'n' || g FROM generate_series(1, 300) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)

    {:ok, _} =
      Trellis.define(
        trellis,
        "TRANSFORM totals FROM orders SELECT customer_id, count(*) AS n, sum(amount) AS total " <>
          "GROUP BY customer_id"
      )

    converge!(trellis)
    %{trellis: trellis, pg: pg}
  end

  defp columns(pg, table) do
    SimplePG.scalar!(
      pg,
      "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute " <>
        "WHERE attrelid = '#{table}'::regclass AND attnum > 0 AND NOT attisdropped"
    )
  end

  defp eventually(fun, tries \\ 1500) do
    cond do
      fun.() -> true
      tries == 0 -> false
      true -> Process.sleep(20) && eventually(fun, tries - 1)
    end
  end

  test "ALTER ADD, ALTER and DROP COLUMN carry their hidden state", %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM totals ADD COLUMN avg(amount) AS mean")
    converge!(trellis)

    assert differences(
             pg,
             "SELECT customer_id, n, total, mean FROM totals",
             "SELECT customer_id, count(*), sum(amount), avg(amount) FROM orders GROUP BY 1"
           ) == "0"

    [_, ordinal] = Regex.run(~r/mean,__trellis_(\d+)_sum,__trellis_\1_n$/, columns(pg, "totals"))

    {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM totals ALTER COLUMN mean AS max(note)")
    SimplePG.query!(pg, "UPDATE orders SET note = 'z' WHERE id = 5")
    converge!(trellis)

    assert differences(
             pg,
             "SELECT customer_id, n, total, mean FROM totals",
             "SELECT customer_id, count(*), sum(amount), max(note) FROM orders GROUP BY 1"
           ) == "0"

    refute columns(pg, "totals") =~ "__trellis_#{ordinal}_"

    {:ok, _} = Trellis.apply(trellis, "ALTER TRANSFORM totals DROP COLUMN total")
    refute columns(pg, "totals") =~ "total"
    refute columns(pg, "totals") =~ "__trellis_2_"
    SimplePG.query!(pg, "DELETE FROM orders WHERE customer_id = 4")
    converge!(trellis)

    assert differences(
             pg,
             "SELECT customer_id, n, mean FROM totals",
             "SELECT customer_id, count(*), max(note) FROM orders GROUP BY 1"
           ) == "0"

    assert {:error, %Trellis.Error{code: :validation, message: message}} =
             Trellis.apply(trellis, "ALTER TRANSFORM totals DROP COLUMN customer_id")

    assert message =~ "group key"

    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.apply(trellis, "ALTER TRANSFORM totals ADD COLUMN amount * 2 AS doubled")

    assert {:ok, [definition]} = Trellis.definitions(trellis)
    assert definition.statement =~ "max(note) AS mean"
    refute definition.statement =~ "AS total"
  end

  test "pause and resume of the transform and of one column", %{trellis: trellis, pg: pg} do
    {:ok, _} = Trellis.apply(trellis, "PAUSE TRANSFORM totals")
    SimplePG.query!(pg, "UPDATE orders SET customer_id = 50 WHERE id <= 20")
    {:ok, %Trellis.Status{status: :paused}} = Trellis.status(trellis, "totals")
    {:ok, _} = Trellis.apply(trellis, "RESUME TRANSFORM totals")
    converge!(trellis)

    query = "SELECT customer_id, count(*), sum(amount) FROM orders GROUP BY 1"
    assert differences(pg, "SELECT customer_id, n, total FROM totals", query) == "0"

    {:ok, _} = Trellis.apply(trellis, "PAUSE TRANSFORM totals.total")
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1000 WHERE id <= 30")
    converge!(trellis)

    assert differences(
             pg,
             "SELECT customer_id, n FROM totals",
             "SELECT customer_id, count(*) FROM orders GROUP BY 1"
           ) == "0"

    assert differences(pg, "SELECT customer_id, n, total FROM totals", query) != "0"

    {:ok, status} = Trellis.status(trellis, "totals")
    assert Enum.map(status.columns, & &1.name) == ["n", "total"]
    assert Enum.find(status.columns, &(&1.name == "total")).state == :paused

    {:ok, _} = Trellis.apply(trellis, "RESUME TRANSFORM totals.total")
    converge!(trellis)
    assert differences(pg, "SELECT customer_id, n, total FROM totals", query) == "0"

    assert {:error, %Trellis.Error{code: :not_found}} =
             Trellis.apply(trellis, "PAUSE TRANSFORM totals.__trellis_rows")
  end

  test "request_backfill, dump and DROP", %{trellis: trellis, pg: pg} do
    SimplePG.query!(pg, "UPDATE totals SET n = -1")
    :ok = Trellis.request_backfill(trellis, "totals")

    assert eventually(fn ->
             differences(
               pg,
               "SELECT customer_id, n, total FROM totals",
               "SELECT customer_id, count(*), sum(amount) FROM orders GROUP BY 1"
             ) == "0"
           end)

    {:ok, dump} = Trellis.dump_definitions_sql(trellis)
    assert dump =~ "'group_by'"
    assert dump =~ "routed_columns"
    assert dump =~ "__trellis_rows"

    {:ok, _} = Trellis.apply(trellis, "PAUSE TRANSFORM totals")
    {:ok, _} = Trellis.apply(trellis, "DROP TRANSFORM totals")
    assert SimplePG.scalar!(pg, "SELECT to_regclass('totals') IS NULL") == "t"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.sources") == "0"
  end
end
