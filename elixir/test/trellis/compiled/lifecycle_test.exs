defmodule Trellis.Compiled.LifecycleTest do
  # A statement with HAVING and expressions over aggregates over a join runs
  # as three catalog transforms (a hidden join, the hidden grouping over its
  # target, and the user's projection over the grouping's target), and a
  # user sees exactly one: definitions and the dump give the statement as
  # written, status the worst state of the three, PAUSE/RESUME/DROP,
  # request_backfill and self-check act on the one name, no hidden part can
  # be addressed alone, and ALTER is refused with the fix.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM segment_stats FROM orders o JOIN customers c ON o.customer_id = c.id " <>
               "SELECT c.segment, count(*) AS n, sum(o.amount) / nullif(count(*), 0) AS mean " <>
               "WHERE o.amount > 0 GROUP BY c.segment HAVING sum(o.amount) > 300"
  @query "SELECT c.segment, count(*), sum(o.amount) / nullif(count(*), 0) FROM orders o " <>
           "JOIN customers c ON o.customer_id = c.id WHERE o.amount > 0 GROUP BY c.segment " <>
           "HAVING sum(o.amount) > 300"

  setup do
    %{url: url, pg: pg} = Database.open!("compiled_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE customers (id int PRIMARY KEY, segment text);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    INSERT INTO customers SELECT g, CASE WHEN g % 4 = 0 THEN NULL ELSE 's' || g % 3 END
      FROM generate_series(1, 30) g;
    INSERT INTO orders SELECT g, 1 + g % 30, g % 9 FROM generate_series(1, 300) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp equal!(pg) do
    assert differences(pg, "SELECT segment, n, mean FROM segment_stats", @query) == "0"
  end

  defp hidden_parts(pg) do
    SimplePG.query!(pg, """
    SELECT s.target_name FROM trellis.transforms s
    JOIN trellis.transforms u ON s.owner_id = u.id AND u.target_name = 'segment_stats'
    ORDER BY s.stage_order
    """)
    |> Enum.map(&hd/1)
  end

  test "definitions, status, the dump and self-check show one transform", %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "segment_stats"}} = Trellis.define(t, @statement)
    converge!(t)
    equal!(pg)

    # Three stages in order: the join, the grouping, then the user's.
    assert [join, group] = hidden_parts(pg)
    assert join =~ ~r/^__trellis_join_\d+$/
    assert group =~ ~r/^__trellis_group_\d+$/

    assert {:ok, [%Trellis.Definition{name: "segment_stats", statement: shown, status: :live}]} =
             Trellis.definitions(t)

    assert shown =~ "sum(o.amount) / nullif(count(*), 0) AS mean"
    assert shown =~ "GROUP BY c.segment HAVING sum(o.amount) > 300"
    refute shown =~ "__trellis"

    assert {:ok, %Trellis.Status{status: :live, columns: columns}} =
             Trellis.status(t, "segment_stats")

    assert Enum.map(columns, & &1.name) == ["n", "mean"]

    # The statement once, as written (and every stage's catalog rows, which
    # a restore needs, as for a grouped join).
    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "HAVING sum(o.amount) > 300")) == 2

    for hidden <- [join, group],
        result <- [
          Trellis.status(t, hidden),
          Trellis.request_backfill(t, hidden),
          Trellis.apply(t, "PAUSE TRANSFORM #{hidden}"),
          Trellis.apply(t, "DROP TRANSFORM #{hidden}")
        ] do
      assert {:error, %Trellis.Error{code: :not_found, message: message}} = result
      assert message =~ "hidden stage of transform segment_stats"
      assert message =~ "address segment_stats instead"
    end

    # Two of the four segments pass the HAVING (s0 and s2; s1 and the NULL
    # segment do not).
    assert SimplePG.scalar!(
             pg,
             "SELECT string_agg(segment, ',' ORDER BY segment) FROM segment_stats"
           ) ==
             "s0,s2"

    for opts <- [[mode: :full], [mode: :sample, sample_size: 10]] do
      {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "segment_stats", opts)
      assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id), inspect(opts)
    end

    # A wrong row of the user's target is found.
    SimplePG.query!(pg, "UPDATE segment_stats SET n = -1 WHERE segment = 's0'")
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "segment_stats", mode: :full)

    assert %{state: :done, report: %{outcome: :diverged, divergence_count: 1}} =
             await_self_check!(t, id)
  end

  test "pause, resume, backfill and drop act on all three parts; ALTER is refused",
       %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)
    converge!(t)
    [join, group] = hidden_parts(pg)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM segment_stats")
    assert {:ok, %Trellis.Status{status: :paused}} = Trellis.status(t, "segment_stats")

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms WHERE status = 'paused'") ==
             "3"

    # Groups cross the HAVING threshold both ways while it is paused.
    SimplePG.query!(pg, "UPDATE customers SET segment = 's9' WHERE id < 12")
    SimplePG.query!(pg, "UPDATE orders SET amount = amount * 3 WHERE customer_id % 3 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM segment_stats")
    converge!(t)
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "segment_stats")
    equal!(pg)

    SimplePG.query!(pg, "DELETE FROM orders WHERE id % 4 = 0")
    :ok = Trellis.request_backfill(t, "segment_stats")
    converge!(t)
    assert {:ok, [%Trellis.Definition{status: :live}]} = Trellis.definitions(t)
    equal!(pg)

    for alter <- [
          "ALTER TRANSFORM segment_stats ADD COLUMN c.segment AS again",
          "ALTER TRANSFORM segment_stats DROP COLUMN n"
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.apply(t, alter)

      assert message =~ "ALTER TRANSFORM cannot change transform segment_stats"
      assert message =~ "DROP TRANSFORM it and define it again"
    end

    assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
             Trellis.apply(t, "ALTER TRANSFORM segment_stats ADD COLUMN max(o.amount) + 1 AS m")

    assert message =~ "column computed over aggregates"

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM segment_stats")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM segment_stats")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.sources") == "0"

    for table <- ["trellis.#{join}", "trellis.#{group}", "public.segment_stats"] do
      assert SimplePG.scalar!(pg, "SELECT to_regclass('#{table}') IS NULL") == "t"
    end

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") ==
             "0"
  end

  test "a whole-table expression and a HAVING over one table", %{trellis: t, pg: pg} do
    {:ok, _} =
      Trellis.define(
        t,
        "TRANSFORM ratio FROM orders SELECT sum(amount) / nullif(count(*), 0) AS r, " <>
          "count(*) AS n HAVING count(*) > 0"
      )

    {:ok, _} =
      Trellis.define(
        t,
        "TRANSFORM big FROM orders SELECT customer_id, sum(amount) AS total " <>
          "GROUP BY customer_id HAVING sum(amount) BETWEEN 30 AND 45"
      )

    converge!(t)

    check = fn ->
      assert differences(
               pg,
               "SELECT r, n FROM ratio",
               "SELECT sum(amount) / nullif(count(*), 0), count(*) FROM orders HAVING count(*) > 0"
             ) == "0"

      assert differences(
               pg,
               "SELECT customer_id, total FROM big",
               "SELECT customer_id, sum(amount) FROM orders GROUP BY customer_id " <>
                 "HAVING sum(amount) BETWEEN 30 AND 45"
             ) == "0"
    end

    check.()
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 7 = 0")
    SimplePG.query!(pg, "UPDATE orders SET customer_id = NULL WHERE id % 11 = 0")
    converge!(t)
    check.()
    # Every row gone: the whole-table row no longer passes HAVING.
    SimplePG.query!(pg, "DELETE FROM orders")
    converge!(t)
    check.()
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM ratio") == "0"
  end
end
