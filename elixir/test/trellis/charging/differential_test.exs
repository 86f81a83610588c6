defmodule Trellis.Charging.DifferentialTest do
  # A randomized differential run with poison: random inserts, updates and
  # deletes where about 1% of the rows written make an expression fail (a
  # division by zero, a value that does not fit a smallint) or the WHERE
  # fail. After convergence, every target row equals its definition except
  # exactly the (key, column) pairs reported in quarantine and the keys
  # reported held: no more and no fewer.
  use ExUnit.Case, async: true

  alias Trellis.Test.{Database, SimplePG}

  @moduletag :port
  @moduletag :capture_log
  @moduletag timeout: 300_000

  @definition "TRANSFORM mixed FROM items SELECT a AS a, 100 / b AS inv, c::smallint AS small " <>
                "WHERE 10 / (d + 1) IS NOT NULL"

  # The definition computed without failing, as text: a value that fails
  # is '<fails>', which no target value equals; `held` where the WHERE fails.
  @safe """
  SELECT id, d = -1 AS held, a::text AS a,
         CASE WHEN b <> 0 THEN (100 / b)::text ELSE '<fails>' END AS inv,
         CASE WHEN c BETWEEN -32768 AND 32767 THEN c::smallint::text ELSE '<fails>' END AS small
  FROM items
  """

  setup do
    %{url: url, pg: pg} = Database.open!("charging_diff")

    SimplePG.query!(pg, """
    CREATE TABLE items (id int PRIMARY KEY, a int, b int NOT NULL, c int NOT NULL, d int NOT NULL);
    """)

    :ok = Trellis.migrate(Trellis.connect!(url: url))
    trellis = Trellis.connect!(url: url, staging: true, drain_threads: 2)
    %{trellis: trellis, pg: pg}
  end

  # One row's b, c, d: about 1% poison of one kind.
  defp values(rand) do
    {b, c, d} = {1 + :rand.uniform(9), :rand.uniform(1000), :rand.uniform(10) - 1}

    case rand do
      r when r < 0.004 -> {0, c, d}
      r when r < 0.007 -> {b, 40_000, d}
      r when r < 0.010 -> {b, c, -1}
      _ -> {b, c, d}
    end
  end

  defp row(id) do
    {b, c, d} = values(:rand.uniform())
    "(#{id}, #{:rand.uniform(100)}, #{b}, #{c}, #{d})"
  end

  defp write_round(pg, next_id) do
    inserts = for id <- next_id..(next_id + 39), do: row(id)
    SimplePG.query!(pg, "INSERT INTO items VALUES #{Enum.join(inserts, ", ")}")

    updates =
      for _ <- 1..40 do
        {b, c, d} = values(:rand.uniform())
        "(#{:rand.uniform(next_id + 39)}, #{b}, #{c}, #{d})"
      end

    SimplePG.query!(pg, """
    UPDATE items i SET b = u.b, c = u.c, d = u.d, a = i.a + 1
    FROM (VALUES #{Enum.join(Enum.uniq_by(updates, &hd(String.split(&1, ","))), ", ")})
      AS u(id, b, c, d)
    WHERE i.id = u.id
    """)

    deletes = for _ <- 1..5, do: :rand.uniform(next_id + 39)
    SimplePG.query!(pg, "DELETE FROM items WHERE id IN (#{Enum.join(deletes, ", ")})")
    next_id + 40
  end

  defp reported_quarantine(trellis) do
    Stream.unfold({:start, nil}, fn
      :done ->
        nil

      {_, cursor} ->
        {:ok, page} = Trellis.sample_quarantined(trellis, "mixed", limit: 97, cursor: cursor)
        {page.samples, if(page.next_cursor, do: {:more, page.next_cursor}, else: :done)}
    end)
    |> Enum.flat_map(& &1)
    |> MapSet.new(fn s -> {hd(s.key), s.target |> String.split(".") |> List.last()} end)
  end

  test "after random writes with ~1% poison, the differences are exactly what was charged",
       %{trellis: trellis, pg: pg} do
    :rand.seed(:exsss, {13, 13, String.to_integer(System.get_env("CHARGING_SEED", "13"))})
    # Some rows exist before the define, so the first build meets poison too.
    next_id = write_round(pg, 1)
    {:ok, _} = Trellis.define(trellis, @definition)
    Enum.reduce(1..40, next_id, fn _, id -> write_round(pg, id) end)

    assert :ok =
             Trellis.await_converged(trellis, Trellis.watermark_token!(trellis),
               timeout_ms: 120_000
             )

    # Held: exactly the keys whose WHERE fails now.
    held =
      pg
      |> SimplePG.query!("SELECT id FROM items WHERE d = -1 ORDER BY id")
      |> Enum.map(&hd/1)

    assert SimplePG.query!(pg, "SELECT key[1] FROM trellis.held_keys ORDER BY key[1]::int")
           |> Enum.map(&hd/1) == held

    assert {:ok, %Trellis.Status{held_keys: held_count}} = Trellis.status(trellis, "mixed")
    assert held_count == length(held)

    # Every other difference, per (key, column), between the target and the
    # definition.
    differences =
      pg
      |> SimplePG.query!("""
      WITH safe AS (#{@safe})
      SELECT coalesce(s.id, t.id)::text, x.col
      FROM safe s FULL JOIN mixed t ON t.id = s.id
      CROSS JOIN LATERAL (VALUES
        ('a', s.a IS DISTINCT FROM t.a::text),
        ('inv', s.inv IS DISTINCT FROM t.inv::text),
        ('small', s.small IS DISTINCT FROM t.small::text)) AS x(col, differs)
      WHERE x.differs AND NOT coalesce(s.held, false)
      """)
      |> MapSet.new(fn [id, col] -> {id, col} end)

    held_set = MapSet.new(held)

    reported =
      trellis
      |> reported_quarantine()
      |> MapSet.reject(fn {id, _} -> MapSet.member?(held_set, id) end)

    assert MapSet.size(reported) > 0
    assert MapSet.equal?(differences, reported)
    # The rows in quarantine hold NULL in their column.
    for {id, col} <- reported do
      assert SimplePG.scalar!(pg, "SELECT #{col} IS NULL FROM mixed WHERE id = #{id}") == "t"
    end

    assert %Trellis.Status{status: :live, drain_failure: nil} = Trellis.status!(trellis, "mixed")
  end
end
