defmodule Trellis.Joins.GroupByJoinLifecycleTest do
  # A GROUP BY over a join is two catalog transforms (a hidden join and the
  # grouping over its target), and a user sees exactly one: definitions,
  # status (the worse state of both, the join's index gaps), the dump (the
  # user's statement once), PAUSE/RESUME/DROP, request_backfill and ALTER all
  # act on the one name, and the hidden part cannot be addressed alone.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, JoinWorkload, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @join "FROM orders JOIN customers ON orders.customer_id = customers.id " <>
          "LEFT JOIN regions ON customers.region_id = regions.id"
  @statement "TRANSFORM region_revenue #{@join} SELECT regions.label, " <>
               "sum(orders.amount) AS revenue, count(*) AS n WHERE orders.amount > 2 " <>
               "GROUP BY regions.label"

  setup do
    %{url: url, pg: pg} = Database.open!("group_join_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, label text);
    CREATE TABLE customers (id int PRIMARY KEY, name text, region_id int);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int, amount int);
    INSERT INTO regions VALUES (1, 'north'), (2, 'south');
    INSERT INTO customers SELECT g, 'c' || g, 1 + g % 3 FROM generate_series(1, 30) g;
    INSERT INTO orders SELECT g, 1 + g % 30, g % 7 FROM generate_series(1, 300) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp equal!(pg, select \\ "label, revenue, n", query \\ nil) do
    query =
      query ||
        "SELECT regions.label, sum(orders.amount), count(*) #{@join} " <>
          "WHERE orders.amount > 2 GROUP BY regions.label"

    assert differences(pg, "SELECT #{select} FROM region_revenue", query) == "0"
  end

  test "definitions, status and the dump show one transform", %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "region_revenue"}} = Trellis.define(t, @statement)
    converge!(t)
    equal!(pg)

    assert {:ok, [%Trellis.Definition{name: "region_revenue", statement: shown}]} =
             Trellis.definitions(t)

    assert shown =~ "JOIN customers"
    assert shown =~ "GROUP BY regions.label"

    assert {:ok, %Trellis.Status{status: :live, columns: columns, source_index_gaps: gaps}} =
             Trellis.status(t, "region_revenue")

    assert Enum.map(columns, & &1.name) == ["revenue", "n"]
    # The join's own lookups (no index on orders.customer_id,
    # customers.region_id), nothing on the hidden target.
    assert Enum.map(gaps, &{&1.role, &1.table}) |> Enum.sort() == [
             {:join_from, "public.customers"},
             {:join_from, "public.orders"}
           ]

    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "GROUP BY regions.label")) == 2

    # The hidden part: present, and not addressable.
    hidden = JoinWorkload.hidden_join(pg)
    assert hidden =~ ~r/^__trellis_join_\d+$/

    for result <- [
          Trellis.status(t, hidden),
          Trellis.request_backfill(t, hidden),
          Trellis.apply(t, "PAUSE TRANSFORM #{hidden}"),
          Trellis.apply(t, "DROP TRANSFORM #{hidden}"),
          Trellis.apply(t, "ALTER TRANSFORM #{hidden} DROP COLUMN \"orders.amount\"")
        ] do
      assert {:error, %Trellis.Error{code: :not_found, message: message}} = result
      assert message =~ "address region_revenue instead"
    end
  end

  test "pause, resume, backfill, alter and drop act on both parts", %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)
    converge!(t)
    hidden = JoinWorkload.hidden_join(pg)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM region_revenue")
    assert {:ok, %Trellis.Status{status: :paused}} = Trellis.status(t, "region_revenue")

    assert SimplePG.scalar!(
             pg,
             "SELECT count(*) FROM trellis.transforms WHERE status = 'paused'"
           ) == "2"

    SimplePG.query!(pg, "UPDATE customers SET region_id = 2 WHERE id < 10")
    SimplePG.query!(pg, "UPDATE regions SET label = 'east' WHERE id = 2")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM region_revenue")
    converge!(t)
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "region_revenue")
    equal!(pg)

    # A column the join carries: added and built.
    {:ok, _} =
      Trellis.apply(t, "ALTER TRANSFORM region_revenue ADD COLUMN max(orders.amount) AS top")

    converge!(t)

    equal!(
      pg,
      "label, revenue, n, top",
      "SELECT regions.label, sum(orders.amount), count(*), max(orders.amount) #{@join} " <>
        "WHERE orders.amount > 2 GROUP BY regions.label"
    )

    # One it does not: the join carries it first, then the group adds it
    # (group_by_join_alter_test.exs has this under writers, and refusals).
    {:ok, _} =
      Trellis.apply(t, "ALTER TRANSFORM region_revenue ADD COLUMN max(customers.name) AS who")

    converge!(t)

    equal!(
      pg,
      "label, revenue, n, top, who",
      "SELECT regions.label, sum(orders.amount), count(*), max(orders.amount), " <>
        "max(customers.name) #{@join} WHERE orders.amount > 2 GROUP BY regions.label"
    )

    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM region_revenue DROP COLUMN n")

    {:ok, [%Trellis.Definition{statement: shown}]} = Trellis.definitions(t)
    assert shown =~ "max(orders.amount) AS top"
    assert shown =~ "max(customers.name) AS who"
    refute shown =~ "AS n"

    # DROP COLUMN leaves the join's columns (another aggregate may read one).
    {:ok, _} = Trellis.apply(t, "ALTER TRANSFORM region_revenue DROP COLUMN who")

    assert SimplePG.scalar!(
             pg,
             "SELECT count(*) FROM pg_attribute WHERE attrelid = 'trellis.#{hidden}'::regclass " <>
               "AND attname = 'customers.name' AND NOT attisdropped"
           ) == "1"

    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 5 = 0")
    :ok = Trellis.request_backfill(t, "region_revenue")
    converge!(t)

    equal!(
      pg,
      "label, revenue, top",
      "SELECT regions.label, sum(orders.amount), max(orders.amount) #{@join} " <>
        "WHERE orders.amount > 2 GROUP BY regions.label"
    )

    # DROP wants it paused, then takes both parts and every capture.
    assert {:error, %Trellis.Error{code: :validation}} =
             Trellis.apply(t, "DROP TRANSFORM region_revenue")

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM region_revenue")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM region_revenue")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.sources") == "0"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('trellis.#{hidden}') IS NULL") == "t"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('public.region_revenue') IS NULL") == "t"

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trellis%'") ==
             "0"
  end

  test "a capture disruption under the join pauses the pair; RESUME rebuilds both",
       %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)
    converge!(t)

    SimplePG.query!(pg, """
    ALTER TABLE customers DISABLE TRIGGER ALL;
    UPDATE customers SET region_id = 1 WHERE id % 2 = 0;
    ALTER TABLE customers ENABLE TRIGGER ALL;
    """)

    {:ok, _} = Trellis.detect_capture_disruptions(t)

    assert {:ok, %Trellis.Status{status: :paused, paused_kind: :disruption}} =
             Trellis.status(t, "region_revenue")

    assert {:ok, [%Trellis.Definition{name: "region_revenue", status: :paused}]} =
             Trellis.definitions(t)

    assert {:ok, ["region_revenue"]} = Trellis.TestSupport.resume_capture_disruptions(t)
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "region_revenue")
    equal!(pg)
  end

  test "self_check of the one name checks the groups; a planted divergence is found",
       %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)
    converge!(t)

    for opts <- [[mode: :full], [mode: :sample, sample_size: 10]] do
      {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "region_revenue", opts)
      assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id), inspect(opts)
    end

    SimplePG.query!(pg, "UPDATE region_revenue SET revenue = -1 WHERE label = 'north'")
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "region_revenue", mode: :full)

    assert %{state: :done, report: %{outcome: :diverged, divergence_count: 1}} =
             await_self_check!(t, id)

    # The check is end to end and stage by stage: a wrong join row (which
    # the grouping follows) is a divergence of the join stage, at its row,
    # and of the group it feeds.
    :ok = Trellis.request_backfill(t, "region_revenue")
    converge!(t)

    SimplePG.query!(
      pg,
      ~s{UPDATE trellis.#{JoinWorkload.hidden_join(pg)} SET "orders.amount" = 1000 WHERE id = 5}
    )

    converge!(t)
    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "region_revenue", mode: :full)

    assert %{state: :done, report: %{outcome: :diverged, divergence_count: 2} = report} =
             await_self_check!(t, id)

    assert [%{key: ["5"], fix: stage_fix}, %{fix: group_fix}] = report.divergences
    assert stage_fix =~ "stage 1"
    refute group_fix =~ "stage"
  end

  test "a 63-byte hostile name and long column names", %{trellis: t, pg: pg} do
    # 63 bytes: quotes, a dollar quote, a dot, multibyte characters.
    name = ~s(a"$$.') <> String.duplicate("é", 20) <> String.duplicate("z", 17)
    assert byte_size(name) == 63
    quoted = ~s(") <> String.replace(name, ~s("), ~s("")) <> ~s(")
    long = String.duplicate("c", 60)
    SimplePG.query!(pg, "ALTER TABLE customers RENAME COLUMN name TO #{long}")

    statement =
      "TRANSFORM #{quoted} FROM orders o JOIN customers #{String.duplicate("k", 50)} " <>
        "ON o.customer_id = #{String.duplicate("k", 50)}.id " <>
        "SELECT #{String.duplicate("k", 50)}.#{long} AS who, sum(o.amount) AS total " <>
        "GROUP BY #{String.duplicate("k", 50)}.#{long}"

    assert {:ok, {:transform_defined, _}} = Trellis.define(t, statement)
    SimplePG.query!(pg, "UPDATE customers SET #{long} = 'x' || id WHERE id < 5")
    converge!(t)

    assert differences(
             pg,
             "SELECT who, total FROM public.#{quoted}",
             "SELECT c.#{long}, sum(o.amount) FROM orders o JOIN customers c " <>
               "ON o.customer_id = c.id GROUP BY c.#{long}"
           ) == "0"

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, quoted)
    assert {:ok, [%Trellis.Definition{}]} = Trellis.definitions(t)

    # An ALTER reading a column the join does not carry, with a hostile
    # 60-byte name: carried under a hashed name, built, equal.
    odd = ~s("d""$$.') <> String.duplicate("d", 54) <> ~s(")
    SimplePG.query!(pg, "ALTER TABLE customers ADD COLUMN #{odd} int")
    SimplePG.query!(pg, "UPDATE customers SET #{odd} = id % 4")

    {:ok, _} =
      Trellis.apply(
        t,
        "ALTER TRANSFORM #{quoted} ADD COLUMN sum(#{String.duplicate("k", 50)}.#{odd}) " <>
          ~s(AS "s""$$")
      )

    converge!(t)

    assert differences(
             pg,
             ~s(SELECT who, total, "s""$$" FROM public.#{quoted}),
             "SELECT c.#{long}, sum(o.amount), sum(c.#{odd}) FROM orders o JOIN customers c " <>
               "ON o.customer_id = c.id GROUP BY c.#{long}"
           ) == "0"

    assert SimplePG.scalar!(
             pg,
             "SELECT count(*) FROM pg_attribute WHERE attrelid = " <>
               "'trellis.#{JoinWorkload.hidden_join(pg)}'::regclass AND attname LIKE 'kkk%~%'"
           ) == "2"
  end

  test "an ALTER while paused is built on RESUME, the join first", %{trellis: t, pg: pg} do
    {:ok, _} = Trellis.define(t, @statement)
    converge!(t)
    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM region_revenue")

    {:ok, _} =
      Trellis.apply(t, "ALTER TRANSFORM region_revenue ADD COLUMN max(customers.name) AS who")

    assert {:ok, %Trellis.Status{status: :paused}} = Trellis.status(t, "region_revenue")
    SimplePG.query!(pg, "UPDATE customers SET name = 'z' || id WHERE id % 4 = 0")
    SimplePG.query!(pg, "UPDATE orders SET amount = amount + 1 WHERE id % 5 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM region_revenue")
    converge!(t)
    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "region_revenue")

    assert JoinWorkload.group_built_after_join?(pg)

    equal!(
      pg,
      "label, revenue, n, who",
      "SELECT regions.label, sum(orders.amount), count(*), max(customers.name) #{@join} " <>
        "WHERE orders.amount > 2 GROUP BY regions.label"
    )
  end
end
