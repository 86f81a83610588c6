defmodule Trellis.Compiled.DistinctLifecycleTest do
  # A statement with DISTINCT aggregates runs as a hidden grouping by its
  # groups and the distinct argument, a hidden grouping over that, and the
  # user's projection, and a user sees one transform: the definition as
  # written, self-check, PAUSE/RESUME and DROP on the one name, ALTER
  # refused with the fix. Over an empty table a whole-table statement has
  # its one row (count 0, sum NULL), as SQL gives. The DISTINCT forms that
  # are not compiled are refused by name with their fix, and create nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM part_suppliers FROM partsupp ps SELECT ps.brand, " <>
               "count(DISTINCT ps.supplier) AS suppliers, sum(DISTINCT ps.supplier) AS ids, " <>
               "sum(ps.qty) AS qty, avg(ps.qty) AS mean " <>
               "WHERE ps.qty > 0 GROUP BY ps.brand HAVING count(DISTINCT ps.supplier) > 1"
  @columns "brand, suppliers, ids, qty, mean"
  @query "SELECT brand, count(DISTINCT supplier), sum(DISTINCT supplier), sum(qty), avg(qty) " <>
           "FROM partsupp WHERE qty > 0 GROUP BY brand HAVING count(DISTINCT supplier) > 1"

  setup do
    %{url: url, pg: pg} = Database.open!("distinct_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE partsupp (id int PRIMARY KEY, brand text, supplier int, qty int);
    CREATE TABLE empty_t (id int PRIMARY KEY, k int, v numeric);
    INSERT INTO partsupp SELECT g, 'b' || (g % 9), CASE WHEN g % 13 = 0 THEN NULL ELSE g % 5 END,
      g % 40 FROM generate_series(1, 400) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  defp parts(pg) do
    SimplePG.query!(pg, "SELECT target_name FROM trellis.transforms ORDER BY id")
    |> Enum.map(&hd/1)
  end

  test "one transform: definition as written, writes followed, ALTER refused, DROP takes all",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "part_suppliers"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM part_suppliers", @query) == "0"

    assert [values, group, "part_suppliers"] = parts(pg)
    assert values =~ ~r/^__trellis_distinct_\d+$/ and group =~ ~r/^__trellis_group_\d+$/

    # The target's columns have the types PostgreSQL gives the statement.
    assert SimplePG.query!(pg, """
           SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
           WHERE attrelid = 'part_suppliers'::regclass AND attnum > 0 AND NOT attisdropped
             AND attname IN ('suppliers', 'ids', 'qty', 'mean') ORDER BY attname
           """) == [
             ["ids", "bigint"],
             ["mean", "numeric"],
             ["qty", "bigint"],
             ["suppliers", "bigint"]
           ]

    assert {:ok, [%Trellis.Definition{name: "part_suppliers", statement: shown, status: :live}]} =
             Trellis.definitions(t)

    assert shown =~ "count(DISTINCT ps.supplier) AS suppliers"
    assert shown =~ "HAVING count(DISTINCT ps.supplier) > 1"
    refute shown =~ "__trellis"

    # Brands gain and lose suppliers, one holds only NULL suppliers.
    SimplePG.query!(pg, """
    UPDATE partsupp SET supplier = supplier + 1 WHERE id % 7 = 0;
    UPDATE partsupp SET supplier = NULL WHERE brand = 'b3';
    DELETE FROM partsupp WHERE id % 11 = 0;
    UPDATE partsupp SET brand = NULL WHERE id % 17 = 0;
    INSERT INTO partsupp VALUES (5001, 'b9', 1, 3), (5002, 'b9', 1, 4), (5003, 'b9', 2, 0);
    """)

    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM part_suppliers", @query) == "0"

    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "count(DISTINCT ps.supplier) AS suppliers")) == 2

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "part_suppliers", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM part_suppliers")

    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms WHERE status = 'paused'") ==
             "3"

    SimplePG.query!(pg, "UPDATE partsupp SET supplier = 4 WHERE id % 5 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM part_suppliers")
    :ok = Trellis.request_backfill(t, "part_suppliers")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM part_suppliers", @query) == "0"

    assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
             Trellis.apply(t, "ALTER TRANSFORM part_suppliers ADD COLUMN max(ps.qty) AS m")

    assert message =~ "compiled from its DISTINCT aggregates"

    assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
             Trellis.apply(
               t,
               "ALTER TRANSFORM part_suppliers ADD COLUMN count(DISTINCT ps.qty) AS m"
             )

    assert message =~ "ALTER TRANSFORM cannot add or change a column with count(DISTINCT ...)"

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM part_suppliers")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM part_suppliers")
    assert parts(pg) == []
  end

  test "over an empty table, the one row counts 0 and sums NULL", %{trellis: t, pg: pg} do
    statement =
      "TRANSFORM empty_stats FROM empty_t e SELECT count(DISTINCT e.k) AS ks, " <>
        "sum(DISTINCT e.k) AS s, count(*) AS n, sum(e.v) AS total, avg(e.v) AS mean"

    query = "SELECT count(DISTINCT k), sum(DISTINCT k), count(*), sum(v), avg(v) FROM empty_t"
    columns = "ks, s, n, total, mean"
    assert {:ok, {:transform_defined, "empty_stats"}} = Trellis.define(t, statement)
    converge!(t)

    for write <- [
          "SELECT 1",
          "INSERT INTO empty_t VALUES (1, NULL, NULL), (2, NULL, 2.5)",
          "INSERT INTO empty_t VALUES (3, 7, 1), (4, 7, 1), (5, 8, NULL)",
          "DELETE FROM empty_t WHERE k = 7",
          "DELETE FROM empty_t"
        ] do
      SimplePG.query!(pg, write)
      converge!(t)
      assert differences(pg, "SELECT #{columns} FROM empty_stats", query) == "0", write
    end

    assert SimplePG.query!(pg, "SELECT #{columns} FROM empty_stats") == [
             ["0", nil, "0", nil, nil]
           ]
  end

  test "DISTINCT forms that are not compiled are refused by name and create nothing",
       %{trellis: t, pg: pg} do
    cases = [
      {"TRANSFORM r FROM partsupp SELECT brand, count(DISTINCT supplier) AS a, " <>
         "count(DISTINCT qty) AS b GROUP BY brand", :unsupported,
       "a transform keeps aggregates over the distinct values of one argument only"},
      {"TRANSFORM r FROM partsupp SELECT brand, max(DISTINCT qty) AS m GROUP BY brand",
       :unsupported, "DISTINCT does not change max's result; remove DISTINCT"},
      {"TRANSFORM r FROM partsupp p SELECT p.id WHERE p.qty > " <>
         "(SELECT count(DISTINCT supplier) FROM partsupp x WHERE x.brand = p.brand)",
       :unsupported, "count(DISTINCT ...) is not supported in a subquery"},
      {"TRANSFORM r FROM partsupp SELECT brand, qty, count(DISTINCT supplier) AS n " <>
         "GROUP BY brand", :validation, "must appear in the GROUP BY clause"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(t, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      refute message =~ "__trellis", message
      assert parts(pg) == []
      assert SimplePG.scalar!(pg, "SELECT to_regclass('r') IS NULL") == "t"
    end
  end
end
