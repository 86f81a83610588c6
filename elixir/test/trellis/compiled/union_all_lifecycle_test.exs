defmodule Trellis.Compiled.UnionAllLifecycleTest do
  # UNION ALL (spec/grammar.md section 13) through the port: the target
  # holds every branch's rows, each branch kept row by row; definitions/1
  # and the dump give the statement as written, status and self-check see
  # one transform, PAUSE/RESUME/DROP act on it, ALTER is refused with the
  # fix. Branches that disagree on a column's name or type, groupings,
  # subqueries, UNION without ALL and a keyless table are refused by name
  # with the fix, and create nothing.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 180_000

  @statement "TRANSFORM contacts FROM customers c SELECT c.name, c.email, c.score * 2 AS score " <>
               "WHERE c.active " <>
               "UNION ALL FROM suppliers s JOIN regions r ON s.region_id = r.id " <>
               "SELECT s.name, r.label || ':' || s.email AS email, s.rating AS score " <>
               "WHERE s.rating IS DISTINCT FROM 0 " <>
               "UNION ALL FROM customers c SELECT c.name, c.email, c.score AS score " <>
               "WHERE c.score > 40"
  @columns "name, email, score"
  @query "SELECT * FROM (SELECT c.name, c.email, c.score * 2 FROM customers c WHERE c.active " <>
           "UNION ALL SELECT s.name, r.label || ':' || s.email, s.rating " <>
           "FROM suppliers s JOIN regions r ON s.region_id = r.id " <>
           "WHERE s.rating IS DISTINCT FROM 0 " <>
           "UNION ALL SELECT c.name, c.email, c.score FROM customers c WHERE c.score > 40) q"

  setup do
    %{url: url, pg: pg} = Database.open!("union_all_lifecycle")

    SimplePG.query!(pg, """
    CREATE TABLE customers (id int PRIMARY KEY, name text, email text, score int, active boolean);
    CREATE TABLE regions (id int PRIMARY KEY, label text);
    CREATE TABLE suppliers (id int PRIMARY KEY, name text, email text, rating int,
                            region_id int REFERENCES regions);
    CREATE INDEX ON suppliers (region_id);
    CREATE TABLE keyless (name text, email text, score int);
    INSERT INTO customers SELECT g, 'c' || g, CASE WHEN g % 7 = 0 THEN NULL ELSE 'c' || g || '@x' END,
      CASE WHEN g % 11 = 0 THEN NULL ELSE g % 60 END, g % 3 <> 0 FROM generate_series(1, 200) g;
    INSERT INTO regions SELECT g, 'r' || g FROM generate_series(1, 5) g;
    INSERT INTO suppliers SELECT g, 's' || g, 's' || g || '@y', CASE WHEN g % 9 = 0 THEN NULL ELSE g % 4 END,
      1 + g % 5 FROM generate_series(1, 120) g;
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 1)
    %{trellis: trellis, pg: pg}
  end

  test "every branch's rows: definition as written, writes followed, ALTER refused, DROP",
       %{trellis: t, pg: pg} do
    assert {:ok, {:transform_defined, "contacts"}} = Trellis.define(t, @statement)
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM contacts", @query) == "0"

    expected = SimplePG.scalar!(pg, "SELECT count(*) FROM (#{@query}) q")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM contacts") == expected

    # One transform; its stages are hidden, and its columns typed as the
    # query types them.
    assert SimplePG.query!(
             pg,
             "SELECT target_name FROM trellis.transforms WHERE owner_id IS NULL"
           ) ==
             [["contacts"]]

    assert SimplePG.query!(pg, """
           SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
           WHERE attrelid = 'contacts'::regclass AND attnum > 0 AND NOT attisdropped
             AND attname IN ('name', 'email', 'score') ORDER BY attnum
           """) == [["name", "text"], ["email", "text"], ["score", "integer"]]

    assert {:ok, defs} = Trellis.definitions(t)

    assert [%Trellis.Definition{name: "contacts", statement: shown}] =
             Enum.filter(defs, &(&1.name == "contacts"))

    assert shown =~ "FROM customers AS c SELECT c.name AS name"
    assert shown =~ " UNION ALL FROM suppliers AS s JOIN regions AS r ON s.region_id = r.id"

    assert String.ends_with?(
             shown,
             "UNION ALL FROM customers AS c SELECT c.name AS name, " <>
               "c.email AS email, c.score AS score WHERE c.score > 40"
           )

    refute shown =~ "__trellis"
    refute shown =~ "trellis_u"

    {:ok, dump} = Trellis.dump_definitions_sql(t)
    assert length(String.split(dump, "UNION ALL FROM suppliers AS s")) == 2

    assert {:ok, %Trellis.Status{status: :live}} = Trellis.status(t, "contacts")

    # Rows move in and out of each branch's WHERE, a region's label changes
    # every supplier row under it, keys of both branches over customers
    # change, NULLs come and go.
    SimplePG.query!(pg, """
    UPDATE customers SET active = NOT active WHERE id % 5 = 0;
    UPDATE customers SET score = 50 WHERE id % 13 = 0;
    UPDATE customers SET email = NULL WHERE id % 17 = 0;
    DELETE FROM customers WHERE id % 19 = 0;
    INSERT INTO customers VALUES (1001, NULL, NULL, NULL, true), (1002, 'n', 'n@x', 45, false);
    UPDATE regions SET label = 'R' || id WHERE id IN (2, 3);
    UPDATE suppliers SET rating = 0 WHERE id % 6 = 0;
    UPDATE suppliers SET rating = NULL WHERE id % 10 = 0;
    DELETE FROM suppliers WHERE id % 23 = 0;
    """)

    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM contacts", @query) == "0"

    {:ok, %Trellis.SelfCheckJob{id: id}} = Trellis.self_check(t, "contacts", mode: :full)
    assert %{state: :done, report: %{outcome: :clean}} = await_self_check!(t, id)

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM contacts")
    SimplePG.query!(pg, "UPDATE customers SET score = score + 1 WHERE id % 4 = 0")
    SimplePG.query!(pg, "UPDATE suppliers SET rating = rating + 1 WHERE id % 4 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM contacts")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM contacts", @query) == "0"

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM contacts.score")
    SimplePG.query!(pg, "UPDATE customers SET score = score + 1 WHERE id % 3 = 0")
    {:ok, _} = Trellis.apply(t, "RESUME TRANSFORM contacts.score")
    converge!(t)
    assert differences(pg, "SELECT #{@columns} FROM contacts", @query) == "0"

    for alter <- [
          "ALTER TRANSFORM contacts ADD COLUMN c.id AS id",
          "ALTER TRANSFORM contacts DROP COLUMN score",
          "ALTER TRANSFORM contacts ALTER COLUMN score AS 1"
        ] do
      assert {:error, %Trellis.Error{code: :unsupported, message: message}} =
               Trellis.apply(t, alter)

      assert message =~ "ALTER TRANSFORM cannot change transform contacts", message
      assert message =~ "its UNION ALL", message
      assert message =~ "DROP TRANSFORM it and define it again", message
    end

    {:ok, _} = Trellis.apply(t, "PAUSE TRANSFORM contacts")
    {:ok, _} = Trellis.apply(t, "DROP TRANSFORM contacts")
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
    assert SimplePG.scalar!(pg, "SELECT to_regclass('contacts') IS NULL") == "t"
  end

  test "the forms Trellis cannot keep are refused by name with the fix, creating nothing",
       %{trellis: t, pg: pg} do
    cases = [
      {"TRANSFORM r FROM customers SELECT name, score UNION ALL FROM suppliers SELECT name, email",
       :unsupported,
       "column 2 of the UNION ALL branch at position 46 is named \"email\" where the first " <>
         "branch names it \"score\""},
      {"TRANSFORM r FROM customers SELECT name UNION ALL FROM suppliers SELECT name, email",
       :unsupported, "selects 2 columns and the first branch 1"},
      {"TRANSFORM r FROM customers SELECT name, score UNION ALL FROM suppliers SELECT name, " <>
         "email AS score", :unsupported,
       "column score of transform r is integer in the first branch and text in UNION ALL " <>
         "branch 2 (FROM suppliers): a target column has one type; cast it alike in every " <>
         "branch, as (email)::integer AS score"},
      {"TRANSFORM r FROM customers SELECT name UNION FROM suppliers SELECT name", :unsupported,
       "UNION (without ALL, which removes duplicate rows) is not supported: write UNION ALL"},
      {"TRANSFORM r FROM customers SELECT name EXCEPT FROM suppliers SELECT name", :unsupported,
       "INTERSECT and EXCEPT are not supported"},
      {"TRANSFORM r FROM customers SELECT name, count(*) AS n GROUP BY name " <>
         "UNION ALL FROM suppliers SELECT name, count(*) AS n GROUP BY name", :unsupported,
       "a grouping (GROUP BY, HAVING, DISTINCT or aggregates) in UNION ALL is not supported"},
      {"TRANSFORM r FROM customers SELECT name UNION ALL FROM suppliers SELECT DISTINCT name",
       :unsupported, "define the grouping as a transform, then UNION ALL FROM its target"},
      {"TRANSFORM r FROM customers c SELECT name UNION ALL FROM suppliers s SELECT name " <>
         "WHERE EXISTS (SELECT 1 FROM regions g WHERE g.id = s.region_id)", :unsupported,
       "a subquery in the WHERE of a UNION ALL branch is not supported"},
      {"TRANSFORM r FROM customers SELECT name UNION ALL FROM keyless SELECT name", :unsupported,
       "keyless, read by UNION ALL branch 2 (FROM keyless) of UNION ALL, has no primary key"},
      {"TRANSFORM r FROM customers SELECT name UNION ALL FROM suppliers SELECT nope AS name",
       :validation, "nope"},
      {"TRANSFORM r FROM customers SELECT name UNION ALL FROM suppliers SELECT random() AS name",
       :validation, "volatile"}
    ]

    for {statement, code, words} <- cases do
      assert {:error, %Trellis.Error{code: ^code, message: message}} =
               Trellis.define(t, statement),
             statement

      assert message =~ words, "#{statement}: #{message}"
      refute message =~ "__trellis", message
      refute message =~ "trellis_u", message
      assert SimplePG.scalar!(pg, "SELECT count(*) FROM trellis.transforms") == "0"
      assert SimplePG.scalar!(pg, "SELECT to_regclass('r') IS NULL") == "t"
    end
  end
end
