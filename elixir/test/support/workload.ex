defmodule Trellis.Test.Workload do
  @moduledoc false

  # Random writes for the differential tests: inserts (multi-row), updates of
  # values (moving rows in and out of WHERE clauses), key changes, deletes,
  # small transactions, and, from writer 0 only, an occasional TRUNCATE.
  # Statements that fail (a key collision) roll back and are simply skipped:
  # the source is whatever committed, and the targets must match it.

  alias Trellis.Test.{SimplePG, Writers}

  @key_space 3_000

  @doc "The source table the workload writes."
  def create_source!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE items (
      id bigint PRIMARY KEY,
      name text,
      amount numeric(12, 2),
      at timestamptz,
      doc jsonb,
      flag boolean
    );
    INSERT INTO items
    SELECT g, 'item ' || g, (g % 97) * 1.25, '2025-01-01'::timestamptz + g * interval '37 minutes',
           CASE WHEN g % 5 = 0 THEN NULL ELSE jsonb_build_object('k', g % 7, 'tags', jsonb_build_array(g)) END,
           CASE WHEN g % 11 = 0 THEN NULL ELSE g % 2 = 0 END
    FROM generate_series(1, 600) g;
    """)
  end

  @doc """
  Runs `rounds` random writes on its own connection, seeded; the options
  `:until` and `:counter` are those of `Trellis.Test.Writers.repeat/3`.
  """
  def run(url, writer, seed, rounds, opts \\ []) do
    :rand.seed(:exsss, {seed, writer, 17})
    pg = SimplePG.connect!(url)
    truncate? = Keyword.get(opts, :truncate, writer == 0)

    Writers.repeat(rounds, opts, fn -> SimplePG.query(pg, statement(truncate?)) end)

    SimplePG.close(pg)
  end

  defp statement(truncate?) do
    case :rand.uniform(100) do
      n when n <= 25 -> insert()
      n when n <= 50 -> update_values()
      n when n <= 58 -> change_key()
      n when n <= 70 -> delete()
      n when n <= 85 -> toggle()
      n when n <= 99 -> "BEGIN; #{insert()}; #{update_values()}; #{delete()}; COMMIT"
      _ when truncate? -> "TRUNCATE items"
      _ -> insert()
    end
  end

  defp insert do
    rows =
      for _ <- 1..:rand.uniform(6) do
        id = :rand.uniform(@key_space)
        "(#{id}, #{text()}, #{amount()}, #{time()}, #{doc()}, #{flag()})"
      end

    "INSERT INTO items VALUES #{Enum.join(rows, ", ")} ON CONFLICT (id) DO NOTHING"
  end

  defp update_values do
    lo = :rand.uniform(@key_space)
    hi = lo + :rand.uniform(40)

    set =
      Enum.random([
        "name = #{text()}",
        "amount = #{amount()}",
        "at = #{time()}",
        "doc = #{doc()}",
        "flag = #{flag()}",
        "amount = amount + 1, name = name || 'x'"
      ])

    "UPDATE items SET #{set} WHERE id BETWEEN #{lo} AND #{hi}"
  end

  defp change_key do
    id = :rand.uniform(@key_space)
    "UPDATE items SET id = #{:rand.uniform(@key_space)} WHERE id = #{id}"
  end

  defp delete do
    lo = :rand.uniform(@key_space)
    "DELETE FROM items WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(15)}"
  end

  defp toggle do
    lo = :rand.uniform(@key_space)
    "UPDATE items SET flag = NOT flag, amount = amount * -1 WHERE id BETWEEN #{lo} AND #{lo + 30}"
  end

  defp text do
    Enum.random(["NULL", "'a'", "'b''quote'", "'ünï'", "'item #{:rand.uniform(999)}'", "''"])
  end

  defp amount do
    Enum.random([
      "NULL",
      "0",
      "#{:rand.uniform(200)}.#{:rand.uniform(99)}",
      "-#{:rand.uniform(50)}"
    ])
  end

  defp time do
    Enum.random(["NULL", "'2025-06-01 12:00:00+00'", "now()", "'1999-12-31 23:59:59.999999+05'"])
  end

  defp doc do
    Enum.random(["NULL", "'{}'", ~s('{"k": #{:rand.uniform(9)}}'), ~s('[1, "x", null]')])
  end

  defp flag, do: Enum.random(["NULL", "true", "false"])

  @doc "Rows that differ between `target` and `query`, both ways."
  def differences(pg, target, query) do
    SimplePG.scalar!(pg, """
    SELECT count(*) FROM ((TABLE #{target} EXCEPT ALL #{query})
                          UNION ALL (#{query} EXCEPT ALL TABLE #{target})) d
    """)
    |> String.to_integer()
  end
end
