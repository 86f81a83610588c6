defmodule Trellis.Test.PartitionWorkload do
  @moduledoc false

  # Random writes over a list-partitioned `orders` (one partition per
  # region), half through the parent and half naming a partition: inserts,
  # value updates (in and out of the WHERE), updates that move a row to
  # another region (through the parent only: PostgreSQL refuses it when the
  # statement names the partition), deletes and small transactions.
  # Statements that fail (a key collision, a region with no partition at the
  # moment, a partition that was detached) roll back and are skipped: the
  # source is whatever committed, and the target must match it.

  alias Trellis.Test.{SimplePG, Writers}

  @key_space 2_000
  @regions 0..4

  @doc "orders, partitioned by region: partitions for regions 0 to 3 (4 comes later)."
  def create_source!(pg) do
    partitions =
      for r <- 0..3 do
        "CREATE TABLE orders_p#{r} PARTITION OF orders FOR VALUES IN (#{r});"
      end

    SimplePG.query!(pg, """
    CREATE TABLE orders (
      id bigint NOT NULL,
      region int NOT NULL,
      amount numeric(12, 2),
      note text,
      PRIMARY KEY (id, region)
    ) PARTITION BY LIST (region);
    #{Enum.join(partitions, "\n")}
    INSERT INTO orders
    SELECT g, g % 4, (g % 53) * 1.5, 'order ' || g FROM generate_series(1, 800) g;
    """)
  end

  @doc "Makes orders_p4 as a table with rows, then attaches it as region 4's partition."
  def attach!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE orders_p4 (LIKE orders);
    INSERT INTO orders_p4 SELECT g, 4, (g % 31) * 2.5, 'late ' || g FROM generate_series(1, 300) g;
    ALTER TABLE orders ATTACH PARTITION orders_p4 FOR VALUES IN (4);
    """)
  end

  @doc "Detaches region 1's partition: its rows leave orders."
  def detach!(pg), do: SimplePG.query!(pg, "ALTER TABLE orders DETACH PARTITION orders_p1")

  @doc """
  Runs `rounds` random writes on its own connection, seeded by (`seed`,
  `writer`), adding one to `counter` after each. Returns how many committed.
  """
  @spec run(String.t(), pos_integer, integer, pos_integer, :counters.counters_ref() | nil) ::
          non_neg_integer
  def run(url, writer, seed, rounds, counter) do
    Writers.run(url, {seed, writer, 29}, rounds, &statement/0, counter)
  end

  defp statement do
    case :rand.uniform(100) do
      n when n <= 20 -> insert(table())
      n when n <= 40 -> update_values(table())
      n when n <= 50 -> move_region()
      n when n <= 65 -> delete(table())
      n when n <= 85 -> "BEGIN; #{insert(table())}; #{update_values(table())}; COMMIT"
      _ -> "BEGIN; #{delete(table())}; #{insert(table())}; COMMIT"
    end
  end

  # {table to name, region its rows must have (nil: any)}
  defp table do
    if :rand.uniform(2) == 1 do
      {"orders", nil}
    else
      r = Enum.random(@regions)
      {"orders_p#{r}", r}
    end
  end

  defp region(nil), do: Enum.random(@regions)
  defp region(r), do: r

  defp insert({name, r}) do
    rows =
      for _ <- 1..:rand.uniform(5) do
        "(#{:rand.uniform(@key_space)}, #{region(r)}, #{amount()}, #{note()})"
      end

    "INSERT INTO #{name} VALUES #{Enum.join(rows, ", ")} ON CONFLICT DO NOTHING"
  end

  defp update_values({name, _}) do
    lo = :rand.uniform(@key_space)
    set = Enum.random(["amount = #{amount()}", "note = #{note()}", "amount = amount + 7"])
    "UPDATE #{name} SET #{set} WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(30)}"
  end

  defp move_region do
    id = :rand.uniform(@key_space)
    "UPDATE orders SET region = #{Enum.random(@regions)} WHERE id = #{id}"
  end

  defp delete({name, _}) do
    lo = :rand.uniform(@key_space)
    "DELETE FROM #{name} WHERE id BETWEEN #{lo} AND #{lo + :rand.uniform(10)}"
  end

  defp amount, do: Enum.random(["NULL", "0", "#{:rand.uniform(90)}.#{:rand.uniform(99)}"])
  defp note, do: Enum.random(["NULL", "'a'", "'ünï'", "'n#{:rand.uniform(99)}'"])
end
