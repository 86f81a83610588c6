defmodule Trellis.Chains.NullableKeysTest do
  # A transform over a target whose key may hold NULL (spec/engine.md
  # "Chains", "A key that may be NULL"): a GROUP BY's NULL group, and a
  # fan-out join's missing outer side. The downstream is keyed by that key
  # too, so it takes UNIQUE NULLS NOT DISTINCT instead of a primary key
  # (which refuses NULL: the first build could never end), and matches keys
  # NULL-safely, so the NULL group's row follows its group. Under random
  # writes with NULLs on every key, each target equals its query.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}
  import Trellis.Test.Targets

  @moduletag :port
  @moduletag timeout: 300_000

  # name, definition, the query its target must equal (key columns first);
  # the GROUP BY's own columns are compared by name in assert_equal/3 (its
  # target holds hidden state too)
  @totals {"totals", "TRANSFORM totals FROM w SELECT g, sum(v) AS s, count(*) AS n GROUP BY g",
           "SELECT g, sum(v), count(*) FROM w GROUP BY g"}
  @transforms [
    {"doubled", "TRANSFORM doubled FROM totals SELECT s * 2 AS d WHERE n > 1",
     "SELECT g, sum(v) * 2 FROM w GROUP BY g HAVING count(*) > 1"},
    {"with_parts",
     "TRANSFORM with_parts FROM w LEFT JOIN parts p ON p.w_id = w.id SELECT w.v, p.label",
     "SELECT w.id, p.id, w.v, p.label FROM w LEFT JOIN parts p ON p.w_id = w.id"},
    {"labels", "TRANSFORM labels FROM with_parts SELECT upper(label) AS big",
     "SELECT w.id, p.id, upper(p.label) FROM w LEFT JOIN parts p ON p.w_id = w.id"}
  ]

  setup do
    %{url: url, pg: pg} = Database.open!("nullable_keys")

    SimplePG.query!(pg, """
    CREATE TABLE w (id int PRIMARY KEY, g int, v int);
    CREATE TABLE parts (id int PRIMARY KEY, w_id int, label text);
    CREATE INDEX ON w (g);
    CREATE INDEX ON parts (w_id);
    INSERT INTO w SELECT i, CASE WHEN i % 4 = 0 THEN NULL ELSE i % 5 END, i FROM generate_series(1, 200) i;
    INSERT INTO parts SELECT i, i % 150, 'p' || i FROM generate_series(1, 120) i;
    """)

    %{url: url, pg: pg}
  end

  defp assert_equal(t, pg, context) do
    assert_all_equal(t, pg, @transforms, context)
    {_, _, query} = @totals
    assert differences(pg, "SELECT g, s, n FROM totals", query) == "0", "totals (#{context})"
  end

  test "downstreams of NULL keys build, and follow NULL keys under random writes",
       %{url: url, pg: pg} do
    {t, _} = Trellis.Test.Handles.fleet!(url, [staging: true, drain_threads: 2], [])
    define_all!(t, [@totals | @transforms])
    assert_equal(t, pg, "after the first builds")

    # The NULL group is a row of both targets, and each downstream is keyed
    # UNIQUE NULLS NOT DISTINCT.
    assert SimplePG.scalar!(pg, "SELECT count(*) FROM doubled WHERE g IS NULL") == "1"

    for name <- ["doubled", "labels"] do
      assert SimplePG.scalar!(
               pg,
               "SELECT string_agg(contype::text, '') FROM pg_constraint " <>
                 "WHERE conrelid = 'public.#{name}'::regclass"
             ) == "u"
    end

    :rand.seed(:exsss, {7, 11, 13})

    for round <- 1..40 do
      id = :rand.uniform(260)
      g = Enum.random(["NULL", "1", "2", "3"])

      SimplePG.query!(pg, """
      INSERT INTO w VALUES (#{id}, #{g}, #{round}) ON CONFLICT (id) DO UPDATE SET g = EXCLUDED.g;
      UPDATE parts SET w_id = #{Enum.random(["NULL", "#{:rand.uniform(200)}"])}
        WHERE id = #{:rand.uniform(120)};
      DELETE FROM w WHERE id = #{:rand.uniform(260)};
      """)
    end

    assert_equal(t, pg, "after 40 rounds of writes")
    Trellis.shutdown(t)
  end
end
