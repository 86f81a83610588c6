defmodule Trellis.Test.GroupWorkload do
  @moduledoc false

  # Random writes for the GROUP BY differential tests, over a table whose
  # group columns have few values (so groups fill, empty and refill) and may
  # be NULL: multi-row inserts, updates that move rows between groups, in
  # and out of WHERE clauses and to new extremes, key changes, deletes that
  # take a group's extreme away, small transactions, and from writer 0 an
  # occasional TRUNCATE. A statement that fails (a key collision) rolls back
  # and is skipped: the source is whatever committed.

  alias Trellis.Test.{SimplePG, Writers}

  @key_space 4_000

  @doc "Creates and fills the source table `facts` with `rows` rows."
  @spec create_source!(SimplePG.t(), pos_integer) :: term
  def create_source!(pg, rows \\ 800) do
    SimplePG.query!(pg, """
    CREATE TABLE facts (
      id bigint PRIMARY KEY,
      g1 int,
      g2 text,
      n numeric(12, 2),
      i int,
      f float8,
      ts timestamptz,
      b boolean,
      flag boolean,
      big bigint,
      u numeric
    );
    INSERT INTO facts
    SELECT g, nullif(g % 6, 5), CASE g % 4 WHEN 0 THEN NULL ELSE 'k' || g % 4 END,
           (g % 97) * 1.25, g % 1000, (g % 13) / 3.0, '2025-01-01'::timestamptz + g * interval '7 hours',
           CASE WHEN g % 9 = 0 THEN NULL ELSE g % 2 = 0 END, g % 3 <> 0,
           CASE g % 3 WHEN 0 THEN 9223372036854775807 - g WHEN 1 THEN -9223372036854775807 + g
                      ELSE g END,
           CASE WHEN g % 11 = 0 THEN NULL ELSE round(g / 7.0, g % 4) END
    FROM generate_series(1, #{rows}) g;
    """)
  end

  @doc """
  Runs `rounds` random writes on its own connection, seeded; the options
  `:until` and `:counter` are those of `Trellis.Test.Writers.repeat/3`.
  """
  @spec run(String.t(), non_neg_integer, integer, pos_integer, keyword) :: :ok
  def run(url, writer, seed, rounds, opts \\ []) do
    :rand.seed(:exsss, {seed, writer, 29})
    pg = SimplePG.connect!(url)
    truncate? = Keyword.get(opts, :truncate, writer == 0)

    Writers.repeat(rounds, opts, fn -> SimplePG.query(pg, statement(truncate?)) end)

    SimplePG.close(pg)
  end

  defp statement(truncate?) do
    case :rand.uniform(1000) do
      n when n <= 250 -> insert()
      n when n <= 450 -> update_values()
      n when n <= 600 -> move_groups()
      n when n <= 680 -> change_key()
      n when n <= 800 -> delete()
      n when n <= 880 -> toggle()
      n when n <= 997 -> "BEGIN; #{insert()}; #{move_groups()}; #{delete()}; COMMIT"
      _ when truncate? -> "TRUNCATE facts"
      _ -> insert()
    end
  end

  defp insert do
    rows =
      for _ <- 1..:rand.uniform(6) do
        "(#{:rand.uniform(@key_space)}, #{g1()}, #{g2()}, #{num()}, #{int()}, #{float()}, " <>
          "#{time()}, #{bool()}, #{bool()}, #{big()}, #{unconstrained()})"
      end

    "INSERT INTO facts VALUES #{Enum.join(rows, ", ")} ON CONFLICT (id) DO NOTHING"
  end

  defp update_values do
    set =
      Enum.random([
        "n = #{num()}",
        "i = #{int()}",
        "f = #{float()}",
        "ts = #{time()}",
        "b = #{bool()}",
        "n = n + 1, i = i - 1",
        "big = #{big()}",
        "u = #{unconstrained()}",
        "u = u * 2, big = big / 3",
        "ts = ts + interval '1 year'"
      ])

    "UPDATE facts SET #{set} WHERE id BETWEEN #{range(30)}"
  end

  defp move_groups do
    set =
      Enum.random(["g1 = #{g1()}", "g2 = #{g2()}", "g1 = #{g1()}, g2 = #{g2()}", "g1 = g1 + 1"])

    "UPDATE facts SET #{set} WHERE id BETWEEN #{range(25)}"
  end

  defp change_key do
    "UPDATE facts SET id = #{:rand.uniform(@key_space)} WHERE id = #{:rand.uniform(@key_space)}"
  end

  defp delete, do: "DELETE FROM facts WHERE id BETWEEN #{range(20)}"

  defp toggle, do: "UPDATE facts SET flag = NOT flag, n = -n WHERE id BETWEEN #{range(40)}"

  defp range(width) do
    lo = :rand.uniform(@key_space)
    "#{lo} AND #{lo + :rand.uniform(width)}"
  end

  defp g1, do: Enum.random(["NULL", "0", "1", "2", "3", "4", "#{:rand.uniform(8)}"])
  defp g2, do: Enum.random(["NULL", "'k1'", "'k2'", "'k3'", "''", "'ünï'"])
  defp num, do: Enum.random(["NULL", "0", "#{:rand.uniform(300)}.#{:rand.uniform(99)}", "-7.5"])
  defp int, do: Enum.random(["NULL", "#{:rand.uniform(2000)}", "-#{:rand.uniform(50)}", "0"])
  # Near both limits of bigint, so that sums leave its range.
  defp big do
    Enum.random([
      "NULL",
      "#{9_223_372_036_854_775_807 - :rand.uniform(1000)}",
      "#{-9_223_372_036_854_775_807 + :rand.uniform(1000)}",
      "#{:rand.uniform(100_000) - 50_000}"
    ])
  end

  # Display scales 0 to 4 (1.50 has scale 2), and now and then NaN.
  defp unconstrained do
    Enum.random([
      "NULL",
      "#{:rand.uniform(500)}",
      "#{:rand.uniform(500)}.5",
      "-#{:rand.uniform(500)}.50",
      "#{:rand.uniform(99)}.125",
      "0.0001",
      "'NaN'"
    ])
  end

  defp float, do: Enum.random(["NULL", "0.1", "#{:rand.uniform(100)}.25", "-1e10", "'-0'"])

  defp time do
    Enum.random(["NULL", "'2025-06-01 12:00:00+00'", "'1999-12-31 23:59:59.999999+05'", "now()"])
  end

  defp bool, do: Enum.random(["NULL", "true", "false"])
end
